/**
 * Streams a request body into an object writer: counts bytes against the limit, lets a check see
 * every chunk, batches chunks into large writes that overlap with reading, and abandons a body
 * that stops arriving. Nothing is committed here: the caller commits once every check passed,
 * and on any error the writer is aborted so the previous object stays as it was.
 */
import { ApiError, megabytes } from "../http/errors.ts";
import type { FileSpool, ObjectWriter } from "../storage/object_store.ts";
import { StorageError } from "../storage/object_store.ts";

export interface ReceiveOptions {
  /** Largest body accepted, in bytes. */
  maxBytes: number;
  /** A body that sends nothing for this long is abandoned with 408. */
  idleTimeoutMs: number;
  /**
   * A body whose average rate falls below this, once `minRateAfterMs` have passed, is abandoned
   * with 408: a client trickling bytes just inside the idle timeout cannot hold an upload open
   * for days. 0 or absent: no minimum.
   */
  minBytesPerSecond?: number;
  /** When the minimum rate starts to apply; default 60 s. */
  minRateAfterMs?: number;
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

/**
 * Reads a body into caller-owned buffers: a BYOB reader fills them in place (request bodies
 * served by Deno are byte streams), any other stream is copied from its own chunks.
 */
interface BodySource {
  /** Fills `into` from its start; answers the bytes read (0 at the end) and the buffer back. */
  read(into: Uint8Array): Promise<{ bytes: Uint8Array; done: boolean }>;
  cancel(): Promise<void>;
}

function byobSource(body: ReadableStream<Uint8Array>): BodySource | null {
  let reader: ReadableStreamBYOBReader;
  try {
    reader = body.getReader({ mode: "byob" });
  } catch {
    return null; // not a byte stream
  }
  return {
    async read(into) {
      const { value, done } = await reader.read(into);
      // The view's buffer was transferred and the answer carries it back; none means the
      // stream was cancelled (the idle timer) and the buffer is gone with it.
      if (value === undefined) throw new Error("The request body was cancelled");
      return { bytes: value, done };
    },
    cancel: () => reader.cancel(),
  };
}

function copySource(body: ReadableStream<Uint8Array>): BodySource {
  const reader = body.getReader();
  let rest: Uint8Array | null = null;
  return {
    async read(into) {
      let chunk = rest;
      rest = null;
      while (chunk === null || chunk.length === 0) {
        const result = await reader.read();
        if (result.done) return { bytes: into.subarray(0, 0), done: true };
        chunk = result.value;
      }
      const taken = Math.min(chunk.length, into.length);
      into.set(chunk.subarray(0, taken));
      if (taken < chunk.length) rest = chunk.subarray(taken);
      return { bytes: into.subarray(0, taken), done: false };
    },
    cancel: () => reader.cancel(),
  };
}

/**
 * 408s close the connection after the answer: the rest of the body may still come, and the
 * connection cannot carry another request before it has.
 */
function idleError(idleTimeoutMs: number): ApiError {
  return new ApiError(
    "body_timeout",
    `The request body stopped arriving for ${
      Math.round(idleTimeoutMs / 1000)
    } s; the upload was abandoned`,
    { connection: "close" },
  );
}

function slowError(bytes: number, elapsedMs: number, minBytesPerSecond: number): ApiError {
  return new ApiError(
    "body_timeout",
    `The request body arrived at ${
      Math.floor(bytes * 1000 / elapsedMs)
    } bytes/s, below the minimum of ${minBytesPerSecond} bytes/s; the upload was abandoned`,
    { connection: "close" },
  );
}

/** 413: the body is over the upload limit (the connection is closed after the answer). */
export function tooLargeError(maxBytes: number): ApiError {
  return new ApiError(
    "payload_too_large",
    `The file is larger than the limit of ${maxBytes} bytes (${megabytes(maxBytes)} MB)`,
    { connection: "close" },
  );
}

/**
 * Most bytes asked of one read. Deno serves a BYOB read of a request body through a buffer of the
 * view's size: 1 MiB views raised the peak RSS of 20 concurrent 20 MB uploads from about 150 MB
 * to about 390 MB (and slowed them), while 64 KiB views read as fast as the body arrives.
 */
const READ_BYTES = 64 * 1024;
/** Bodies read into a batch buffer of at most this size are read with a plain reader. */
const SMALL_BODY_BYTES = 64 * 1024;

/** Answers the number of bytes received. Throws ApiError (413, 408…) or the check's error. */
export async function receiveBody(
  body: ReadableStream<Uint8Array> | null,
  writer: ObjectWriter,
  options: ReceiveOptions,
): Promise<number> {
  if (body === null) return 0;
  const batchBytes = options.batchBytes ?? 1024 * 1024;
  const pool = new BatchPool(batchBytes, options.maxBuffers ?? 8);
  // A small body arrives in a chunk or two: copying them costs less than setting up a BYOB
  // reader (tens of microseconds per request under Deno).
  const source = batchBytes <= SMALL_BODY_BYTES
    ? copySource(body)
    : byobSource(body) ?? copySource(body);
  let buffer = await pool.take();
  let filled = 0;
  let pending: Promise<void> | null = null;
  let total = 0;

  const written = async (data: Uint8Array) => {
    await writer.write(data);
    if (options.onBatch) options.onBatch(data, pool);
    else pool.give(data.buffer as ArrayBuffer);
  };

  const flush = async () => {
    if (pending) await pending;
    pending = null;
    if (filled === 0) return;
    pending = written(new Uint8Array(buffer, 0, filled));
    // Awaited later; marked handled now so an early failure elsewhere cannot orphan it.
    pending.catch(() => {});
    filled = 0;
    buffer = await pool.take();
  };

  // One timer for the whole body, not one per read: it only counts time spent waiting for the
  // client, and when the body has been silent too long it cancels the read in progress.
  let reading = false;
  let since = 0;
  let timedOut = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const watch = () => {
    const silent = reading ? performance.now() - since : 0;
    if (silent >= options.idleTimeoutMs) {
      timedOut = true;
      source.cancel().catch(() => {});
      return;
    }
    timer = setTimeout(watch, options.idleTimeoutMs - silent);
  };
  timer = setTimeout(watch, options.idleTimeoutMs);
  const timeout = () => idleError(options.idleTimeoutMs);

  const minRate = options.minBytesPerSecond ?? 0;
  const minRateAfter = options.minRateAfterMs ?? 60_000;
  const started = performance.now();

  try {
    while (true) {
      let result: { bytes: Uint8Array; done: boolean };
      reading = true;
      since = performance.now();
      try {
        result = await source.read(
          new Uint8Array(buffer, filled, Math.min(buffer.byteLength - filled, READ_BYTES)),
        );
      } catch {
        if (timedOut) throw timeout();
        // The client went away (or the connection broke) before the body ended.
        throw new ApiError("request_aborted", "The request body could not be read to its end");
      } finally {
        reading = false;
      }
      if (timedOut) throw timeout();
      const chunk = result.bytes;
      buffer = chunk.buffer as ArrayBuffer;
      if (result.done) break;
      total += chunk.length;
      if (minRate > 0) {
        const elapsed = performance.now() - started;
        if (elapsed > minRateAfter && total < minRate * elapsed / 1000) {
          throw slowError(total, elapsed, minRate);
        }
      }
      if (total > options.maxBytes) throw tooLargeError(options.maxBytes);
      options.onChunk?.(chunk);
      filled += chunk.length;
      if (filled === buffer.byteLength) await flush();
    }
    clearTimeout(timer);
    await flush();
    if (pending) await pending;
    return total;
  } catch (error) {
    clearTimeout(timer);
    await source.cancel().catch(() => {});
    if (pending) await (pending as Promise<void>).catch(() => {});
    throw error;
  }
}

/** Options of `receiveIntoFile`. */
export interface SpoolOptions {
  /** Largest body accepted, in bytes. */
  maxBytes: number;
  /** A body whose file has not grown for this long is abandoned with 408. */
  idleTimeoutMs: number;
  /** As in `ReceiveOptions`. */
  minBytesPerSecond?: number;
  /** As in `ReceiveOptions`; default 60 s. */
  minRateAfterMs?: number;
  /** Stops the body; its reason (a failed check) is what `receiveIntoFile` throws. */
  signal?: AbortSignal;
  /** How often the file's growth is looked at; default 50 ms. */
  tickMs?: number;
  /** Sees each chunk of the body while it is written (on this thread); aborts `signal` to refuse. */
  see?: (chunk: Uint8Array) => void;
  /** Told the file's size at each look while the body streams. */
  onSize?: (size: number) => void;
  /**
   * The body's declared length. Once the body ended, the file must hold exactly this many bytes:
   * the runtime's file sink can drop the error of its last write (seen with ENOSPC), so a file
   * that came out short is a storage failure, never a smaller dataset.
   */
  expectedBytes?: number;
}

/** Error codes of a connection, not of a file. */
const NETWORK_CODES = new Set(["ECONNRESET", "ECONNABORTED", "ENOTCONN", "EPIPE", "ETIMEDOUT"]);

/** A failed pipe: the file's error (ENOSPC, EIO…) is the store's; any other is the client's. */
function pipeFailure(error: unknown): Error {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string" && /^E[A-Z0-9]+$/.test(code) && !NETWORK_CODES.has(code)) {
    return new StorageError("Cannot write to local storage", { cause: error });
  }
  return new ApiError("request_aborted", "The request body could not be read to its end");
}

