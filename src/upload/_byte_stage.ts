/**
 * One stage of the upload's byte pipeline: a byte stream (`type: "bytes"`) that reads the stream
 * before it into its own reader's buffer (BYOB) and shows each read's bytes to the stage before
 * handing them on. The bytes of a body thus land once, in the buffer of the pipeline's last
 * reader (storage's, reused from one read to the next), and every stage sees them there: no
 * stage allocates or copies a chunk of its own.
 *
 * Chunks handed on as `TransformStream`s do are each a fresh buffer: a 193 MB upload on tmpfs
 * took 0.55 s [0.52–0.65] through those against 0.43 s [0.43–0.46] read in place, and peaked near
 * 140 MB against 80 MB (seven uploads each in turns, 2026-12-02; docs/performance.md, "Uploads").
 *
 * A stream before it that is not a byte stream (tests, `ReadableStream.from`) is copied from.
 *
 * @module
 */

/** What a stage does with the bytes passing through it. */
export interface ByteStageHooks {
  /** Sees each read's bytes, in order, before they are handed on; throws to fail the stream. */
  see?(bytes: Uint8Array): void;
  /** The stream before ended; throws to fail the stream instead of ending it. */
  end?(): void;
  /** The stream failed or was cancelled: the reason. */
  stop?(reason: unknown): void;
  /** Runs each read of the stream before (to time it); its rejection fails the stream. */
  around?(read: () => Promise<Read>): Promise<Read>;
  /** The most one read of the stream before asks for; absent: the reader's whole buffer. */
  readBytes?: number;
}

/** One read into a given buffer: the bytes read, a view of it (empty at the end). */
export interface Read {
  bytes: Uint8Array;
  done: boolean;
}

/**
 * Default readers (`for await`) of a stage get chunks of up to this size: the largest JSON body
 * (`routes/json_body.ts`) in one.
 */
const AUTO_CHUNK_BYTES = 16 * 1024;

/** Reads into a given buffer (which a byte stream takes and hands back as the answer's). */
interface IntoReader {
  read(into: Uint8Array): Promise<Read>;
  cancel(reason?: unknown): Promise<void>;
}

/** `source`'s bytes, read in place (a byte stream) or copied from its chunks. */
function intoReader(source: ReadableStream<Uint8Array>): IntoReader {
  try {
    const byob = source.getReader({ mode: "byob" });
    return {
      async read(into) {
        const { value, done } = await byob.read(into);
        // A cancelled read hands nothing back; the buffer went with it.
        if (value === undefined) throw new TypeError("Cannot read a cancelled stream");
        return { bytes: value, done };
      },
      cancel: (reason) => byob.cancel(reason),
    };
  } catch {
    // not a byte stream
  }
  const reader = source.getReader();
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

/** A stage's stream, and a way to end the read of the stream before that is under way. */
export interface ByteStage {
  readable: ReadableStream<Uint8Array>;
  /** Cancels the stream before with `reason`: the read under way ends (and `around` sees it). */
  interrupt(reason: unknown): void;
}

/** `source` passed on through `hooks` (see the module's documentation). */
export function byteStage(source: ReadableStream<Uint8Array>, hooks: ByteStageHooks): ByteStage {
  const reader = intoReader(source);
  const around = hooks.around ?? ((read) => read());
  const readable: ReadableStream<Uint8Array> = new ReadableStream({
    type: "bytes",
    autoAllocateChunkSize: AUTO_CHUNK_BYTES,
    async pull(controller: ReadableByteStreamController) {
      const request = controller.byobRequest!;
      const whole = request.view as Uint8Array;
      const view = whole.subarray(0, hooks.readBytes ?? whole.length);
      try {
        const { bytes, done } = await around(() => reader.read(view));
        if (done) {
          hooks.end?.();
          controller.close();
          request.respondWithNewView(bytes); // the buffer, handed back empty
          return;
        }
        hooks.see?.(bytes);
        request.respondWithNewView(bytes);
      } catch (error) {
        hooks.stop?.(error);
        controller.error(error);
        await reader.cancel(error).catch(() => {});
      }
    },
    async cancel(reason: unknown) {
      hooks.stop?.(reason);
      await reader.cancel(reason);
    },
  });
  return { readable, interrupt: (reason) => void reader.cancel(reason).catch(() => {}) };
}
