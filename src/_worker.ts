/**
 * The one worker module of the service: the checks and hash of uploads
 * (`ingest/_validator_worker.ts`) and the tally of the aggregation
 * (`analysis/aggregate/_user_worker.ts`) run in the same kind of thread, so that one warm thread
 * (`warm_worker.ts`) serves an upload and then the analysis of it, or the next upload.
 *
 * Says `ready` once loaded. A request with an id is an upload session's, any other the tally's.
 * Each side's module is loaded at its first request (the checks' one with the runtime's
 * `node:crypto`, a few MB of heap), so that a worker that only checks, or only aggregates, does
 * without the other; the requests that come meanwhile wait, in order.
 */
/// <reference lib="deno.worker" />
import type { ValidatorRequest } from "./ingest/off_thread_validator.ts";
import type { WorkerRequest } from "./analysis/aggregate/_user_worker.ts";

/** Hands requests to a module's handler once the module is loaded, in the order they came. */
class Side<R> {
  #handle: ((request: R) => void) | null = null;
  #waiting: R[] | null = null;
  readonly #load: () => Promise<(request: R) => void>;

  constructor(load: () => Promise<(request: R) => void>) {
    this.#load = load;
  }

  request(request: R): void {
    if (this.#handle !== null) return this.#handle(request);
    if (this.#waiting !== null) {
      this.#waiting.push(request);
      return;
    }
    this.#waiting = [request];
    this.#load().then((handle) => {
      this.#handle = handle;
      const queued = this.#waiting!;
      this.#waiting = null;
      for (const waiting of queued) handle(waiting);
    }, (error) => {
      // The worker fails: whoever waits on it hears so (its `error` event).
      self.reportError(error);
    });
  }
}

const checks = new Side<ValidatorRequest>(async () =>
  (await import("./ingest/_validator_worker.ts")).onValidatorRequest
);
const tally = new Side<WorkerRequest>(async () =>
  (await import("./analysis/aggregate/_user_worker.ts")).onTallyRequest
);

self.onmessage = (event: MessageEvent<ValidatorRequest | WorkerRequest>) => {
  const request = event.data;
  if ("id" in request) checks.request(request);
  else tally.request(request);
};
self.postMessage({ type: "ready" });
