/**
 * Receiving a dataset through this process, in one place: the direct upload (validated while it
 * streams) and the local driver's upload URL (stored as sent, checked by the analysis). Both take
 * an upload slot, stream the body into an object writer, commit only after the last byte passed,
 * publish the delivery and count it. A rejected or failed body never changes the stored object.
 *
 * A direct upload's body is received one of three ways, chosen by its declared length:
 * - `inline`: under 8 MiB, validated and hashed on the request's thread, chunk by chunk;
 * - `batched`: larger (or chunked), read into 1 MiB batches whose writes overlap reading, each
 *   written batch handed (transferred) to the validator thread;
 * - `spool`: 32 MiB or more, declared, bound for a local file: copied into the file by the local
 *   store (read in place, 1 MiB at a time, no copy of its own). At most `MAX_SPOOLING` at a time,
 *   further large uploads taking the batched path (set when the runtime's own pipe did the copy
 *   and held 20–25 MB per body; the copy holds about 1 MiB since session P). One of them at a
 *   time (`MAX_CHECKED_HERE`) is validated and hashed on the request's thread, each MiB while its
 *   write is under way: this thread's code is warm from the uploads before, where the validator
 *   thread is started afresh for a large upload and runs its first hundreds of MB unoptimized
 *   (docs/performance.md, session U). The other's file is read back by the validator thread as
 *   it grows.
 *
 * The request's log line says where the checks ran: `checks` is `request` or `validator`.
 */
import { createHash } from "node:crypto";
import { sha256Hex } from "../crypto/sha256.ts";
import { ApiError } from "../http/errors.ts";
import { ServiceError } from "../errors.ts";
import type { DeliveryHub } from "../deliveries.ts";
import type { Metrics } from "../metrics.ts";
import { DatasetValidator, type ValidationSummary } from "../pipeline/mod.ts";
import type { ObjectInfo, ObjectStore } from "../storage/object_store.ts";
import { datasetKey, StorageError } from "../storage/object_store.ts";
import type { OffThreadResult } from "./off_thread_validator.ts";
import { OffThreadValidator, ValidatorThread } from "./off_thread_validator.ts";
import type { BatchPool } from "./receive.ts";
import { receiveBody, receiveIntoFile, tooLargeError } from "./receive.ts";
import { UploadSlots } from "./upload_slots.ts";

/** The batch buffer of a body without a declared length, or declared this long or longer. */
const BATCH_BYTES = 1024 * 1024;

/**
 * The batch buffer for a body of `declared` bytes (0: unknown): a small body gets one just
 * larger than itself, so that it is read in one buffer and a tiny upload does not allocate (and
 * zero) a whole MiB, which cost more than the rest of its request.
 */
export function batchBytesFor(declared: number): number {
  return declared > 0 && declared < BATCH_BYTES ? Math.max(4096, declared + 1) : BATCH_BYTES;
}

/** How long after an upload ended the service still counts as `busy`. */
const BUSY_AFTER_MS = 50;

/** Bodies declared at least this long are validated on the validator thread. */
const OFF_THREAD_MIN_BYTES = 8 * 1024 * 1024;
/** Bodies declared at least this long, bound for a local file, are piped into it. */
const SPOOL_MIN_BYTES = 32 * 1024 * 1024;
const MAX_SPOOLING = 2;
/**
 * Piped uploads checked on the request's thread at once; the others are checked on the validator
 * thread. One: the checks and the hash of a body take as much of the thread as the body's reading.
 */
const MAX_CHECKED_HERE = 1;

export interface IngestOptions {
  store: ObjectStore;
  metrics: Metrics;
  deliveries: DeliveryHub;
  /** Largest body accepted, in bytes. */
  maxUploadBytes: number;
  /** A body that sends nothing this long is abandoned with 408. */
  bodyIdleTimeoutSeconds: number;
  /** After its first minute, a body slower than this on average is abandoned with 408; 0 off. */
  bodyMinBytesPerSecond: number;
  /** Bodies streaming at once; one more gets 503. 0: no cap. */
  maxConcurrentUploads: number;
}

