/**
 * Runs the analysis after every delivery, in the background: at most one run per dataset at a
 * time, newest delivery wins, results saved in SQLite keyed by the object's ETag. One run per
 * delivery: a request, a scan or an event for the ETag being analysed (or already queued) joins
 * that run; a settings change for it queues one re-run, afterwards.
 *
 * Datasets up to `SMALL_INPUT_BYTES` are read on this thread in about a millisecond; up to
 * `SMALL_AT_ONCE` of them run beside the `concurrency` larger ones, so that a burst of small
 * deliveries (a nightly `upload --history`) is analysed as fast as it arrives while a large file
 * still gets its memory to itself. While uploads stream (`busy`), small analyses wait (up to
 * `BUSY_WAIT_MS`, then one at a time): on two cores a burst of tiny uploads keeps the request
 * thread busy, the requests come first, and the analyses catch up once the burst ends.
 *
 * A ready run also keeps the experiment's history: a snapshot per delivered content (keyed by its
 * SHA-256, from the upload or hashed here while reading), and the delivery's per-user summary,
 * which the next delivery is compared with (`changes`). Results of an older `ANALYSIS_VERSION` are
 * run again in the background (`rerunOutdated`), newest deliveries first, after any delivery.
 */
import { createHash } from "node:crypto";
import type { ControlPlane, DeliverySummaryRow } from "../db/control_plane.ts";
import { DatabaseUnavailable } from "../db/control_plane.ts";
import type { ObjectStore } from "../storage/object_store.ts";
import { StorageError } from "../storage/object_store.ts";
import type { Delivery, DeliveryHub } from "../deliveries.ts";
import type { Metrics } from "../metrics.ts";
import type { Logger } from "../log.ts";
import { describeError } from "../log.ts";
import { ApiError } from "../http/errors.ts";
import { SMALL_INPUT_BYTES } from "./aggregate/aggregate.ts";
import { datasetKey } from "../storage/object_store.ts";
import { aggregateDelivery } from "./aggregate_delivery.ts";
import { ANALYSIS_VERSION, buildReport } from "./report.ts";
import { validateSettings } from "./settings.ts";
import {
  type Changes,
  compareDeliveries,
  decodeDeliverySummary,
  deliverySummaryOf,
  encodeDeliverySummary,
} from "./history/delivery_summary.ts";
import { snapshotFigures } from "./history/snapshot.ts";
import { releaseBuffers } from "../buffers.ts";

/** The phases of a run that its `analysis finished` line times (see `RunPhases`). */
type Phase = "read" | "load" | "aggregate" | "report" | "save";

/**
 * Milliseconds per phase of one run: `read` (awaiting the stored bytes, wherever it happens),
 * `load` (the settings and the previous delivery's summary from the database), `aggregate` (the
 * aggregation, with the validation of a two-step delivery and the hashing of its bytes),
 * `report` (the report and the comparison with the previous delivery), `save` (the result and
 * the history written to the database).
 */
class RunPhases {
  /** Time spent awaiting storage: `aggregateDelivery` adds to it (see its `waited`). */
  readonly waited = { ms: 0 };
  readonly ms: Record<Phase, number> = { read: 0, load: 0, aggregate: 0, report: 0, save: 0 };
  #phase: Phase = "read";
  #since = performance.now();
  #waitedBefore = 0;

  /** Ends the current phase (its time awaiting storage counted as `read`) and starts `next`. */
  enter(next: Phase): void {
    const now = performance.now();
    const waited = this.waited.ms - this.#waitedBefore;
    this.ms[this.#phase] += now - this.#since - waited;
    this.ms.read += waited;
    this.#waitedBefore = this.waited.ms;
    this.#since = now;
    this.#phase = next;
  }

  /** The log line's fields, whole milliseconds. */
  fields(): Record<`${Phase}_ms`, number> {
    const ms = this.ms;
    return {
      read_ms: Math.round(ms.read),
      load_ms: Math.round(ms.load),
      aggregate_ms: Math.round(ms.aggregate),
      report_ms: Math.round(ms.report),
      save_ms: Math.round(ms.save),
    };
  }
}

/** Small datasets analysed at the same time (beside the larger ones). */
const SMALL_AT_ONCE = 8;
/** Longest a small analysis waits for uploads to stop streaming before it runs anyway. */
const BUSY_WAIT_MS = 5_000;
/** How often a waiting queue looks again whether uploads stopped. */
const BUSY_POLL_MS = 20;

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
  log: Logger;
}

