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

export type ValidatorRequest =
  | { id: number; type: "start" }
  | { id: number; type: "follow"; path: string }
  | { id: number; type: "chunk"; buffer: ArrayBuffer; length: number }
  | { id: number; type: "finish"; size?: number }
  | { id: number; type: "abort" };

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
  | { id: number; type: "summary"; summary: ValidationSummary; sha256: string };

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

/** A validator thread without sessions for this long ends (see `ValidatorThread`). */
export const VALIDATOR_IDLE_MS = 1000;

/**
 * A session of at least this many bytes ends its idle thread at once (see `ValidatorThread`):
 * the analysis of that much data follows and wants the memory, and a restart costs a few ms.
 */
export const LARGE_SESSION_BYTES = 16 * 1024 * 1024;

/**
 * The worker thread that validates and hashes uploads, one session per upload. Started on first
 * use; `stop()` ends it (shutdown, tests) and a later upload starts a new one. It also ends once
 * it had no session for `idleMs`: a thread that read a large upload keeps tens of MB of heap that
 * an idle service would otherwise hold until the next one (starting it again costs a few ms).
 * When a session that read `LARGE_SESSION_BYTES` or more closes and leaves it idle, it ends at
 * once: the runtime's worker alone takes some 20 MB, and the analysis of a large delivery,
 * which starts at that moment, reaches its peak memory within the next second.
 */
export class ValidatorThread {
  #worker: Worker | null = null;
  #nextId = 1;
  readonly #sessions = new Map<number, Session>();
  readonly #idleMs: number;
  #idleTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(idleMs = VALIDATOR_IDLE_MS) {
    this.#idleMs = idleMs;
  }

  /** True while the worker thread is up. */
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
   * Forgets a session; false when it was already gone. `bytes` is what the session read: a large
   * one ends the thread at once if no other session is open.
   */
  close(id: number, bytes = 0): boolean {
    const closed = this.#sessions.delete(id);
    if (this.#sessions.size > 0 || this.#worker === null) return closed;
    if (bytes >= LARGE_SESSION_BYTES) this.#end();
    else if (this.#idleTimer === undefined) {
      this.#idleTimer = setTimeout(() => {
        this.#idleTimer = undefined;
        if (this.#sessions.size === 0) this.#end();
      }, this.#idleMs);
    }
    return closed;
  }

  has(id: number): boolean {
    return this.#sessions.has(id);
  }

  post(message: ValidatorRequest, transfer: Transferable[] = []): void {
    this.#running().postMessage(message, transfer);
  }

  /** Ends the thread; sessions still open fail with an internal error. */
  stop(): void {
    this.#end();
    for (const session of this.#sessions.values()) {
      session.onError("internal_error", "The validator stopped");
    }
  }

  /** Ends the worker thread (and its idle timer), if it runs. */
  #end(): void {
    clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
    this.#worker?.terminate();
    this.#worker = null;
  }

  #running(): Worker {
    clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
    if (this.#worker) return this.#worker;
    const worker = new Worker(new URL("./_validator_worker.ts", import.meta.url).href, {
      type: "module",
    });
    worker.onmessage = (event: MessageEvent<ValidatorReply>) => {
      const m = event.data;
      const session = this.#sessions.get(m.id);
      if (!session) return;
      if (m.type === "buffer") session.onBuffer(m.buffer);
      else if (m.type === "error") session.onError(m.code, m.message, m.line);
      else session.onSummary({ summary: m.summary, sha256: m.sha256 });
    };
    worker.onerror = (event) => {
      event.preventDefault();
      for (const session of this.#sessions.values()) {
        session.onError("internal_error", event.message);
      }
    };
    return this.#worker = worker;
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
        thread.close(this.#id, result.summary.bytes);
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
