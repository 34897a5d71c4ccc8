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
 * A worker can also be started ahead of a run (`prepare`): as a large upload begins, for the
 * analysis that follows it. It starts beside the upload (on the service's thread that is some 40
 * ms, and the worker is up some 50 ms later), and waits up to `PREPARED_LINGER_MS` for the run.
 *
 * One instance per analysis queue (`wiring.ts`); `stop` ends the kept worker. Without one, each
 * run starts a worker of its own and ends it.
 */
import type { WorkerReply } from "./_user_worker.ts";

/** The aggregation's worker module. */
export const WORKER_URL: URL = new URL("./_user_worker.ts", import.meta.url);

/** How long a worker waits for the next run before it ends. */
export const TALLY_WORKER_LINGER_MS = 1000;
/** How long a worker started ahead of a run (`prepare`) waits for it before it ends. */
export const PREPARED_LINGER_MS = 60_000;
/** How long a worker started ahead of a run may take to be up. */
const PREPARE_TIMEOUT_MS = 5000;

export class TallyWorkers {
  readonly #lingerMs: number;
  readonly #keepMemory: () => boolean;
  #idle: Worker | null = null;
  /** A worker started by `prepare`, not up yet, and what ends it. */
  #starting: Worker | null = null;
  #stopStarting: (() => void) | null = null;
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

  /**
   * Starts a worker for a run to come (`workerUrl`'s module, the aggregation's by default),
   * unless one waits or starts already; once up, it waits for the run up to `lingerMs`.
   */
  prepare(workerUrl: URL = WORKER_URL, lingerMs = PREPARED_LINGER_MS): void {
    if (this.#stopped || this.#idle !== null || this.#starting !== null) return;
    let worker: Worker;
    try {
      worker = new Worker(workerUrl.href, { type: "module" });
    } catch {
      return; // the run starts its own, or reads on its thread
    }
    this.#starting = worker;
    const drop = () => {
      clearTimeout(timer);
      if (this.#starting === worker) {
        this.#starting = null;
        this.#stopStarting = null;
      }
      worker.terminate();
    };
    // One that is not up in time is given up (a run would have given it up too).
    const timer = setTimeout(drop, PREPARE_TIMEOUT_MS);
    this.#stopStarting = drop;
    worker.onmessage = (event: MessageEvent<WorkerReply>) => {
      if (event.data.type !== "ready" || this.#starting !== worker) return;
      clearTimeout(timer);
      this.#starting = null;
      this.#stopStarting = null;
      if (this.#stopped || this.#idle !== null) worker.terminate();
      else this.keep(worker, lingerMs);
    };
    worker.onerror = (event) => {
      event.preventDefault();
      drop();
    };
  }

  /**
   * Keeps `worker` (up: done with a run that ended cleanly, or started by `prepare`) for the
   * next run, or `lingerMs`.
   */
  keep(worker: Worker, lingerMs: number = this.#lingerMs): void {
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
    this.#timer = setTimeout(() => this.take()?.terminate(), lingerMs);
  }

  /** Ends the waiting worker (and one starting); later workers are not kept. */
  stop(): void {
    this.#stopped = true;
    this.take()?.terminate();
    this.#stopStarting?.();
  }
}
