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
  /**
   * Takes each batch after it was written; the batch's buffer then belongs to the callee, which
   * hands it back through `BatchPool.give` when done (the off-thread validator does so).
   */
  onBatch?: (batch: Uint8Array, pool: BatchPool) => void;
  /** Size of the batched writes; default 1 MiB. */
  batchBytes?: number;
  /** Most batch buffers alive at once; default 8. */
  maxBuffers?: number;
}

/** A bounded set of reusable batch buffers. */
export class BatchPool {
  readonly size: number;
  #free: ArrayBuffer[] = [];
  #allocated = 0;
  #max: number;
  #waiting: { resolve: (buffer: ArrayBuffer) => void; reject: (error: Error) => void }[] = [];
  #failed: Error | null = null;

  constructor(size: number, max: number) {
    this.size = size;
    this.#max = max;
  }

  /** A free buffer, waiting for one to come back when all are in use. */
  take(): ArrayBuffer | Promise<ArrayBuffer> {
    if (this.#failed) return Promise.reject(this.#failed);
    const free = this.#free.pop();
    if (free) return free;
    if (this.#allocated < this.#max) {
      this.#allocated++;
      return new ArrayBuffer(this.size);
    }
    return new Promise((resolve, reject) => this.#waiting.push({ resolve, reject }));
  }

  give(buffer: ArrayBuffer): void {
    const waiter = this.#waiting.shift();
    if (waiter) waiter.resolve(buffer);
    else this.#free.push(buffer);
  }

  /** Whoever waits for a buffer, now or later, gets `error` instead. */
  fail(error: Error): void {
    this.#failed ??= error;
    for (const waiter of this.#waiting.splice(0)) waiter.reject(error);
  }
}

/** Answers the number of bytes received. Throws ApiError (413, 408…) or the check's error. */
export async function receiveBody(
  body: ReadableStream<Uint8Array> | null,
  writer: ObjectWriter,
  options: ReceiveOptions,
): Promise<number> {
  if (body === null) return 0;
  const pool = new BatchPool(options.batchBytes ?? 1024 * 1024, options.maxBuffers ?? 8);
  const reader = body.getReader();
  let batch = new Uint8Array(await pool.take());
  let filled = 0;
  let pending: Promise<void> | null = null;
  let total = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const written = async (data: Uint8Array) => {
    await writer.write(data);
    if (options.onBatch) options.onBatch(data, pool);
    else pool.give(data.buffer as ArrayBuffer);
  };

  const flush = async () => {
    if (pending) await pending;
    pending = null;
    if (filled === 0) return;
    pending = written(batch.subarray(0, filled));
    // Awaited later; marked handled now so an early failure elsewhere cannot orphan it.
    pending.catch(() => {});
    filled = 0;
    batch = new Uint8Array(await pool.take());
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
      let chunk = result.value;
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
      while (chunk.length > 0) {
        const room = batch.length - filled;
        const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
        batch.set(part, filled);
        filled += part.length;
        chunk = chunk.subarray(part.length);
        if (filled === batch.length) await flush();
      }
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