/** Bodies up to this size are hashed at the end, in TypeScript (one call, no Buffers). */
const SMALL_HASH_BYTES = 16 * 1024;

/**
 * SHA-256 of a body seen chunk by chunk: a small body is kept and hashed at once by
 * `sha256Hex` (a microsecond or two; each `node:crypto` call costs several under Deno), a larger
 * one streams through `node:crypto`, faster per byte.
 */
class UploadHash {
  #small: Uint8Array | null = new Uint8Array(0);
  #stream: ReturnType<typeof createHash> | null = null;

  update(chunk: Uint8Array): void {
    const small = this.#small;
    if (small !== null && small.length + chunk.length <= SMALL_HASH_BYTES) {
      const joined = new Uint8Array(small.length + chunk.length);
      joined.set(small);
      joined.set(chunk, small.length);
      this.#small = joined;
      return;
    }
    if (this.#stream === null) {
      this.#stream = createHash("sha256");
      if (small !== null && small.length > 0) this.#stream.update(small);
      this.#small = null;
    }
    this.#stream.update(chunk);
  }

  digest(): string {
    return this.#stream === null ? sha256Hex(this.#small!) : this.#stream.digest("hex");
  }
}

/** The checks and the hash of a body on this thread, chunk by chunk (`inline`, or a pipe's). */
class LocalChecks {
  readonly #validator = new DatasetValidator();
  readonly #hash = new UploadHash();

  /** Throws the `ValidationError` of the first problem. */
  push(chunk: Uint8Array): void {
    this.#validator.push(chunk);
    this.#hash.update(chunk);
  }

  finish(): OffThreadResult {
    return { summary: this.#validator.finish(), sha256: this.#hash.digest() };
  }
}

/** A stored direct upload. */
export interface StoredUpload {
  bytes: number;
  summary: ValidationSummary;
  /** SHA-256 of the stored bytes, hex. */
  sha256: string;
  info: ObjectInfo;
}

/** Where a dataset goes: the organization and experiment it belongs to. */
export interface DatasetTarget {
  orgId: string;
  experimentId: string;
}

/** Fields the caller's request log line gains (receive mode, bytes in). */
export type IngestLogFields = Record<string, unknown>;

/** Milliseconds from `from` to `to`, to a tenth, for a log line. */
function elapsed(from: number, to: number): number {
  return Math.round((to - from) * 10) / 10;
}

/** When a stored delivery's steps ended (`performance.now()`); the catalog row's ends now. */
interface StepMarks {
  started: number;
  /** The body's last byte handed to storage. */
  received: number;
  /** The checks and the hash done, when they ran with the upload. */
  checked?: number;
  committed: number;
}

/** Adds a stored delivery's step times to its log line (see docs/operations.md). */
function logSteps(fields: IngestLogFields, marks: StepMarks): void {
  fields.receive_ms = elapsed(marks.started, marks.received);
  if (marks.checked !== undefined) fields.check_ms = elapsed(marks.received, marks.checked);
  fields.commit_ms = elapsed(marks.checked ?? marks.received, marks.committed);
  fields.record_ms = elapsed(marks.committed, performance.now());
}

/** The error code a refused or failed delivery is counted under. */
export function rejectionReason(error: unknown): string {
  if (error instanceof ServiceError) return error.code;
  return error instanceof StorageError ? "storage_error" : "internal_error";
}

/** 413 before reading a body whose declared length is over the limit. */
export function checkDeclaredLength(req: Request, maxBytes: number): void {
  const declared = req.headers.get("content-length");
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) > maxBytes) {
    req.body?.cancel().catch(() => {});
    throw tooLargeError(maxBytes);
  }
}

export class Ingest {
  readonly #o: IngestOptions;
  readonly #slots: UploadSlots;
  readonly #validator = new ValidatorThread();
  #spooling = 0;
  /** Piped uploads being checked on this thread now. */
  #checkingHere = 0;
  #lastDone = -Infinity;

  constructor(options: IngestOptions) {
    this.#o = options;
    this.#slots = new UploadSlots(options.maxConcurrentUploads);
  }

  /** Upload bodies streaming now. */
  get inProgress(): number {
    return this.#slots.inUse;
  }

