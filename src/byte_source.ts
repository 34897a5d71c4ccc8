/**
 * A byte source: bytes read on request into the reader's own buffer. The upload's stage
 * (`upload/_byte_stage.ts`) is one and `writeBody` (`storage/object_store.ts`) reads one, so a
 * body's bytes land once, in the buffers storage writes from, with no stream between them: a
 * `ReadableStream` of `type: "bytes"` in between cost some 35 µs of processor time a tiny upload
 * (a 60-byte POST: 54–64 µs a request against 22–25 µs read through the source, 2026-12-03).
 *
 * @module
 */

/** One read: the bytes read (empty at the end) and whether the source ended. */
export interface Read {
  /** A view of the reader's buffer (`into`) holding the bytes read. */
  bytes: Uint8Array;
  done: boolean;
}

export interface ByteSource {
  /** Reads at most `into.length` bytes into `into`. */
  read(into: Uint8Array): Promise<Read>;
  /** Ends the source: a read under way ends, and the stream it reads is cancelled. */
  cancel(reason?: unknown): Promise<void>;
}

/**
 * `stream` as a source, copied from its chunks. A request's body under `Deno.serve` is not a
 * byte stream, so the copy is the common case; asking for a BYOB reader first to find out threw
 * each time and cost some 20 µs a request (a profile of tiny uploads).
 */
export function byteSource(stream: ReadableStream<Uint8Array>): ByteSource {
  const reader = stream.getReader();
  let rest: Uint8Array | null = null;
  return {
    async read(into) {
      while (rest === null || rest.length === 0) {
        const { value, done } = await reader.read();
        if (done) return { bytes: into.subarray(0, 0), done };
        rest = value;
      }
      const n = Math.min(rest.length, into.length);
      into.set(rest.subarray(0, n));
      rest = rest.subarray(n);
      return { bytes: into.subarray(0, n), done: false };
    },
    cancel: (reason) => reader.cancel(reason),
  };
}
