/**
 * Runs the analysis after every delivery, in the background, in this process (the control plane
 * has no shared jobs: SQLite): at most one run per dataset at a time, newest delivery wins,
 * results saved keyed by the object's ETag. One run per delivery: a request, a scan or an event
 * for the ETag being analysed (or already queued) joins that run; a settings change for it
 * queues one re-run, afterwards. Each run is `analyseDelivery` (shared with the leased queue of
 * several instances, `leased_analysis_queue.ts`).
 *
 * Datasets up to `SMALL_INPUT_BYTES` are read on this thread in about a millisecond; up to
 * `SMALL_AT_ONCE` of them run beside the `concurrency` larger ones, so that a burst of small
 * deliveries (a nightly `upload --history`) is analysed as fast as it arrives while a large file
 * still gets its memory to itself. While uploads stream (`busy`), small analyses wait (up to
 * `BUSY_WAIT_MS`, then one at a time): on two cores a burst of tiny uploads keeps the request
 * thread busy, the requests come first, and the analyses catch up once the burst ends.
 *
 * Results of an older `ANALYSIS_VERSION` are run again in the background (`rerunOutdated`),
 * newest deliveries first, after any delivery.
 */
import type { ControlPlane } from "../db/control_plane.ts";
import type { ObjectStore } from "../storage/object_store.ts";
import type { Delivery, DeliveryHub } from "../deliveries.ts";
import type { Metrics } from "../metrics.ts";
import type { Logger } from "../log.ts";
import { describeError } from "../log.ts";
import { SMALL_INPUT_BYTES } from "./aggregate/aggregate.ts";
import { analyseDelivery, outdatedDeliveries } from "./analyse_delivery.ts";
import type { TallyWorkers } from "./aggregate/tally_workers.ts";

/** Small datasets analysed at the same time (beside the larger ones). */
export const SMALL_AT_ONCE = 8;
/** Longest a small analysis waits for uploads to stop streaming before it runs anyway. */
export const BUSY_WAIT_MS = 5_000;
/** How often a waiting queue looks again whether uploads stopped. */
export const BUSY_POLL_MS = 20;

/**
 * Logs that a delivery could not be admitted (the database could not say or record it); the
 * timer's scan offers it again. Shared by both queues.
 */
export function notQueued(log: Logger, delivery: Delivery): (error: unknown) => void {
  return (error) =>
    log.warn("analysis not queued: the database failed; the next scan retries it", {
      org_id: delivery.orgId,
      experiment_id: delivery.experimentId,
      error: describeError(error),
    });
}

/** What the wiring, the scan and tests see of either analysis queue. */
export interface AnalysisScheduler {
  /** Offers a delivery for analysis (never throws; a failure is logged and retried later). */
  enqueue(delivery: Delivery): void;
  /** True when a delivery with this ETag is queued or running here. */
  inFlight(orgId: string, experimentId: string, etag: string): boolean;
  /**
   * Queues, in the background, a re-run of every ready result made by an older analysis
   * (`ANALYSIS_VERSION`), newest deliveries first; answers how many were offered.
   */
  rerunOutdated(): Promise<number>;
  /**
   * True while a delivery over `SMALL_INPUT_BYTES` waits here for its run: another large
   * analysis follows the one under way (see `TallyWorkers`).
   */
  largeWaiting(): boolean;
  /** Resolves when nothing is admitted, queued or running in this process. */
  whenIdle(): Promise<void>;
  /** Stops taking work and waits for the runs under way. */
  stop(): Promise<void>;
}

export interface AnalysisQueueOptions {
  db: ControlPlane;
  store: ObjectStore;
  deliveries: DeliveryHub;
  metrics: Metrics;
  maxUploadBytes: number;
  /** Datasets over `SMALL_INPUT_BYTES` analysed at the same time; default 1. */
  concurrency?: number;
  /** True while uploads are being received (small analyses then wait, see `busyWaitMs`). */
  busy?: () => boolean;
  /** Longest a small analysis waits while `busy` before running anyway; default 5 s. */
  busyWaitMs?: number;
  /** Snapshots kept per experiment (`ABN_HISTORY_MAX_SNAPSHOTS`); default 1000. */
  historyMaxSnapshots?: number;
  /** Where the aggregation's worker waits between runs (see `TallyWorkers`); default nowhere. */
  tallyWorkers?: TallyWorkers;
  log: Logger;
}