  /**
   * True while bodies stream or one ended in the last `BUSY_AFTER_MS`: a burst of uploads,
   * whose requests should not wait behind background work.
   */
  get busy(): boolean {
    return this.#slots.inUse > 0 || performance.now() - this.#lastDone < BUSY_AFTER_MS;
  }

  /**
   * A direct upload: refuses a declared length over the limit (413) and multipart bodies (400)
   * before reading, then validates the body while it streams to storage and commits it.
   */
  async upload(
    req: Request,
    target: DatasetTarget,
    logFields: IngestLogFields,
  ): Promise<StoredUpload> {
    try {
      checkDeclaredLength(req, this.#o.maxUploadBytes);
      const contentType = req.headers.get("content-type")?.toLowerCase() ?? "";
      if (contentType.startsWith("multipart/")) {
        req.body?.cancel().catch(() => {});
        throw new ApiError(
          "multipart_not_supported",
          "multipart/form-data is not accepted: send the raw CSV bytes as the request body (curl --data-binary @file.csv)",
        );
      }
      const release = this.#slots.take(req);
      try {
        return await this.#receiveUpload(req, target, logFields);
      } finally {
        release();
        this.#lastDone = performance.now();
      }
    } catch (error) {
      this.reject(error);
      throw error;
    }
  }

  /**
   * A PUT to a local upload URL whose signature the caller verified: stores the body as sent
   * (its checks run with the analysis). `exactBytes`: the length the URL was signed for.
   */
  async put(
    req: Request,
    key: string,
    target: DatasetTarget,
    exactBytes: number | undefined,
    logFields: IngestLogFields,
  ): Promise<ObjectInfo> {
    const { store, metrics, deliveries, maxUploadBytes } = this.#o;
    try {
      checkDeclaredLength(req, maxUploadBytes);
      const declared = req.headers.get("content-length");
      if (exactBytes !== undefined && declared !== null && Number(declared) !== exactBytes) {
        throw new ApiError(
          "invalid_signature",
          `This upload URL only accepts a body of ${exactBytes} bytes; Content-Length is ${declared}`,
        );
      }
      const release = this.#slots.take(req);
      try {
        const writer = await store.createWriter(key);
        let bytes = 0;
        const started = performance.now();
        try {
          const bound = exactBytes !== undefined && exactBytes < maxUploadBytes;
          const otherLength = (received: string) =>
            new ApiError(
              "invalid_signature",
              `This upload URL only accepts a body of ${exactBytes} bytes; received ${received}`,
            );
          bytes = await receiveBody(req.body, writer, {
            ...this.#bodyLimits(),
            batchBytes: batchBytesFor(Number(declared ?? 0)),
            maxBytes: bound ? exactBytes : maxUploadBytes,
            onChunk: (chunk) => metrics.bytesReceived.inc({ route: "presigned_put" }, chunk.length),
          }).catch((error) => {
            // Past the bound size (a body without a Content-Length): another length, not the limit.
            const past = bound && error instanceof ServiceError &&
              error.code === "payload_too_large";
            throw past ? otherLength("more") : error;
          });
          if (exactBytes !== undefined && bytes !== exactBytes) throw otherLength(String(bytes));
          const received = performance.now();
          const info = await writer.commit();
          const committed = performance.now();
          logFields.bytes_in = bytes;
          metrics.uploadsStored.inc({ route: "presigned_put" });
          await deliveries.deliver({
            ...target,
            key,
            info,
            validated: false,
            source: "presigned_put",
          });
          logSteps(logFields, { started, received, committed });
          return info;
        } catch (error) {
          logFields.bytes_in = bytes;
          await writer.abort();
          throw error;
        }
      } finally {
        release();
      }
    } catch (error) {
      req.body?.cancel().catch(() => {});
      this.reject(error);
      throw error;
    }
  }

  /** Counts a refused or failed delivery (also for refusals made before the body, by routes). */
  reject(error: unknown): void {
    this.#o.metrics.uploadsRejected.inc({ reason: rejectionReason(error) });
  }

  /** Ends the validator thread (shutdown). A later upload would start a new one. */
  close(): void {
    this.#validator.stop();
  }

  #bodyLimits() {
    return {
      maxBytes: this.#o.maxUploadBytes,
      idleTimeoutMs: this.#o.bodyIdleTimeoutSeconds * 1000,
      minBytesPerSecond: this.#o.bodyMinBytesPerSecond,
    };
  }

