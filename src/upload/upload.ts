/**
 * Receiving a dataset through this process, one way whatever its size. The direct upload
 * (`POST /api/v1/datasets/upload/`) and the local driver's upload URL (`PUT /storage/*key`) are
 * each admitted under the organization's storage quota (`quota.ts`), take an upload slot (of the
 * organization's share and of the service's, `slots.ts`) and run the body through the same
 * steps:
 *
 *     body → limitSource (size, idle, minimum rate, quota; then the CSV checks + SHA-256)
 *          → writeBody (the store's writer) → commit → catalog → publish
 *
 * The body's one stage is a byte source: the bytes land once, in the buffers `writeBody` reads
 * them into, and the limits and the checks see them there (`_byte_stage.ts`). Nothing is committed
 * before the last byte passed every check; on any error the writer is aborted, so a refused or
 * failed delivery never changes the stored object. The upload URL skips the checks: the analysis
 * checks a two-step delivery as it reads it. The request's log line gains `bytes_in` and each
 * step's time: `receive_ms` (the body through its stage into storage), `commit_ms`,
 * `record_ms` (the catalog row); see docs/operations.md.
 *
 * @module
 */
import { ServiceError } from "../errors.ts";
import type { DeliveryHub } from "../deliveries.ts";
import type { Metrics } from "../metrics.ts";
import type { ValidationSummary } from "../pipeline/mod.ts";
import type { ObjectInfo, ObjectStore } from "../storage/object_store.ts";
import { datasetKey, StorageError, writeBody } from "../storage/object_store.ts";
import { type CheckedDataset, datasetChecks } from "./checks.ts";
import { limitSource, tooLargeError } from "./limits.ts";
import type { QuotaHold, StorageQuotas } from "./quota.ts";
import { UploadSlots } from "./slots.ts";

export interface UploadsOptions {
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
  /** Bodies one organization streams at once; one more gets 429. 0 (the default): no cap. */
  maxConcurrentUploadsPerOrg?: number;
  /** The organizations' storage quotas; absent: none. */
  quotas?: Pick<StorageQuotas, "admit">;
}

/** The request an upload belongs to, as the upload sees it (a route's context is one). */
export interface UploadCall {
  req: Request;
  /** Fields of the request's log line. */
  logFields: Record<string, unknown>;
  /** Asks the client to close the connection after the answer. */
  closeConnection(): void;
}

/** Where a dataset goes: the organization and experiment it belongs to. */
export interface DatasetTarget {
  orgId: string;
  experimentId: string;
}

/** A stored direct upload. */
export interface StoredUpload {
  bytes: number;
  summary: ValidationSummary;
  /** SHA-256 of the stored bytes, hex. */
  sha256: string;
  info: ObjectInfo;
}

/**
 * The answer to a body this large asks the client to close the connection (`Connection: close`,
 * which HTTP/1.1 clients honour; the runtime does not close it itself, and HTTP/2 ignores the
 * header): the runtime keeps the buffers such a body grew, up to about 20 MB for a 200 MB upload,
 * for as long as the connection stays open, so a client keeping it idle would keep that memory in
 * the service. A new connection costs such a client next to nothing.
 */
export const CLOSE_AFTER_BODY_BYTES = 1024 * 1024;

/** The buffers a body is read into (`writeBody`'s): this size, or a byte more than a shorter
 * declared length (the end of the body is then seen in the same buffer). */
const BUFFER_BYTES = 1024 * 1024;

/** A body declared this long or longer is read a whole buffer at a time, others 128 KiB at a time:
 * the runtime holds what a read asks for on each connection (docs/performance.md, "Ideas tried"). */
const WHOLE_READS_FROM_BYTES = 32 * 1024 * 1024;

/** A body declared this long or longer, or of no declared length, is read in place when it is a
 * byte stream; a shorter one came whole with the headers, or nearly (`byteSource`). */
const IN_PLACE_FROM_BYTES = 64 * 1024;

function bufferBytesFor(req: Request): number {
  return Math.min(BUFFER_BYTES, (contentLength(req) ?? BUFFER_BYTES) + 1);
}

