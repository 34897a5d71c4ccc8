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
  /**
   * A view of the reader's buffer holding the bytes read, or of the buffer its memory moved to
   * (a BYOB read transfers it): the reader takes the buffer back from here.
   */
  bytes: Uint8Array;
  done: boolean;
}

export interface ByteSource {
  /** Reads at most `into.length` bytes into `into`'s memory (see `Read.bytes`). */
  read(into: Uint8Array): Promise<Read>;
  /** Ends the source: a read under way ends, and the stream it reads is cancelled. */
  cancel(reason?: unknown): Promise<void>;
}

/** A byte stream's BYOB reader as a source (reads transfer the buffer, `Read.bytes` says where). */
function byobSource(reader: ReadableStreamBYOBReader): ByteSource {
  return {
    async read(into) {
      const { value, done } = await reader.read(into);
      // A cancelled read hands nothing back; the buffer went with it.
      if (value === undefined) throw new TypeError("Cannot read a cancelled stream");
      return { bytes: value, done };
    },
    cancel: (reason) => reader.cancel(reason),
  };
}

/**
 * `stream` as a source. With `inPlace`, a byte stream is read in place through a BYOB reader:
 * under `Deno.serve` a body longer than what came with the headers is one, and a 193 MB upload
 * read so peaked at 78–81 MB against 131 MB copied from chunks (2026-12-03). Otherwise, and for
 * any other stream, the bytes are copied from its chunks: a tiny body is not a byte stream, and
 * asking it for a BYOB reader throws, which cost some 20 µs a request (a profile of tiny uploads).
 */
export function byteSource(stream: ReadableStream<Uint8Array>, inPlace = false): ByteSource {
  if (inPlace) {
    try {
      return byobSource(stream.getReader({ mode: "byob" }));
    } catch {
      // not a byte stream
    }
  }
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
