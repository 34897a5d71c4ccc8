/**
 * Streams a request body into an object writer: counts bytes against the limit, lets a check see
 * every chunk, batches chunks into large writes that overlap with reading, and abandons a body
 * that stops arriving. Nothing is committed here: the caller commits once every check passed,
 * and on any error the writer is aborted so the previous object stays as it was.
 */
import { ApiError } from "../http/errors.ts";
import type { ObjectWriter } from "../storage/object_store.ts";

export interface ReceiveOptions {
  /** Largest body accepted, in bytes. */
  maxBytes: number;
  /** A body that sends nothing for this long is abandoned with 408. */
  idleTimeoutMs: number;
  /** Sees every chunk before it is stored; throws to refuse the body. */
  onChunk?: (chunk: Uint8Array) => void;
  /** Size of the batched writes; default 4 MiB. */
  batchBytes?: number;
}

/** Answers the number of bytes received. Throws ApiError (413, 408…) or the check's error. */
export async function receiveBody(
  body: ReadableStream<Uint8Array> | null,
  writer: ObjectWriter,
  options: ReceiveOptions,
): Promise<number> {
  if (body === null) return 0;
  const batchBytes = options.batchBytes ?? 4 * 1024 * 1024;
  const reader = body.getReader();
  // Two buffers take turns: one fills while the other is being written.
  const buffers = [new Uint8Array(batchBytes), new Uint8Array(batchBytes)];
  let turn = 0;
  let batch = buffers[0];
  let filled = 0;
  let pending: Promise<void> | null = null;
  let total = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const flush = async () => {
    if (pending) await pending;
    if (filled === 0) return;
    const data = batch.subarray(0, filled);
    pending = writer.write(data);
    turn ^= 1;
    batch = buffers[turn];
    filled = 0;
  };

  const idle = () =>
    new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new ApiError(
              "body_timeout",
              `The request body stopped arriving for ${
                Math.round(options.idleTimeoutMs / 1000)
              } s; the upload was abandoned`,
            ),
          ),
        options.idleTimeoutMs,
      );
    });

  try {
    while (true) {
      let result: ReadableStreamReadResult<Uint8Array>;
      try {
        result = await Promise.race([reader.read(), idle()]);
      } catch (error) {
        if (error instanceof ApiError) throw error;
        // The client went away (or the connection broke) before the body ended.
        throw new ApiError("request_aborted", "The request body could not be read to its end");
      } finally {
        clearTimeout(timer);
      }
      if (result.done) break;
      const chunk = result.value;
      total += chunk.length;
      if (total > options.maxBytes) {
        throw new ApiError(
          "payload_too_large",
          `The file is larger than the limit of ${options.maxBytes} bytes (${
            (options.maxBytes / 1048576).toFixed(0)
          } MB)`,
          { connection: "close" },
        );
      }
      options.onChunk?.(chunk);
      if (chunk.length >= batchBytes) {
        await flush();
        if (pending) await pending;
        pending = writer.write(chunk);
        continue;
      }
      if (filled + chunk.length > batchBytes) await flush();
      batch.set(chunk, filled);
      filled += chunk.length;
    }
    await flush();
    if (pending) await pending;
    return total;
  } catch (error) {
    clearTimeout(timer);
    await reader.cancel().catch(() => {});
    if (pending) await (pending as Promise<void>).catch(() => {});
    throw error;
  }
}