/** How long after an upload ended the service still counts as `busy`. */
const BUSY_AFTER_MS = 50;

/** A stored body. */
interface Received {
  info: ObjectInfo;
  bytes: number;
  /** What the checks found, when the body went through them. */
  checked?: CheckedDataset;
}

/** One way in: what differs between the direct upload and the upload URL. */
interface Way {
  route: "upload" | "presigned_put";
  key: string;
  target: DatasetTarget;
  /** Largest body accepted, and the error past it (default `tooLargeError`). */
  maxBytes: number;
  /** The length the body will have (declared, or bound by the URL); null: unknown. */
  expectedBytes: number | null;
  tooLarge?: () => Error;
  /** Refuses the request before its body is read (throws). */
  refuseEarly?: (req: Request) => void;
  /** Refuses a body of `bytes` once it ended (throws). */
  refuseLength?: (bytes: number) => void;
}

/** The error code a refused or failed delivery is counted under. */
export function rejectionReason(error: unknown): string {
  if (error instanceof ServiceError) return error.code;
  return error instanceof StorageError ? "storage_error" : "internal_error";
}

/** The request's declared body length; null when it declares none (or a malformed one). */
function contentLength(req: Request): number | null {
  const declared = req.headers.get("content-length");
  return declared !== null && /^\d+$/.test(declared) ? Number(declared) : null;
}

/** Admits every upload: no quota applies. */
const NO_QUOTA: QuotaHold = { see() {}, stored() {}, release() {} };

function refuseMultipart(req: Request): void {
  const contentType = req.headers.get("content-type")?.toLowerCase() ?? "";
  if (contentType.startsWith("multipart/")) {
    throw new ServiceError(
      "multipart_not_supported",
      "multipart/form-data is not accepted: send the raw CSV bytes as the request body (curl --data-binary @file.csv)",
    );
  }
}

/** Milliseconds from `from` to `to`, to a tenth, for a log line. */
function elapsed(from: number, to: number): number {
  return Math.round((to - from) * 10) / 10;
}

export class Uploads {
  readonly #o: UploadsOptions;
  readonly #slots: UploadSlots;
  #lastDone = -Infinity;

