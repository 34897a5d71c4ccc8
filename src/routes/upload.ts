/**
 * `POST /api/v1/datasets/upload/?experiment_id=…` (spec 4.3): validates the CSV while it streams
 * to storage and commits only after the last byte passed every check.
 */
import { createHash } from "node:crypto";
import type { Ctx, RouteTable } from "../app.ts";
import { json } from "../app.ts";
import { ApiError } from "../http/errors.ts";
import { parseExperimentId } from "../http/experiment_id.ts";
import { datasetKey, StorageError } from "../storage/object_store.ts";
import { DatasetValidator } from "../pipeline/mod.ts";
import type { BatchPool } from "../ingest/receive.ts";
import { receiveBody, receiveIntoFile, tooLargeError } from "../ingest/receive.ts";
import type { OffThreadResult } from "../ingest/off_thread_validator.ts";
import { OffThreadValidator } from "../ingest/off_thread_validator.ts";

/** Bodies declared at least this long are validated on the worker thread. */
const OFF_THREAD_MIN_BYTES = 8 * 1024 * 1024;

/**
 * Bodies declared at least this long, bound for a local file, are piped into it by the runtime
 * (see `receiveIntoFile`), at most `MAX_SPOOLING` at a time. The runtime's pipe holds about
 * 20–25 MB of chunks per body while it runs, whatever the body's size; the cap keeps that out
 * of the memory of many concurrent uploads, which take the batched path instead.
 */
const SPOOL_MIN_BYTES = 32 * 1024 * 1024;
const MAX_SPOOLING = 2;
let spooling = 0;

/** The error code a refused or failed delivery is counted under. */
export function rejectionReason(error: unknown): string {
  if (error instanceof ApiError) return error.code;
  return error instanceof StorageError ? "storage_error" : "internal_error";
}

/** The one `experiment_id` of the query string (400 when missing, repeated or invalid). */
export function queryExperimentId(url: URL): string {
  const values = url.searchParams.getAll("experiment_id");
  if (values.length > 1) {
    throw new ApiError("invalid_experiment_id", "Give experiment_id once in the query string");
  }
  return parseExperimentId(values[0]);
}

/** 413 before reading a body whose declared length is over the limit. */
export function checkDeclaredLength(req: Request, maxBytes: number): void {
  const declared = req.headers.get("content-length");
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) > maxBytes) {
    req.body?.cancel().catch(() => {});
    throw tooLargeError(maxBytes);
  }
}

async function upload(ctx: Ctx): Promise<Response> {
  const { config, metrics } = ctx.deps;
  const principal = ctx.auth();
  const experimentId = queryExperimentId(ctx.url);
  ctx.logFields.experiment_id = experimentId;
  try {
    checkDeclaredLength(ctx.req, config.maxUploadBytes);
    const contentType = ctx.req.headers.get("content-type")?.toLowerCase() ?? "";
    if (contentType.startsWith("multipart/")) {
      ctx.req.body?.cancel().catch(() => {});
      throw new ApiError(
        "multipart_not_supported",
        "multipart/form-data is not accepted: send the raw CSV bytes as the request body (curl --data-binary @file.csv)",
      );
    }
    const release = ctx.deps.uploadSlots?.take(ctx.req);
    try {
      return await receive(ctx, principal.orgId, experimentId);
    } finally {
      release?.();
    }
  } catch (error) {
    metrics.uploadsRejected.inc({ reason: rejectionReason(error) });
    throw error;
  }
}

/** Streams, checks and stores the body of an upload that holds a slot. */
async function receive(ctx: Ctx, orgId: string, experimentId: string): Promise<Response> {
  const { config, store, metrics, deliveries } = ctx.deps;
  const key = datasetKey(orgId, experimentId);
  // Large bodies are validated on a worker thread while this one reads, hashes and writes.
  const declared = Number(ctx.req.headers.get("content-length") ?? 0);
  const offThread = declared >= OFF_THREAD_MIN_BYTES;
  const writer = await store.createWriter(key);
  // A large body of declared length bound for a local file is copied into it by the runtime,
  // and the worker reads the file back as it grows: no JavaScript touches the bytes on this
  // thread. (A chunked body is counted here, chunk by chunk, against the limit.)
  const spool = declared >= SPOOL_MIN_BYTES && spooling < MAX_SPOOLING && writer.spool &&
      ctx.req.body !== null
    ? writer.spool
    : null;
  if (spool) spooling++;
  ctx.logFields.receive = spool ? "spool" : offThread ? "batched" : "inline";
  let remote: OffThreadValidator | null = null;
  let counted = 0;
  try {
    let bytes: number;
    let result: OffThreadResult;
    if (spool) {
      const stop = new AbortController();
      remote = OffThreadValidator.follow(spool.path, (error) => stop.abort(error));
      try {
        bytes = await receiveIntoFile(ctx.req.body, spool, {
          maxBytes: config.maxUploadBytes,
          idleTimeoutMs: config.bodyIdleTimeoutSeconds * 1000,
          minBytesPerSecond: config.bodyMinBytesPerSecond,
          signal: stop.signal,
          expectedBytes: declared,
        });
      } finally {
        counted = await spool.size().catch(() => 0);
      }
      result = await remote.finish(bytes);
    } else {
      const hash = createHash("sha256");
      let pool: BatchPool | null = null;
      const batched = offThread
        ? new OffThreadValidator((buffer) => pool?.give(buffer), (error) => pool?.fail(error))
        : null;
      remote = batched;
      const inline = batched ? null : new DatasetValidator();
      bytes = await receiveBody(ctx.req.body, writer, {
        maxBytes: config.maxUploadBytes,
        idleTimeoutMs: config.bodyIdleTimeoutSeconds * 1000,
        minBytesPerSecond: config.bodyMinBytesPerSecond,
        onChunk(chunk) {
          counted += chunk.length;
          if (inline) {
            inline.push(chunk);
            hash.update(chunk);
          } else batched!.check();
        },
        onBatch: batched
          ? (batch, batches) => {
            pool = batches;
            batched.push(batch);
          }
          : undefined,
      });
      result = inline
        ? { summary: inline.finish(), sha256: hash.digest("hex") }
        : await batched!.finish();
    }
    ctx.logFields.bytes_in = bytes;
    const { summary, sha256 } = result;
    const info = await writer.commit();
    metrics.uploadsStored.inc({ route: "upload" });
    deliveries.publish({ orgId, experimentId, key, info, validated: true, source: "upload" });
    return json(ctx, {
      success: true,
      size_mb: bytes / 1048576,
      experiment_id: experimentId,
      message:
        `Dataset stored for experiment ${experimentId}: ${summary.rows} rows, ${bytes} bytes`,
      size_bytes: bytes,
      rows: summary.rows,
      sha256,
      etag: info.etag,
    }, 201);
  } catch (error) {
    ctx.logFields.bytes_in = counted;
    remote?.abort();
    await writer.abort();
    throw error;
  } finally {
    if (spool) spooling--;
    metrics.bytesReceived.inc({ route: "upload" }, counted);
  }
}

export const uploadRoutes: RouteTable = [
  ["POST", "/api/v1/datasets/upload/", upload],
];
