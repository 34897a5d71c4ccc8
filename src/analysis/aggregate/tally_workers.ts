/**
 * Keeps the aggregation's workers (the reading worker and its tally worker as a `WorkerPair`, see
 * `aggregateOffThread`, with the memory of the last user table, see `_user_worker.ts`) for a
 * moment after a run, for the next run to take: in a burst of large deliveries each run
 * then starts at once and writes its largest table into pages touched before, where a fresh
 * worker costs tens of milliseconds and every fresh page a fault (some 90 MB of them for a
 * million users). The worker ends `lingerMs` after its last run, giving all of it back.
 *
 * One instance per analysis queue (`wiring.ts`); `stop` ends the kept worker. Without one, each
 * run starts a worker of its own and ends it.
 */

/** How long a worker waits for the next run before it ends. */
export const TALLY_WORKER_LINGER_MS = 1000;

/** What is kept: a worker, or workers that run together (see `WorkerPair`). */
export interface KeptWorker {
  terminate(): void;
  onerror: ((event: ErrorEvent) => void) | null;
}

/** The reading worker and its tally worker of `aggregateOffThread`, kept and ended together. */
export class WorkerPair implements KeptWorker {
  constructor(readonly reading: Worker, readonly tally: Worker) {}

  terminate(): void {
    this.reading.terminate();
    this.tally.terminate();
  }

  set onerror(handler: ((event: ErrorEvent) => void) | null) {
    this.reading.onerror = handler;
    this.tally.onerror = handler;
  }

  get onerror(): ((event: ErrorEvent) => void) | null {
    return this.reading.onerror as ((event: ErrorEvent) => void) | null;
  }
}

export class TallyWorkers {
  readonly #lingerMs: number;
  #idle: KeptWorker | null = null;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;

  constructor(lingerMs = TALLY_WORKER_LINGER_MS) {
    this.#lingerMs = lingerMs;
  }

  /** True while a worker waits for the next run. */
  get idle(): boolean {
    return this.#idle !== null;
  }

  /**
   * The waiting worker, now the caller's (it is up: its `ready` was heard), or null; one of
   * another kind than `kind` (a pair for a single worker, or the reverse) is ended instead.
   */
  take<T extends KeptWorker>(kind: abstract new (...args: never[]) => T): T | null {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const worker = this.#idle;
    this.#idle = null;
    if (worker === null || worker instanceof kind) return worker;
    worker.terminate();
    return null;
  }

  /** Keeps `worker`, done with a run that ended cleanly, for the next run or `lingerMs`. */
  keep(worker: KeptWorker): void {
    if (this.#stopped) {
      worker.terminate();
      return;
    }
    this.#end();
    this.#idle = worker;
    // A worker that fails while it waits is not handed out (the next run sets its own handlers).
    worker.onerror = (event) => {
      event.preventDefault();
      if (this.#idle === worker) this.#end();
    };
    this.#timer = setTimeout(() => this.#end(), this.#lingerMs);
  }

  /** Ends the waiting worker; later workers are not kept. */
  stop(): void {
    this.#stopped = true;
    this.#end();
  }

  #end(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#idle?.terminate();
    this.#idle = null;
  }
}