export class AnalysisQueue implements AnalysisScheduler {
  #o: AnalysisQueueOptions;
  /** Deliveries waiting to run, by dataset, in order of arrival: small ones and the others. */
  #small = new Map<string, Delivery>();
  #large = new Map<string, Delivery>();
  /** When each small delivery waiting now was queued (`performance.now()`). */
  #smallSince = new Map<string, number>();
  #busyTimer: ReturnType<typeof setTimeout> | undefined;
  /** Re-runs of results made by an older analysis: run when nothing else waits. */
  #upgrades = new Map<string, Delivery>();
  #running = new Map<string, { etag: string; done: Promise<void> }>();
  #runningSmall = 0;
  #unsubscribe: () => void;
  #stopped = false;
  #idle: (() => void)[] = [];
  /** Deliveries being admitted (their database rows read and written), by dataset. */
  #admitting = new Map<string, string>();
  #admissions = 0;

  constructor(options: AnalysisQueueOptions) {
    this.#o = options;
    this.#unsubscribe = options.deliveries.subscribe((d) => this.enqueue(d));
  }

  /** True when a delivery with this ETag is queued or running. */
  inFlight(orgId: string, experimentId: string, etag: string): boolean {
    const id = `${orgId}/${experimentId}`;
    return this.#queued(id)?.info.etag === etag || this.#running.get(id)?.etag === etag;
  }

  largeWaiting(): boolean {
    return this.#large.size > 0;
  }

  enqueue(delivery: Delivery): void {
    if (this.#stopped || delivery.info.size > this.#o.maxUploadBytes) return;
    const id = `${delivery.orgId}/${delivery.experimentId}`;
    const etag = delivery.info.etag;
    if (delivery.source === "upgrade") {
      this.#enqueueUpgrade(id, delivery);
      return;
    }
    // The same object, running, queued or being admitted: join that run (a settings change
    // re-runs it after).
    if (
      delivery.source !== "settings" && (this.#joins(id, etag) || this.#admitting.get(id) === etag)
    ) {
      return;
    }
    this.#admitting.set(id, etag);
    this.#admissions++;
    this.#admit(id, delivery).catch(notQueued(this.#o.log, delivery)).finally(() => {
      this.#admissions--;
      if (this.#admitting.get(id) === etag) this.#admitting.delete(id);
      this.#settle();
    });
  }

  /**
   * Queues the re-run of a ready result made by an older analysis, unless the dataset has a run
   * of its own: its result stays served until the new one is saved.
   */
  #enqueueUpgrade(id: string, delivery: Delivery): void {
    if (this.#running.has(id) || this.#queued(id) !== undefined || this.#admitting.has(id)) return;
    this.#upgrades.set(id, delivery);
    this.#pump();
  }

  /**
   * Queues, in the background, a re-run of every ready result made by an older analysis
   * (`ANALYSIS_VERSION`), newest deliveries first; answers how many were queued. A newer
   * delivery of one of them replaces its re-run.
   */
  async rerunOutdated(): Promise<number> {
    const deliveries = await outdatedDeliveries(this.#o.db);
    for (const delivery of deliveries) this.enqueue(delivery);
    return deliveries.length;
  }

  #joins(id: string, etag: string): boolean {
    return this.#running.get(id)?.etag === etag || this.#queued(id)?.info.etag === etag;
  }

  #queued(id: string): Delivery | undefined {
    return this.#small.get(id) ?? this.#large.get(id);
  }

