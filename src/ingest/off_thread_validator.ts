/**
 * Validates and hashes an upload on a worker thread while the request's own thread reads and
 * writes: each batch goes to the worker (transferred, not copied) after it was written, and its
 * buffer comes back for reuse. Or, with `follow`, the worker reads the bytes itself from the file
 * they are being written to. The first error surfaces on the next `check()` (and at once through
 * `onError`); nothing commits before `finish()` resolved.
 */
import type { ValidationSummary } from "../pipeline/mod.ts";
import { ValidationError } from "../pipeline/mod.ts";
import type { ErrorCode } from "../http/errors.ts";
import { WarmWorker } from "../warm_worker.ts";

export type ValidatorRequest =
  | { id: number; type: "start" }
  | { id: number; type: "follow"; path: string }
  | { id: number; type: "chunk"; buffer: ArrayBuffer; length: number }
  | { id: number; type: "finish"; size?: number }
  | { id: number; type: "abort" }
  /** Answered (`drained`) after every request before it: the sessions' last reply came. */
  | { id: number; type: "drain" };

export type ValidatorReply =
  | { id: number; type: "buffer"; buffer: ArrayBuffer }
  | {
    id: number;
    type: "error";
    code: ErrorCode | "internal_error";
    message: string;
    /** The `ValidationError`'s line, when it names one. */
    line?: number | null;
  }
  | { id: number; type: "summary"; summary: ValidationSummary; sha256: string }
  | { id: number; type: "drained" };

/** What the worker answers at the end of a valid upload. */
export interface OffThreadResult {
  summary: ValidationSummary;
  /** SHA-256 of every byte pushed, hex. */
  sha256: string;
}

export interface Session {
  onBuffer(buffer: ArrayBuffer): void;
  onError(code: string, message: string, line?: number | null): void;
  onSummary(result: OffThreadResult): void;
}

/**
 * How long the thread of a `ValidatorThread` without a `WarmWorker` of its own waits for the next
 * session once it has none (see `WarmWorker`).
 */
export const VALIDATOR_IDLE_MS = 1000;

/**
 * The worker thread that validates and hashes uploads, one session per upload. It takes the
 * service's warm worker (`WarmWorker`: the one that ran the last analysis or upload) or starts
 * one, on first use; once no session is open, and the worker answered every request sent before
 * (`drain`), it hands the worker back. The analysis of a large upload, which starts at that
 * moment, then runs on the same thread rather than on a second one beside it (the runtime's
 * worker alone takes some 20 MB), and the next upload finds it warm. `stop()` ends the thread
 * (shutdown, tests); a later upload takes or starts another.
 */
export class ValidatorThread {
  #worker: Worker | null = null;
  #nextId = 1;
  readonly #sessions = new Map<number, Session>();
  readonly #warm: WarmWorker;
  /** Whether `#warm` is this thread's own (stopped with it), not the service's. */
  readonly #ownsWarm: boolean;
  /** The id of the `drain` sent last, whose answer hands the worker back; 0 when none is. */
  #draining = 0;
  /** A session closed before its summary (its batches may still come back) since the last drain. */
  #unanswered = false;

  /** `warm`: where the worker comes from and goes back to (default: one of its own). */
  constructor(warm: WarmWorker | number = VALIDATOR_IDLE_MS) {
    this.#ownsWarm = typeof warm === "number";
    this.#warm = typeof warm === "number" ? new WarmWorker(warm) : warm;
  }

  /** True while the thread holds a worker (a session is open, or was a moment ago). */
  get running(): boolean {
    return this.#worker !== null;
  }

  /** Opens a session on the thread (starting it if needed) and answers its id. */
  open(session: Session): number {
    const id = this.#nextId++;
    this.#sessions.set(id, session);
    this.#running();
    return id;
  }