  constructor(options: UploadsOptions) {
    this.#o = options;
    this.#slots = new UploadSlots({
      max: options.maxConcurrentUploads,
      maxPerOrg: options.maxConcurrentUploadsPerOrg,
    });
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
   * before reading, then checks the body while it streams to storage and commits it.
   */
  async upload(call: UploadCall, target: DatasetTarget): Promise<StoredUpload> {
    const { info, bytes, checked } = await this.#receive(call, {
      route: "upload",
      key: datasetKey(target.orgId, target.experimentId),
      target,
      maxBytes: this.#o.maxUploadBytes,
      expectedBytes: contentLength(call.req),
      refuseEarly: refuseMultipart,
    });
    return { bytes, summary: checked!.summary, sha256: checked!.sha256, info };
  }

  /**
   * A PUT to a local upload URL whose signature the caller verified: stores the body as sent
   * (its checks run with the analysis). `exactBytes`: the length the URL was signed for.
   */
  async put(
    call: UploadCall,
    key: string,
    target: DatasetTarget,
    exactBytes?: number,
  ): Promise<ObjectInfo> {
    const max = this.#o.maxUploadBytes;
    const otherLength = (length: string) =>
      new ServiceError(
        "invalid_signature",
        `This upload URL only accepts a body of ${exactBytes} bytes; ${length}`,
      );
    // Past the bound size (a body without a Content-Length): another length, not the limit.
    const bound = exactBytes !== undefined && exactBytes < max;
    const { info } = await this.#receive(call, {
      route: "presigned_put",
      key,
      target,
      maxBytes: bound ? exactBytes : max,
      expectedBytes: contentLength(call.req) ?? exactBytes ?? null,
      tooLarge: bound ? () => otherLength("received more") : undefined,
      refuseEarly(req) {
        const declared = req.headers.get("content-length");
        if (exactBytes !== undefined && declared !== null && Number(declared) !== exactBytes) {
          throw otherLength(`Content-Length is ${declared}`);
        }
      },
      refuseLength(bytes) {
        if (exactBytes !== undefined && bytes !== exactBytes) {
          throw otherLength(`received ${bytes}`);
        }
      },
    });
    return info;
  }

  /**
   * A delivery refused before its body was read, by a route (an upload URL's signature): counted,
   * the body cancelled, the connection closed after a large one.
   */
  refuse(call: UploadCall, error: unknown): void {
    call.req.body?.cancel().catch(() => {});
    this.#o.metrics.uploadsRejected.inc({ reason: rejectionReason(error) });
    if ((contentLength(call.req) ?? 0) >= CLOSE_AFTER_BODY_BYTES) call.closeConnection();
  }

  /**
   * The refusals before the body, the quota, the slot, the stage; counts what came in and how
   * it ended.
   */
  async #receive(call: UploadCall, way: Way): Promise<Received> {
    const { req } = call;
    const received = { bytes: 0 };
    try {
      if ((contentLength(req) ?? 0) > this.#o.maxUploadBytes) {
        throw tooLargeError(this.#o.maxUploadBytes);
      }
      way.refuseEarly?.(req);
      const quota = await this.#o.quotas?.admit(way.target, way.expectedBytes) ?? NO_QUOTA;
      try {
        const release = this.#slots.take(req, way.target.orgId, {
          declaredBytes: way.expectedBytes,
          received,
        });
        try {
          return await this.#store(call, way, received, quota);
        } finally {
          release();
          this.#lastDone = performance.now();
        }
      } finally {
        quota.release();
      }
    } catch (error) {
      this.refuse(call, error);
      throw error;
    } finally {
      call.logFields.bytes_in = received.bytes;
      if (received.bytes > 0) {
        this.#o.metrics.bytesReceived.inc({ route: way.route }, received.bytes);
      }
      if (received.bytes >= CLOSE_AFTER_BODY_BYTES) call.closeConnection();
    }
  }

  /** body → limits → checks → the store's writer → commit → catalog → publish. */
  async #store(
    call: UploadCall,
    way: Way,
    received: { bytes: number },
    quota: QuotaHold,
  ): Promise<Received> {
    const { store, metrics, deliveries } = this.#o;
    const writer = await store.createWriter(way.key);
    const started = performance.now();
    try {
      const checks = way.route === "upload" ? datasetChecks() : null;
      const limited = limitSource(call.req.body ?? ReadableStream.from([]), {
        maxBytes: way.maxBytes,
        tooLarge: way.tooLarge,
        idleTimeoutMs: this.#o.bodyIdleTimeoutSeconds * 1000,
        minBytesPerSecond: this.#o.bodyMinBytesPerSecond,
        onBytes: (bytes) => received.bytes += bytes,
        admit: way.expectedBytes === null ? (total) => quota.see(total) : undefined,
        readBytes: (way.expectedBytes ?? 0) >= WHOLE_READS_FROM_BYTES ? BUFFER_BYTES : 128 * 1024,
        inPlace: (way.expectedBytes ?? Infinity) >= IN_PLACE_FROM_BYTES,
        inner: checks?.hooks,
      });
      await writeBody(limited, writer, bufferBytesFor(call.req));
      way.refuseLength?.(received.bytes);
      const checked = await checks?.result;
      const stored = performance.now();
      const info = await writer.commit();
      quota.stored(info.size);
      const committed = performance.now();
      metrics.uploadsStored.inc({ route: way.route });
      // Stored: the catalog row is written (and awaited) before the answer; its failure is logged.
      await deliveries.deliver({
        ...way.target,
        key: way.key,
        info,
        validated: checked !== undefined,
        sha256: checked?.sha256,
        hasDimensions: checked ? checked.summary.dimensions.length > 0 : undefined,
        source: way.route,
      });
      Object.assign(call.logFields, {
        receive_ms: elapsed(started, stored),
        commit_ms: elapsed(stored, committed),
        record_ms: elapsed(committed, performance.now()),
      });
      return { info, bytes: received.bytes, checked };
    } catch (error) {
      await writer.abort();
      throw error;
    }
  }
}
