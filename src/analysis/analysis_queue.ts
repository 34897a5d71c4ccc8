/**
 * Runs the analysis after every delivery, in the background, in this process (the control plane
 * has no shared jobs: SQLite): at most one run per dataset at a time, newest delivery wins,
 * results saved keyed by the object's ETag. One run per delivery: a request, a scan or an event
 * for the ETag being analysed (or already queued) joins that run; a settings change for it
 * queues one re-run, afterwards. A direct upload's analysis starts right after its commit.
 */
import type { ControlPlane } from "../db/control_plane.ts";
import type { ObjectStore } from "../storage/object_store.ts";
import type { Delivery, DeliveryHub } from "../deliveries.ts";
import type { Metrics } from "../metrics.ts";
import type { Logger } from "../log.ts";
import { describeError } from "../log.ts";
import { analyseDelivery } from "./analyse_delivery.ts";

/** What the wiring, the scan and tests see of either analysis queue. */
export interface AnalysisScheduler {
  /** Offers a delivery for analysis (never throws; a failure is logged and retried later). */
  enqueue(delivery: Delivery): void;
  /** True when a delivery with this ETag is queued or running here. */
  inFlight(orgId: string, experimentId: string, etag: string): boolean;
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
  /** Datasets analysed at the same time; default 1. */
  concurrency?: number;
  log: Logger;
}

export class AnalysisQueue implements AnalysisScheduler {
  #o: AnalysisQueueOptions;
  #queue = new Map<string, Delivery>();
  #running = new Map<string, { etag: string; done: Promise<void> }>();
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
    return this.#queue.get(id)?.info.etag === etag || this.#running.get(id)?.etag === etag;
  }

  enqueue(delivery: Delivery): void {
    if (this.#stopped || delivery.info.size > this.#o.maxUploadBytes) return;
    const id = `${delivery.orgId}/${delivery.experimentId}`;
    const etag = delivery.info.etag;
    // The same object, running, queued or being admitted: join that run (a settings change
    // re-runs it after).
    if (
      delivery.source !== "settings" && (this.#joins(id, etag) || this.#admitting.get(id) === etag)
    ) {
      return;
    }
    this.#admitting.set(id, etag);
    this.#admissions++;
    this.#admit(id, delivery).catch((error) => {
      // The database could not say or record it: the timer's scan offers it again.
      this.#o.log.warn("analysis not queued: the database failed; the next scan retries it", {
        org_id: delivery.orgId,
        experiment_id: delivery.experimentId,
        error: describeError(error),
      });
    }).finally(() => {
      this.#admissions--;
      if (this.#admitting.get(id) === etag) this.#admitting.delete(id);
      this.#settle();
    });
  }

  #joins(id: string, etag: string): boolean {
    return this.#running.get(id)?.etag === etag || this.#queue.get(id)?.info.etag === etag;
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
    const queued = this.#queue.get(id);
    if (queued?.info.etag === info.etag && queued.validated) {
      delivery = { ...delivery, validated: true };
    }
    this.#queue.set(id, delivery);
    this.#pump();
  }

  #pump(): void {
    const limit = this.#o.concurrency ?? 1;
    for (const [id, delivery] of this.#queue) {
      if (this.#running.size >= limit) break;
      if (this.#running.has(id)) continue;
      this.#queue.delete(id);
      const done = this.#run(delivery).finally(() => {
        this.#running.delete(id);
        this.#pump();
        this.#settle();
      });
      this.#running.set(id, { etag: delivery.info.etag, done });
    }
  }

  #isIdle(): boolean {
    return this.#running.size === 0 && this.#queue.size === 0 && this.#admissions === 0;
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
    // Replaced since it was announced: analyse what is there now.
    if (result.kind === "replaced") {
      this.enqueue({ ...delivery, info: result.info, source: "scan" });
    }
    // `postponed`: the row stays `pending`, and the timer's scan runs it again.
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribe();
    this.#queue.clear();
    await Promise.all([...this.#running.values()].map((r) => r.done.catch(() => {})));
  }
}