  /** Streams, checks and stores the body of an upload that holds a slot. */
  async #receiveUpload(
    req: Request,
    target: DatasetTarget,
    logFields: IngestLogFields,
  ): Promise<StoredUpload> {
    const { store, metrics, deliveries } = this.#o;
    const key = datasetKey(target.orgId, target.experimentId);
    const declared = Number(req.headers.get("content-length") ?? 0);
    const offThread = declared >= OFF_THREAD_MIN_BYTES;
    const writer = await store.createWriter(key);
    const spool = declared >= SPOOL_MIN_BYTES && this.#spooling < MAX_SPOOLING && writer.spool &&
        req.body !== null
      ? writer.spool
      : null;
    if (spool) this.#spooling++;
    logFields.receive = spool ? "spool" : offThread ? "batched" : "inline";
    let remote: OffThreadValidator | null = null;
    /** A piped upload's checks and hash, when they run on this thread. */
    let checks: LocalChecks | null = null;
    let counted = 0;
    const started = performance.now();
    /** When the body's last byte was in: the checks' lag and the commit are timed from it. */
    let received = started;
    try {
      let bytes: number;
      let result: OffThreadResult;
      if (spool) {
        const stop = new AbortController();
        if (this.#checkingHere < MAX_CHECKED_HERE) {
          this.#checkingHere++;
          checks = new LocalChecks();
        } else {
          remote = OffThreadValidator.follow(this.#validator, spool.path, (e) => stop.abort(e));
        }
        logFields.checks = checks ? "request" : "validator";
        try {
          bytes = await receiveIntoFile(req.body, spool, {
            ...this.#bodyLimits(),
            signal: stop.signal,
            expectedBytes: declared,
            see: checks
              ? (chunk) => {
                try {
                  checks!.push(chunk);
                } catch (error) {
                  stop.abort(error);
                }
              }
              : undefined,
          });
        } finally {
          counted = await spool.size().catch(() => 0);
        }
        received = performance.now();
        result = checks ? checks.finish() : await remote!.finish(bytes);
      } else {
        let pool: BatchPool | null = null;
        const batched = offThread
          ? new OffThreadValidator(
            this.#validator,
            (buffer) => pool?.give(buffer),
            (error) => pool?.fail(error),
          )
          : null;
        remote = batched;
        logFields.checks = batched ? "validator" : "request";
        const inline = batched ? null : new LocalChecks();
        bytes = await receiveBody(req.body, writer, {
          ...this.#bodyLimits(),
          batchBytes: batchBytesFor(declared),
          onChunk(chunk) {
            counted += chunk.length;
            if (inline) inline.push(chunk);
            else batched!.check();
          },
          onBatch: batched
            ? (batch, batches) => {
              pool = batches;
              batched.push(batch);
            }
            : undefined,
        });
        received = performance.now();
        result = inline ? inline.finish() : await batched!.finish();
      }
      logFields.bytes_in = bytes;
      const checked = performance.now();
      const info = await writer.commit();
      const committed = performance.now();
      metrics.uploadsStored.inc({ route: "upload" });
      // Stored: the catalog row is written (and awaited) before the 201; its failure is logged.
      await deliveries.deliver({
        ...target,
        key,
        info,
        validated: true,
        sha256: result.sha256,
        hasDimensions: result.summary.dimensions.length > 0,
        source: "upload",
      });
      logSteps(logFields, { started, received, checked, committed });
      return { bytes, summary: result.summary, sha256: result.sha256, info };
    } catch (error) {
      logFields.bytes_in = counted;
      remote?.abort();
      await writer.abort();
      throw error;
    } finally {
      if (spool) this.#spooling--;
      if (checks) this.#checkingHere--;
      metrics.bytesReceived.inc({ route: "upload" }, counted);
    }
  }
}
