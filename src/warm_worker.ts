/**
 * The service's worker thread, kept warm between the pieces of work it does: an upload's checks
 * and hash (`ingest/off_thread_validator.ts`), then the analysis of that upload
 * (`analysis/aggregate/`), then the next upload. Every worker of the service runs the one module
 * `_worker.ts`, so a thread that is up serves whichever comes next.
 *
 * A fresh thread costs more than its start (some 50 ms): its code runs unoptimized at first, its
 * heap is new pages, and a 200 MB upload checked on one took 0.5 s of processor time against
 * 0.25 s on a thread that had checked one before. Whoever holds the worker hands it back with
 * `keep` when done; at most one waits here, for `lingerMs`, then it ends and gives all of its
 * memory back.
 */

/** The module every worker of the service runs. */
export const WORKER_URL = new URL("./_worker.ts", import.meta.url);

/** Starts a worker of the service (it says `ready` once loaded). */
export function startWorker(): Worker {
  return new Worker(WORKER_URL.href, { type: "module" });
}

/**
 * How long a worker waits for its next piece of work before it ends: a burst of deliveries (an
 * upload, its analysis, the next upload a few seconds later) keeps one warm thread.
 */
export const WARM_WORKER_LINGER_MS = 10_000;

/**
 * How long a worker that keeps an aggregation's table memory (`keep(worker, true)`, some 90 MB
 * for a million users) waits: the large analysis it is kept for is on its way.
 */
export const MEMORY_LINGER_MS = 1000;

export class WarmWorker {
  readonly #lingerMs: number;
  #idle: Worker | null = null;
  /** Whether the waiting worker keeps an aggregation's table memory. */
  #idleHoldsMemory = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;
  /** Workers taken or started and not kept or discarded yet. */
  #out = 0;

  constructor(lingerMs = WARM_WORKER_LINGER_MS) {
    this.#lingerMs = lingerMs;
  }

  /** True while a worker waits for its next piece of work. */
  get idle(): boolean {
    return this.#idle !== null;
  }

  /** True once `stop` ran: workers are no longer kept. */
  get stopped(): boolean {
    return this.#stopped;
  }

  /**
   * The waiting worker, now the caller's (it is up: its `ready` was heard), or null. The caller
   * hands it back with `keep` or `discard`.
   */
  take(): Worker | null {
    const worker = this.#release();
    if (worker !== null) this.#out++;
    return worker;
  }

  /** A new worker, the caller's (it says `ready` once up); handed back with `keep` or `discard`. */
  start(): Worker {
    const worker = startWorker();
    this.#out++;
    return worker;
  }

  /**
   * Takes back `worker`, done with its work (no reply of it still on its way), for the next taker;
   * `holdsMemory`: it keeps an aggregation's table memory for the next run. One worker waits at
   * most: one that keeps memory stays before one that does not, and one that comes back while
   * another is still out ends (the other comes back later, or keeps memory), so that no idle
   * thread sits beside a busy one at its peak.
   */
  keep(worker: Worker, holdsMemory = false): void {
    this.#out = Math.max(0, this.#out - 1);
    worker.onmessage = null;
    worker.onmessageerror = null;
    const ends = this.#stopped ||
      (!holdsMemory && (this.#out > 0 || (this.#idle !== null && this.#idleHoldsMemory)));
    if (ends) {
      worker.onerror = null;
      worker.terminate();
      return;
    }
    this.#release()?.terminate();
    this.#idle = worker;
    this.#idleHoldsMemory = holdsMemory;
    // A worker that fails while it waits is not handed out (the next taker sets its own handlers).
    worker.onerror = (event) => {
      event.preventDefault();
      if (this.#idle === worker) this.#release()?.terminate();
    };
    const linger = holdsMemory ? Math.min(this.#lingerMs, MEMORY_LINGER_MS) : this.#lingerMs;
    this.#timer = setTimeout(() => this.#release()?.terminate(), linger);
  }

  /** Ends `worker`, taken or started here (it failed, or its work did). */
  discard(worker: Worker): void {
    this.#out = Math.max(0, this.#out - 1);
    worker.terminate();
  }

  /** Ends the waiting worker; later workers are not kept. */
  stop(): void {
    this.#stopped = true;
    this.#release()?.terminate();
  }

  /** The waiting worker, no longer waiting, or null. */
  #release(): Worker | null {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const worker = this.#idle;
    this.#idle = null;
    this.#idleHoldsMemory = false;
    return worker;
  }
}
