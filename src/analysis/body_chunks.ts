/**
 * Reads a stored delivery's body for the analysis, whose readers are done with a chunk when they
 * ask for the next one (`CsvAggregator.push` and `DatasetValidator.push` keep nothing of it but
 * what they copy).
 *
 * A byte stream (a file of the local driver) is read `READ_BYTES` at a time into two buffers that
 * take turns, the next read under way while the current chunk is read: nothing is allocated per
 * chunk, and the disk's part of each read overlaps the reading of the one before; `cancel` frees
 * the buffers.
 * Any other stream (an S3 body, bytes already in memory) is read chunk by chunk as it comes.
 */
import { largeBuffer, releaseBuffers } from "../buffers.ts";

/**
 * Bytes asked for at once from a byte stream. The event loop turns at each read's end, and the
 * service's requests are served on the same thread: with 1 MiB reads (parsed in 10 ms and more)
 * requests waited several times longer during an analysis than before; each turn also costs the
 * reading about a millisecond on a busy two-core machine (the read's thread must get a core), so
 * 64 KiB reads spent over a second of a 200 MB file waiting. 256 KiB is between the two.
 */
export const READ_BYTES = 256 * 1024;

export class BodyChunks {
  readonly #reader: ReadableStreamBYOBReader | ReadableStreamDefaultReader<Uint8Array>;
  readonly #byob: boolean;
  readonly #waited: { ms: number } | undefined;
  /** Buffers free to read into (a byte stream's). */
  readonly #free: ArrayBuffer[] = [];
  /** The buffer of the chunk handed out last: free once the next chunk is asked for. */
  #current: ArrayBuffer | null = null;
  /** The read under way for the next chunk (a byte stream's). */
  #ahead: Promise<ReadableStreamReadResult<Uint8Array>> | null = null;
  #done = false;
  /** The body's own error, thrown again by every later `next`. */
  #error: { reason: unknown } | null = null;

  /** With `waited`, the time spent awaiting chunks is added to `waited.ms`. */
  constructor(body: ReadableStream<Uint8Array>, waited?: { ms: number }) {
    this.#waited = waited;
    let reader: ReadableStreamBYOBReader | null = null;
    try {
      reader = body.getReader({ mode: "byob" });
    } catch { /* not a byte stream */ }
    this.#byob = reader !== null;
    this.#reader = reader ?? body.getReader();
    if (this.#byob) this.#free.push(largeBuffer(READ_BYTES), largeBuffer(READ_BYTES));
  }

  /**
   * The next chunk, or null at the end. The chunk handed out before is no longer valid (its
   * buffer is being read into).
   */
  async next(): Promise<Uint8Array | null> {
    if (this.#error !== null) throw this.#error.reason;
    if (this.#done) return null;
    const t0 = performance.now();
    try {
      if (!this.#byob) {
        const result = await (this.#reader as ReadableStreamDefaultReader<Uint8Array>).read();
        if (result.done) this.#done = true;
        return result.done ? null : result.value;
      }
      if (this.#current !== null) this.#free.push(this.#current);
      this.#current = null;
      const pending = this.#ahead ?? this.#read();
      this.#ahead = null;
      const result = await pending;
      if (result.done) {
        this.#done = true;
        if (result.value !== undefined) this.#free.push(result.value.buffer as ArrayBuffer);
        return null;
      }
      this.#current = result.value.buffer as ArrayBuffer;
      this.#ahead = this.#read();
      return result.value;
    } catch (error) {
      this.#error = { reason: error };
      throw error;
    } finally {
      if (this.#waited !== undefined) this.#waited.ms += performance.now() - t0;
    }
  }

  /**
   * The chunks from here on, as an iterable that leaves the body open when its loop ends early
   * (so that another loop can read on; `cancel` ends the body).
   */
  async *chunks(): AsyncGenerator<Uint8Array> {
    for (;;) {
      const chunk = await this.next();
      if (chunk === null) return;
      yield chunk;
    }
  }

  /** Stops reading: cancels the body (a no-op once it ended) and frees the reader's buffers. */
  async cancel(): Promise<void> {
    this.#done = true;
    const ahead = this.#ahead;
    this.#ahead = null;
    await this.#reader.cancel().catch(() => {});
    // A read under way ends with the cancel, handing its buffer back.
    const last = await ahead?.catch(() => null);
    releaseBuffers(...this.#free, this.#current, last?.value);
    this.#current = null;
    this.#free.length = 0;
  }

  #read(): Promise<ReadableStreamReadResult<Uint8Array>> {
    const buffer = this.#free.pop()!;
    const view = new Uint8Array(buffer, 0, READ_BYTES);
    const read = (this.#reader as ReadableStreamBYOBReader).read(view);
    // A read ahead that nobody awaits (the reading stopped) must not fail unhandled.
    read.catch(() => {});
    return read;
  }
}