export class AnalysisQueue {
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

  enqueue(delivery: Delivery): void {
    if (this.#stopped || delivery.info.size > this.#o.maxUploadBytes) return;
    const id = `${delivery.orgId}/${delivery.experimentId}`;
    const etag = delivery.info.etag;
    if (delivery.source === "upgrade") {
      this.#enqueueUpgrade(id, delivery);
      return;
    }
    this.#upgrades.delete(id);
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
    const rows = await this.#o.db.analyses.outdated(ANALYSIS_VERSION);
    for (const row of rows) {
      const key = datasetKey(row.org_id, row.experiment_id);
      this.enqueue({
        orgId: row.org_id,
        experimentId: row.experiment_id,
        key,
        info: {
          key,
          size: row.size_bytes,
          etag: row.etag,
          lastModified: new Date(row.delivered_at),
        },
        // A ready result means the stored bytes passed the upload checks.
        validated: true,
        source: "upgrade",
      });
    }
    return rows.length;
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
    const { db, store, metrics } = this.#o;
    const log = this.#o.log;
    const startedAt = new Date().toISOString();
    const t0 = performance.now();
    const phases = new RunPhases();
    const { orgId, experimentId, key } = delivery;
    let etag = delivery.info.etag;
    let outcome: {
      status: "ready" | "failed";
      error: string | null;
      rows: number | null;
      result: unknown;
      version: number;
    };
    /** What the history keeps of a ready run, once its result is saved. */
    let history: (() => Promise<void>) | null = null;
    /** Large arrays of this run only (user hashes, summary blobs), freed at its end. */
    const scratch: (ArrayBufferView | null | undefined)[] = [];
    try {
      const object = await store.get(key);
      if (!object) return; // deleted meanwhile
      if (object.info.etag !== etag) {
        // Replaced since it was announced: what is there now is a delivery (recorded, analysed;
        // for a re-run of an older result: nothing more).
        await object.body.cancel();
        if (delivery.source !== "upgrade") {
          void this.#o.deliveries.deliver({
            ...delivery,
            info: object.info,
            source: "scan",
            sha256: undefined,
          });
        }
        return;
      }
      etag = object.info.etag;
      phases.enter("load");
      const settings = validateSettings((await db.settings.get(orgId, experimentId)) ?? {});
      const previous = await db.deliverySummaries.get(orgId, experimentId);
      // The content's SHA-256: from the upload, from the last run of this object, or read here.
      const known = delivery.sha256 ?? (previous?.etag === etag ? previous.sha256 : undefined);
      const hash = known === undefined ? createHash("sha256") : null;
      phases.enter("aggregate");
      // A two-step delivery is validated beside the reading: a refusal is the upload check's.
      const aggregate = await aggregateDelivery(object.body, {
        validated: delivery.validated,
        metricKinds: settings.metric_kinds,
        covariates: settings.covariates,
        winsorize: settings.winsorize,
        sizeBytes: object.info.size,
        keyMetric: settings.key_metric,
        userSummary: true,
        onChunk: hash === null ? undefined : (chunk) => hash.update(chunk),
        waited: phases.waited,
      });
      const sha256 = known ?? hash!.digest("hex");
      phases.enter("report");
      const rows = aggregate.rows;
      const summary = deliverySummaryOf(aggregate);
      const users = summary.users;
      scratch.push(users.hi, users.lo, users.variant, previous?.summary);
      const sameContent = previous?.sha256 === sha256;
      let changes: Changes | null = null;
      if (previous && sameContent) {
        // The same bytes again (a re-run, or a re-delivery): what they changed, as found then.
        changes = previous.changes === null ? null : JSON.parse(previous.changes);
      } else if (previous) {
        const before = decodeDeliverySummary(previous.summary);
        scratch.push(before?.users.hi, before?.users.variant);
        if (before !== null) {
          changes = compareDeliveries(before, summary, previous.etag, previous.delivered_at);
        }
      }
      const report = buildReport(aggregate, settings, { changes });
      // `_data` keeps what settings are checked against (variants, metrics), not served as such.
      const data = { ...aggregate, daily: [], dimensions: [], userSummary: null };
      outcome = {
        status: "ready",
        error: null,
        rows,
        result: { ...report, _data: data },
        version: ANALYSIS_VERSION,
      };
      const deliveredAt = object.info.lastModified.toISOString();
      history = async () => {
        if (!sameContent || previous?.etag !== etag) {
          const row: DeliverySummaryRow = {
            etag,
            sha256,
            delivered_at: deliveredAt,
            summary: encodeDeliverySummary(summary),
            changes: report.changes === null ? null : JSON.stringify(report.changes),
          };
          scratch.push(row.summary);
          await db.deliverySummaries.save(orgId, experimentId, row);
        }
        await db.history.record(orgId, experimentId, {
          sha256,
          etag,
          delivered_at: deliveredAt,
          analysed_at: new Date().toISOString(),
          figures: JSON.stringify(snapshotFigures(report, rows)),
        }, this.#o.historyMaxSnapshots ?? 1000);
      };
    } catch (error) {
      if (error instanceof StorageError || error instanceof DatabaseUnavailable) {
        // Transient: the row stays `pending`, and the timer's scan runs it again.
        metrics.analysisRuns.inc({ outcome: "retry" });
        const failed = error instanceof StorageError ? "storage" : "the database";
        log.warn(`analysis postponed: ${failed} failed; the next scan retries it`, {
          org_id: orgId,
          experiment_id: experimentId,
          error: error.message,
        });
        return;
      }
      if (error instanceof ApiError) {
        outcome = {
          status: "failed",
          error: error.message,
          rows: null,
          result: null,
          version: ANALYSIS_VERSION,
        };
      } else {
        log.error("analysis failed", {
          org_id: orgId,
          experiment_id: experimentId,
          error: describeError(error),
        });
        outcome = {
          status: "failed",
          error: "The analysis failed unexpectedly; it will run again after the next delivery",
          rows: null,
          result: null,
          version: ANALYSIS_VERSION,
        };
      }
    }
    const seconds = (performance.now() - t0) / 1000;
    metrics.analysisRuns.inc({ outcome: outcome.status });
    metrics.analysisSeconds.observe(seconds);
    phases.enter("save");
    let saved = false;
    try {
      saved = await db.analyses.saveResult(orgId, experimentId, etag, outcome, startedAt);
    } catch (error) {
      // Not saved: the row stays `pending`, and the timer's scan runs the analysis again.
      log.error("analysis result not saved", {
        org_id: orgId,
        experiment_id: experimentId,
        error: describeError(error),
      });
    }
    if (saved && history !== null) {
      try {
        await history();
      } catch (error) {
        // The result stands; the history misses this delivery (the next one compares with the
        // delivery before it).
        log.error("analysis history not saved", {
          org_id: orgId,
          experiment_id: experimentId,
          error: describeError(error),
        });
      }
    }
    // Freed now rather than at a garbage collection an idle service would not run.
    releaseBuffers(...scratch);
    phases.enter("save");
    log.info("analysis finished", {
      org_id: orgId,
      experiment_id: experimentId,
      etag,
      source: delivery.source,
      status: outcome.status,
      duration_ms: Math.round(seconds * 1000),
      ...phases.fields(),
    });
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