  /**
   * Forgets a session; false when it was already gone. The last one hands the worker back: at
   * once after its summary (the worker's last reply of it), else once the worker answered a
   * `drain` (an aborted session's batches may still come back).
   */
  close(id: number, answered = false): boolean {
    const closed = this.#sessions.delete(id);
    if (closed && !answered) this.#unanswered = true;
    if (this.#sessions.size > 0 || this.#worker === null) return closed;
    if (!this.#unanswered) {
      this.#handBack();
      return closed;
    }
    this.#draining = this.#nextId++;
    this.#worker.postMessage({ id: this.#draining, type: "drain" } satisfies ValidatorRequest);
    return closed;
  }

  has(id: number): boolean {
    return this.#sessions.has(id);
  }

  post(message: ValidatorRequest, transfer: Transferable[] = []): void {
    // A worker that failed took its sessions with it: nothing to abort.
    if (message.type === "abort" && this.#worker === null) return;
    this.#running().postMessage(message, transfer);
  }

  /** Ends the thread; sessions still open fail with an internal error. */
  stop(): void {
    this.#draining = 0;
    this.#unanswered = false;
    if (this.#worker !== null) this.#warm.discard(this.#worker);
    this.#worker = null;
    if (this.#ownsWarm) this.#warm.stop();
    for (const session of this.#sessions.values()) {
      session.onError("internal_error", "The validator stopped");
    }
  }

  #running(): Worker {
    this.#draining = 0;
    if (this.#worker) return this.#worker;
    const worker = this.#warm.take() ?? this.#warm.start();
    worker.onmessage = (event: MessageEvent<ValidatorReply | { type: "ready" }>) => {
      const m = event.data;
      if (!("id" in m)) return; // a fresh worker's `ready`
      if (m.type === "drained") {
        if (m.id === this.#draining && this.#sessions.size === 0) this.#handBack();
        return;
      }
      const session = this.#sessions.get(m.id);
      if (!session) return;
      if (m.type === "buffer") session.onBuffer(m.buffer);
      else if (m.type === "error") session.onError(m.code, m.message, m.line);
      else session.onSummary({ summary: m.summary, sha256: m.sha256 });
    };
    worker.onmessageerror = null;
    worker.onerror = (event) => {
      event.preventDefault();
      // A worker that failed is not handed back.
      if (this.#worker === worker) this.#worker = null;
      this.#unanswered = false;
      this.#warm.discard(worker);
      for (const session of this.#sessions.values()) {
        session.onError("internal_error", event.message);
      }
    };
    return this.#worker = worker;
  }

  /** Gives the worker, done with every session, back for the next taker. */
  #handBack(): void {
    const worker = this.#worker!;
    this.#worker = null;
    this.#draining = 0;
    this.#unanswered = false;
    worker.onerror = null;
    this.#warm.keep(worker);
  }
}

function toError(code: string, message: string, line: number | null = null): Error {
  if (code === "internal_error") return new Error(`Validator failed: ${message}`);
  // The message already names the line (`ValidationError` appends it only when it does not).
  return new ValidationError(code as ErrorCode, message, line);
}

export class OffThreadValidator {
  readonly #thread: ValidatorThread;
  readonly #id: number;
  #error: Error | null = null;
  #summary: Promise<OffThreadResult>;
  #resolve!: (s: OffThreadResult) => void;
  #reject!: (e: Error) => void;
  #onBuffer: (buffer: ArrayBuffer) => void;
  #inFlight = 0;

  #onError?: (error: Error) => void;

  /**
   * `onBuffer` receives each batch's buffer back once the worker is done with it; `onError`
   * hears the first error at once (so a caller waiting for a buffer can stop waiting). With
   * `follow`, the worker reads the file at that path as it grows instead of taking batches.
   */
  constructor(
    thread: ValidatorThread,
    onBuffer: (buffer: ArrayBuffer) => void,
    onError?: (error: Error) => void,
    follow?: string,
  ) {
    this.#thread = thread;
    this.#onBuffer = onBuffer;
    this.#onError = onError;
    this.#summary = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.#summary.catch(() => {});
    this.#id = thread.open({
      onBuffer: (buffer) => {
        this.#inFlight--;
        this.#onBuffer(buffer);
      },
      onError: (code, message, line) => {
        // The session stays until abort(): the worker still hands the in-flight buffers back.
        this.#error ??= toError(code, message, line);
        this.#reject(this.#error);
        this.#onError?.(this.#error);
      },
      onSummary: (result) => {
        this.#resolve(result);
        thread.close(this.#id, true);
      },
    });
    thread.post(
      (follow === undefined
        ? { id: this.#id, type: "start" }
        : { id: this.#id, type: "follow", path: follow }) satisfies ValidatorRequest,
    );
  }

  /** A validator that reads the file at `path` while it is written; see `finish(size)`. */
  static follow(
    thread: ValidatorThread,
    path: string,
    onError: (error: Error) => void,
  ): OffThreadValidator {
    return new OffThreadValidator(thread, () => {}, onError, path);
  }

  /** Throws the first error the worker found so far. */
  check(): void {
    if (this.#error) throw this.#error;
  }

  /** Hands a batch to the worker; the caller must not touch `batch` until it comes back. */
  push(batch: Uint8Array): void {
    this.check();
    this.#inFlight++;
    const buffer = batch.buffer as ArrayBuffer;
    this.#thread.post(
      { id: this.#id, type: "chunk", buffer, length: batch.length } satisfies ValidatorRequest,
      [buffer],
    );
  }

  /**
   * End of input: resolves with the summary and hash, or rejects with the first error. A follow
   * is told the file's final size, and answers once it has read that far.
   */
  finish(size?: number): Promise<OffThreadResult> {
    this.#thread.post({ id: this.#id, type: "finish", size } satisfies ValidatorRequest);
    return this.#summary;
  }

  abort(): void {
    if (!this.#thread.has(this.#id)) return;
    this.#thread.post({ id: this.#id, type: "abort" } satisfies ValidatorRequest);
    this.#thread.close(this.#id);
  }
}
