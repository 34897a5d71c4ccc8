/**
 * One stage of the upload's bytes: a byte source (`../byte_source.ts`) that reads the stream
 * before it into its reader's buffer and shows each read's bytes to the stage's hooks before
 * handing them on. The bytes of a body thus land once, in the buffer of the last reader
 * (storage's, reused from one read to the next), and every hook sees them there: no stage
 * allocates or copies a chunk of its own.
 *
 * Chunks handed on as `TransformStream`s do are each a fresh buffer: a 193 MB upload on tmpfs
 * took 0.55 s [0.52–0.65] through those against 0.43 s [0.43–0.46] read in place, and peaked near
 * 140 MB against 80 MB (seven uploads each in turns, 2026-12-02; docs/performance.md, "Uploads").
 *
 * @module
 */
import { type ByteSource, byteSource, type Read } from "../byte_source.ts";

/** What a stage does with the bytes passing through it. */
export interface ByteStageHooks {
  /** Sees each read's bytes, in order, before they are handed on; throws to fail the stage. */
  see?(bytes: Uint8Array): void;
  /** The stream before ended; throws to fail the stage instead of ending it. */
  end?(): void;
  /** The stage failed or was cancelled: the reason. */
  stop?(reason: unknown): void;
  /** Runs each read of the stream before (to time it); its rejection fails the stage. */
  around?(read: () => Promise<Read>): Promise<Read>;
  /** The most one read of the stream before asks for; absent: the reader's whole buffer. */
  readBytes?: number;
  /** Read the stream before in place when it is a byte stream (`byteSource`'s `inPlace`). */
  inPlace?: boolean;
}

/** A stage's source, and a way to end the read of the stream before that is under way. */
export interface ByteStage {
  source: ByteSource;
  /** Cancels the stream before with `reason`: the read under way ends (and `around` sees it). */
  interrupt(reason: unknown): void;
}

/** `stream` passed on through `hooks` (see the module's documentation). */
export function byteStage(stream: ReadableStream<Uint8Array>, hooks: ByteStageHooks): ByteStage {
  const reader = byteSource(stream, hooks.inPlace);
  const around = hooks.around ?? ((read) => read());
  const most = hooks.readBytes ?? Infinity;
  const source: ByteSource = {
    async read(into) {
      const view = into.length > most ? into.subarray(0, most) : into;
      try {
        const read = await around(() => reader.read(view));
        if (read.done) hooks.end?.();
        else hooks.see?.(read.bytes);
        return read;
      } catch (error) {
        hooks.stop?.(error);
        await reader.cancel(error).catch(() => {});
        throw error;
      }
    },
    async cancel(reason) {
      hooks.stop?.(reason);
      await reader.cancel(reason);
    },
  };
  return { source, interrupt: (reason) => void reader.cancel(reason).catch(() => {}) };
}