  /** Records the delivery as pending (unless its result is saved already) and queues it. */
  async #admit(id: string, delivery: Delivery): Promise<void> {
    const { orgId, experimentId, info } = delivery;
    const rerun = delivery.source === "settings";
    const row = await this.#o.db.analyses.get(orgId, experimentId);
    const same = row?.etag === info.etag;
    if (same && row?.status !== "pending" && !rerun) return;
    // A newer delivery of this dataset was announced meanwhile: it wins.
    if (this.#admitting.get(id) !== info.etag) return;
    if (!same || rerun) {
      await this.#o.db.analyses.markPending(
        orgId,
        experimentId,
        info.etag,
        info.size,
        info.lastModified.toISOString(),
      );
    }
    if (this.#stopped || (!rerun && this.#joins(id, info.etag))) return;
    const queued = this.#queued(id);
    if (queued?.info.etag === info.etag) {
      delivery = {
        ...delivery,
        validated: delivery.validated || queued.validated,
        sha256: delivery.sha256 ?? queued.sha256,
      };
    }
    this.#small.delete(id);
    this.#large.delete(id);
    // A run of its own replaces a re-run of an older result (a delivery that finds the result
    // saved, e.g. the start-up reconciliation's, leaves the re-run queued).
    this.#upgrades.delete(id);
    if (delivery.info.size <= SMALL_INPUT_BYTES) {
      this.#small.set(id, delivery);
      if (!this.#smallSince.has(id)) this.#smallSince.set(id, performance.now());
    } else {
      this.#large.set(id, delivery);
      this.#smallSince.delete(id);
    }
    this.#pump();
  }

  /** How many small analyses may run now: none while uploads stream, unless one waited long. */
  #smallLimit(): number {
    if (!this.#o.busy?.()) return SMALL_AT_ONCE;
    const oldest = this.#smallSince.values().next().value;
    const wait = this.#o.busyWaitMs ?? BUSY_WAIT_MS;
    if (oldest !== undefined && performance.now() - oldest > wait) return 1;
    // Look again soon: nothing else may wake the queue when uploads stop.
    if (this.#small.size > 0 && this.#busyTimer === undefined && !this.#stopped) {
      this.#busyTimer = setTimeout(() => {
        this.#busyTimer = undefined;
        this.#pump();
      }, BUSY_POLL_MS);
    }
    return 0;
  }

  #pump(): void {
    const limit = this.#o.concurrency ?? 1;
    const smallLimit = this.#small.size > 0 ? this.#smallLimit() : 0;
    for (const small of [true, false]) {
      const queue = small ? this.#small : this.#large;
      for (const [id, delivery] of queue) {
        const running = small ? this.#runningSmall : this.#running.size - this.#runningSmall;
        if (running >= (small ? smallLimit : limit)) break;
        if (this.#running.has(id)) continue; // its dataset's previous run first
        queue.delete(id);
        if (small) this.#smallSince.delete(id);
        this.#start(id, delivery, small);
      }
    }
    // Re-runs of older results wait while deliveries do (even ones held back by a run of their
    // dataset, or waiting for uploads to stop), then run one at a time.
    if (this.#small.size > 0 || this.#large.size > 0 || this.#admissions > 0) return;
    for (const [id, delivery] of this.#upgrades) {
      if (this.#running.size >= limit) return;
      if (this.#running.has(id)) continue;
      this.#upgrades.delete(id);
      this.#start(id, delivery, false);
    }
  }

  #start(id: string, delivery: Delivery, small: boolean): void {
    if (small) this.#runningSmall++;
    const done = this.#run(delivery).finally(() => {
      this.#running.delete(id);
      if (small) this.#runningSmall--;
      this.#pump();
      this.#settle();
    });
    this.#running.set(id, { etag: delivery.info.etag, done });
  }

  #isIdle(): boolean {
    return this.#running.size === 0 && this.#small.size === 0 && this.#large.size === 0 &&
      this.#upgrades.size === 0 &&
      this.#admissions === 0;
  }

  /** Wakes those waiting for idleness once nothing is admitted, queued or running. */
  #settle(): void {
    if (this.#isIdle()) { for (const resolve of this.#idle.splice(0)) resolve(); }
  }

  /** Resolves when nothing is admitted, queued or running (tests, shutdown). */
  whenIdle(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  async #run(delivery: Delivery): Promise<void> {
    const result = await analyseDelivery(this.#o, delivery);
    // Replaced since it was announced: what is there now is a delivery (recorded, analysed; for
    // a re-run of an older result: nothing more). `postponed`: the row stays `pending`, and the
    // timer's scan runs it again.
    if (result.kind === "replaced" && delivery.source !== "upgrade") {
      void this.#o.deliveries.deliver({
        ...delivery,
        info: result.info,
        source: "scan",
        sha256: undefined,
      });
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribe();
    this.#small.clear();
    this.#large.clear();
    this.#smallSince.clear();
    clearTimeout(this.#busyTimer);
    this.#upgrades.clear();
    await Promise.all([...this.#running.values()].map((r) => r.done.catch(() => {})));
  }
}
