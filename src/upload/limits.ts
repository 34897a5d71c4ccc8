/**
 * The limits every request body the service reads is held to, as one stream stage: a byte limit
 * (refused at the first byte past it), an idle timeout (the body sent nothing for that long while
 * it was asked for more), a minimum average rate once a grace period has passed, an optional
 * deadline for the whole body, and an optional check of the running total (a storage quota).
 * `limitSource(body, options)` answers a byte source of the same bytes that fails with the first
 * limit broken and cancels the body then, its reader's buffers filled by the body in place (see
 * `_byte_stage.ts`).
 *
 * Time counts only while the stage waits for the body: a slow consumer (storage applying
 * backpressure) never makes the client look idle. `inner` (the upload's checks) runs in the same
 * stage, after the limits: one stream a body, not one a stage (docs/performance.md, "Uploads").
 *
 * @module
 */
import { megabytes, ServiceError } from "../errors.ts";
import type { ByteSource, Read } from "../byte_source.ts";
import { byteStage, type ByteStageHooks } from "./_byte_stage.ts";

/** Options of `limitSource`. */
export interface BodyLimitsOptions {
  /** Largest body accepted, in bytes. */
  maxBytes: number;
  /** A body that sends nothing for this long while it is read is abandoned (408). */
  idleTimeoutMs: number;
  /**
   * A body whose average rate falls below this, once `minRateAfterMs` have passed, is abandoned
   * (408). 0 or absent: no minimum.
   */
  minBytesPerSecond?: number;
  /** When the minimum rate starts to apply; default 60 000 ms. */
  minRateAfterMs?: number;
  /** The whole body must have arrived within this long (408); absent: no deadline. */
  deadlineMs?: number;
  /** The error of a body past `maxBytes`; default `tooLargeError(maxBytes)`. */
  tooLarge?: () => Error;
  /** Sees the size of every chunk as it passes (counters). */
  onBytes?: (bytes: number) => void;
  /**
   * Sees the running total after every chunk, and throws to refuse the body there (the storage
   * quota); the chunk is not handed on.
   */
  admit?: (total: number) => void;
  /** The most one read of the body asks for; absent: the reader's whole buffer. */
  readBytes?: number;
  /** Read a byte stream in place (`byteSource`'s `inPlace`): for bodies longer than a chunk. */
  inPlace?: boolean;
  /** Hooks run after the limits': each read they passed, the end, why the body stopped. */
  inner?: ByteStageHooks;
}

/** `payload_too_large`: the body is over the limit. */
export function tooLargeError(maxBytes: number): ServiceError {
  return new ServiceError(
    "payload_too_large",
    `The file is larger than the limit of ${maxBytes} bytes (${megabytes(maxBytes)} MB)`,
  );
}

/** `body_timeout`: the body went silent. */
function idleError(idleTimeoutMs: number): ServiceError {
  return new ServiceError(
    "body_timeout",
    `The request body stopped arriving for ${
      Math.round(idleTimeoutMs / 1000)
    } s; the request was abandoned`,
  );
}

function deadlineError(deadlineMs: number): ServiceError {
  return new ServiceError(
    "body_timeout",
    `The request body did not arrive within ${
      Math.round(deadlineMs / 1000)
    } s; the request was abandoned`,
  );
}

function slowError(bytes: number, elapsedMs: number, minBytesPerSecond: number): ServiceError {
  return new ServiceError(
    "body_timeout",
    `The request body arrived at ${
      Math.floor(bytes * 1000 / elapsedMs)
    } bytes/s, below the minimum of ${minBytesPerSecond} bytes/s; the upload was abandoned`,
  );
}

/** The client went away (or the connection broke) before the body ended. */
export function abortedError(): ServiceError {
  return new ServiceError("request_aborted", "The request body could not be read to its end");
}

/** `body` held to `options`' limits, as a byte source (see the module's documentation). */
export function limitSource(
  body: ReadableStream<Uint8Array>,
  options: BodyLimitsOptions,
): ByteSource {
  const minRate = options.minBytesPerSecond ?? 0;
  const minRateAfter = options.minRateAfterMs ?? 60_000;
  const started = performance.now();
  let total = 0;
  let broken: Error | null = null;

  /** Breaks the body with `error`: the read under way ends, and the stream errors with it. */
  const breakWith = (error: Error) => {
    broken ??= error;
    stage.interrupt(error);
  };
  const deadline = options.deadlineMs === undefined
    ? undefined
    : setTimeout(() => breakWith(deadlineError(options.deadlineMs!)), options.deadlineMs);
  const idle = new IdleWatch(
    options.idleTimeoutMs,
    () => breakWith(idleError(options.idleTimeoutMs)),
  );
  const settle = () => {
    clearTimeout(deadline);
    idle.stop();
  };
  const inner = options.inner;
  const stage = byteStage(body, {
    readBytes: options.readBytes,
    inPlace: options.inPlace,
    async around(read): Promise<Read> {
      idle.waiting();
      let result: Read;
      try {
        result = await read();
      } catch {
        throw broken ?? abortedError();
      } finally {
        idle.served();
      }
      if (broken !== null) throw broken;
      return result;
    },
    see(bytes) {
      total += bytes.length;
      options.onBytes?.(bytes.length);
      if (total > options.maxBytes) {
        throw broken ??= options.tooLarge?.() ?? tooLargeError(options.maxBytes);
      }
      if (options.admit) {
        try {
          options.admit(total);
        } catch (error) {
          throw broken ??= error as Error;
        }
      }
      if (minRate > 0) {
        const elapsed = performance.now() - started;
        if (elapsed > minRateAfter && total < minRate * elapsed / 1000) {
          throw broken ??= slowError(total, elapsed, minRate);
        }
      }
      inner?.see?.(bytes);
    },
    end() {
      settle();
      inner?.end?.();
    },
    stop(reason) {
      settle();
      inner?.stop?.(reason);
    },
  });
  return stage.source;
}

/**
 * The idle timeout of one body, on one timer for the whole body rather than one per read (a
 * timer costs more than a read of a chunk that is already there): it counts only the time a read
 * waits, and fires `onIdle` once a read has waited `idleMs`.
 */
class IdleWatch {
  readonly #idleMs: number;
  readonly #onIdle: () => void;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** When the read under way started; -1 while none is. */
  #since = -1;
  #stopped = false;

  constructor(idleMs: number, onIdle: () => void) {
    this.#idleMs = idleMs;
    this.#onIdle = onIdle;
  }

  /** A read starts. */
  waiting(): void {
    this.#since = performance.now();
    if (this.#timer === undefined && !this.#stopped) this.#arm(this.#idleMs);
  }

  /** The read ended. */
  served(): void {
    this.#since = -1;
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#since < 0 || this.#stopped) return; // no read waits: the next one arms again
      const waited = performance.now() - this.#since;
      if (waited >= this.#idleMs) this.#onIdle();
      else this.#arm(this.#idleMs - waited);
    }, ms);
  }
}
