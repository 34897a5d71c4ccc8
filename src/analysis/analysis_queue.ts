/**
 * Runs the analysis after every delivery, in the background: at most one run per dataset at a
 * time, newest delivery wins, results saved in SQLite keyed by the object's ETag.
 */
import type { Database } from "../db/database.ts";
import type { ObjectStore } from "../storage/object_store.ts";
import { StorageError } from "../storage/object_store.ts";
import type { Delivery, DeliveryHub } from "../deliveries.ts";
import type { Metrics } from "../metrics.ts";
import { ApiError } from "../http/errors.ts";
import { getAnalysis, markPending, saveResult } from "../db/analyses.ts";
import { getSettings } from "../db/settings.ts";
import { aggregateDelivery } from "./aggregate_delivery.ts";
import { buildReport } from "./report.ts";
import { validateSettings } from "./settings.ts";

export interface AnalysisServiceOptions {
  db: Database;
  store: ObjectStore;
  deliveries: DeliveryHub;
  metrics: Metrics;
  maxUploadBytes: number;
  /** Datasets analysed at the same time; default 1. */
  concurrency?: number;
  log?: (line: string) => void;
}

export class AnalysisService {
  #o: AnalysisServiceOptions;
  #queue = new Map<string, Delivery>();
  #running = new Map<string, { etag: string; done: Promise<void> }>();
  #unsubscribe: () => void;
  #stopped = false;
  #idle: (() => void)[] = [];

  constructor(options: AnalysisServiceOptions) {
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
    const row = getAnalysis(this.#o.db, delivery.orgId, delivery.experimentId);
    const same = row?.etag === delivery.info.etag;
    if (same && row?.status !== "pending" && delivery.source !== "settings") return;
    if (!same || delivery.source === "settings") {
      markPending(
        this.#o.db,
        delivery.orgId,
        delivery.experimentId,
        delivery.info.etag,
        delivery.info.size,
        delivery.info.lastModified.toISOString(),
      );
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
        if (this.#running.size === 0 && this.#queue.size === 0) {
          for (const resolve of this.#idle.splice(0)) resolve();
        }
      });
      this.#running.set(id, { etag: delivery.info.etag, done });
    }
  }

  /** Resolves when nothing is queued or running (tests, shutdown). */
  whenIdle(): Promise<void> {
    if (this.#running.size === 0 && this.#queue.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  async #run(delivery: Delivery): Promise<void> {
    const { db, store, metrics } = this.#o;
    const log = this.#o.log ?? ((line: string) => console.log(line));
    const startedAt = new Date().toISOString();
    const t0 = performance.now();
    const { orgId, experimentId, key } = delivery;
    let etag = delivery.info.etag;
    let outcome: {
      status: "ready" | "failed";
      error: string | null;
      rows: number | null;
      result: unknown;
    };
    try {
      const object = await store.get(key);
      if (!object) return; // deleted meanwhile
      if (object.info.etag !== etag) {
        // Replaced since it was announced: analyse what is there now.
        await object.body.cancel();
        this.enqueue({ ...delivery, info: object.info, source: "scan" });
        return;
      }
      etag = object.info.etag;
      const settings = validateSettings(getSettings(db, orgId, experimentId) ?? {});
      // A two-step delivery is validated beside the reading: a refusal is the upload check's.
      const aggregate = await aggregateDelivery(object.body, {
        validated: delivery.validated,
        metricKinds: settings.metric_kinds,
      });
      const rows = aggregate.rows;
      const report = buildReport(aggregate, settings);
      // `_data` keeps what settings are checked against (variants, metrics), not served as such.
      const data = { ...aggregate, daily: [] };
      outcome = { status: "ready", error: null, rows, result: { ...report, _data: data } };
    } catch (error) {
      if (error instanceof StorageError) {
        // Transient: the row stays `pending`, and the timer's scan runs it again.
        metrics.analysisRuns.inc({ outcome: "retry" });
        log(JSON.stringify({
          level: "warn",
          time: new Date().toISOString(),
          msg: "analysis postponed: storage failed; the next scan retries it",
          org_id: orgId,
          experiment_id: experimentId,
          error: error.message,
        }));
        return;
      }
      if (error instanceof ApiError) {
        outcome = { status: "failed", error: error.message, rows: null, result: null };
      } else {
        log(JSON.stringify({
          level: "error",
          msg: "analysis failed",
          org_id: orgId,
          experiment_id: experimentId,
          error: error instanceof Error ? `${error.message}\n${error.stack}` : String(error),
        }));
        outcome = {
          status: "failed",
          error: "The analysis failed unexpectedly; it will run again after the next delivery",
          rows: null,
          result: null,
        };
      }
    }
    const seconds = (performance.now() - t0) / 1000;
    metrics.analysisRuns.inc({ outcome: outcome.status });
    metrics.analysisSeconds.observe(seconds);
    saveResult(db, orgId, experimentId, etag, outcome, startedAt);
    log(JSON.stringify({
      level: "info",
      time: new Date().toISOString(),
      msg: "analysis finished",
      org_id: orgId,
      experiment_id: experimentId,
      status: outcome.status,
      duration_ms: Math.round(seconds * 1000),
    }));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribe();
    this.#queue.clear();
    await Promise.all([...this.#running.values()].map((r) => r.done.catch(() => {})));
  }
}
