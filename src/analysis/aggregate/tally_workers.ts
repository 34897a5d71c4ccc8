/**
 * Keeps the aggregation's worker (and, while `keepMemory` says so, the memory of its last user
 * table, see `_user_worker.ts`) for a moment after a run, for the next run to take: in a burst of
 * large deliveries each run then starts at once and writes its largest table into pages touched
 * before, where a fresh worker costs tens of milliseconds and every fresh page a fault (some 90
 * MB of them for a million users). The worker ends `lingerMs` after its last run, giving all of
 * it back.
 *
 * The table's memory is kept only when `keepMemory` answers true as a run ends (the service:
 * while an upload streams or a large delivery waits in the queue, so another large analysis is on
 * its way). Otherwise it is freed as soon as the summary is done with it: a single delivery's
 * report and comparison then run without the records beside them, the peak of its cycle.
 *
 * One instance per analysis queue (`wiring.ts`); `stop` ends the kept worker. Without one, each
 * run starts a worker of its own and ends it.
 */

/** How long a worker waits for the next run before it ends. */
export const TALLY_WORKER_LINGER_MS = 1000;

export class TallyWorkers {
  readonly #lingerMs: number;
  readonly #keepMemory: () => boolean;
  #idle: Worker | null = null;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;

  /** `keepMemory`: whether a run ending now keeps its table's memory for the next (see above). */
  constructor(lingerMs = TALLY_WORKER_LINGER_MS, keepMemory: () => boolean = () => true) {
    this.#lingerMs = lingerMs;
    this.#keepMemory = keepMemory;
  }

  /** Whether the run ending now keeps its table's memory in the worker for the next run. */
  get keepsMemory(): boolean {
    return !this.#stopped && this.#keepMemory();
  }

  /** True while a worker waits for the next run. */
  get idle(): boolean {
    return this.#idle !== null;
  }

  /** The waiting worker, now the caller's (it is up: its `ready` was heard), or null. */
  take(): Worker | null {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const worker = this.#idle;
    this.#idle = null;
    return worker;
  }

  /** Keeps `worker`, done with a run that ended cleanly, for the next run or `lingerMs`. */
  keep(worker: Worker): void {
    if (this.#stopped) {
      worker.terminate();
      return;
    }
    this.take()?.terminate();
    this.#idle = worker;
    // A worker that fails while it waits is not handed out (the next run sets its own handlers).
    worker.onerror = (event) => {
      event.preventDefault();
      if (this.#idle === worker) this.take()?.terminate();
    };
    this.#timer = setTimeout(() => this.take()?.terminate(), this.#lingerMs);
  }

  /** Ends the waiting worker; later workers are not kept. */
  stop(): void {
    this.#stopped = true;
    this.take()?.terminate();
  }
}