/**
 * Streams a body into a local temporary file (the spool's own copy, `FileSpool.pipeFrom`), while
 * a checker reads the file back (`OffThreadValidator.follow`). The file's growth,
 * looked at every `tickMs`, stands for the body's progress: the idle timeout, the minimum rate
 * and the size limit apply to it. Answers the file's final size; throws the abort reason, a
 * `StorageError` when the file failed, or `request_aborted` when the client went away.
 */
export async function receiveIntoFile(
  body: ReadableStream<Uint8Array> | null,
  spool: FileSpool,
  options: SpoolOptions,
): Promise<number> {
  if (body === null) return 0;
  const stop = new AbortController();
  const outer = options.signal;
  const relay = () => stop.abort(outer!.reason);
  if (outer?.aborted) relay();
  outer?.addEventListener("abort", relay, { once: true });
  const tickMs = options.tickMs ?? 50;
  const minRate = options.minBytesPerSecond ?? 0;
  const minRateAfter = options.minRateAfterMs ?? 60_000;
  const started = performance.now();
  let size = 0;
  let grewAt = started;
  let finished = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const look = async () => {
    try {
      const now = await spool.size();
      const at = performance.now();
      if (now > size) {
        size = now;
        grewAt = at;
      }
      options.onSize?.(size);
      if (size > options.maxBytes) stop.abort(tooLargeError(options.maxBytes));
      else if (at - grewAt >= options.idleTimeoutMs) stop.abort(idleError(options.idleTimeoutMs));
      else if (minRate > 0 && at - started > minRateAfter) {
        if (size < minRate * (at - started) / 1000) {
          stop.abort(slowError(size, at - started, minRate));
        }
      }
    } catch { /* the file went with a failed upload */ }
    if (!finished && !stop.signal.aborted) timer = setTimeout(look, tickMs);
  };
  timer = setTimeout(look, tickMs);
  try {
    await spool.pipeFrom(body, stop.signal, options.see);
  } catch (error) {
    if (stop.signal.aborted) throw stop.signal.reason;
    throw pipeFailure(error);
  } finally {
    finished = true;
    clearTimeout(timer);
    outer?.removeEventListener("abort", relay);
  }
  const total = await spool.size();
  if (total > options.maxBytes) throw tooLargeError(options.maxBytes);
  if (options.expectedBytes !== undefined && total !== options.expectedBytes) {
    throw new StorageError(
      `Only ${total} of the body's ${options.expectedBytes} bytes reached local storage`,
    );
  }
  return total;
}
