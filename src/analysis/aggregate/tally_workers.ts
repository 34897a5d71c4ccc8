/**
 * The service's warm worker (`warm_worker.ts`) as the aggregation sees it: a run takes the worker
 * that waits (the thread that checked the upload, or ran the last analysis) and hands it back at
 * its end, and, while `keepMemory` says so, the memory of its last user table with it (see
 * `_user_worker.ts`): in a burst of large deliveries each run then starts at once and writes its
 * largest table into pages touched before, where a fresh worker costs tens of milliseconds and
 * every fresh page a fault (some 90 MB of them for a million users).
 *
 * The table's memory is kept only when `keepMemory` answers true as a run ends (the service:
 * while an upload streams or a large delivery waits in the queue, so another large analysis is on
 * its way). Otherwise it is freed as soon as the summary is done with it: a single delivery's
 * report and comparison then run without the records beside them, the peak of its cycle.
 *
 * One instance per service (`wiring.ts`), shared with the upload checks; `stop` ends the kept
 * worker. Without one, each run starts a worker of its own and ends it.
 */
import { WARM_WORKER_LINGER_MS, WarmWorker } from "../../warm_worker.ts";

/** How long a worker waits for the next run before it ends. */
export const TALLY_WORKER_LINGER_MS = WARM_WORKER_LINGER_MS;

export class TallyWorkers extends WarmWorker {
  readonly #keepMemory: () => boolean;

  /** `keepMemory`: whether a run ending now keeps its table's memory for the next (see above). */
  constructor(lingerMs = TALLY_WORKER_LINGER_MS, keepMemory: () => boolean = () => true) {
    super(lingerMs);
    this.#keepMemory = keepMemory;
  }

  /** Whether the run ending now keeps its table's memory in the worker for the next run. */
  get keepsMemory(): boolean {
    return !this.stopped && this.#keepMemory();
  }
}
