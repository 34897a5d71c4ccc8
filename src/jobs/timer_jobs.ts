/**
 * The embedded timer's jobs, as functions of what they use: the scan of open grants and pending
 * analyses, the reconciliation of the catalog with storage (at start-up, then rarely), the
 * clean-up, and at start-up the sweep of interrupted uploads and the re-run of results an older
 * analysis made. Timer work runs under `withTimerLock`, on one instance at a time (every step is
 * idempotent all the same). The wiring only starts them (`startTimerJobs`).
 */
import type { Config } from "../config.ts";
import type { ControlPlane } from "../db/control_plane.ts";
import type { DeliveryHub } from "../deliveries.ts";
import type { Logger } from "../log.ts";
import { describeError } from "../log.ts";
import type { Metrics } from "../metrics.ts";
import type { ObjectStore } from "../storage/object_store.ts";
import type { DatasetCatalog } from "../catalog/dataset_catalog.ts";
import type { GrantRecorder } from "../catalog/grant_recorder.ts";
import { reconcile } from "../catalog/reconcile.ts";
import type { AnalysisScheduler } from "../analysis/queue.ts";
import { NOT_RUN, PeriodicJob } from "./periodic_job.ts";
import { cleanup, countOversize, scanDeliveries } from "./storage_jobs.ts";

export interface TimerJobDeps {
  config: Readonly<Config>;
  db: ControlPlane;
  store: ObjectStore;
  deliveries: DeliveryHub;
  catalog: DatasetCatalog;
  /** Upload grants to write before a scan reads them (S3 only). */
  grants?: GrantRecorder;
  analysis: AnalysisScheduler;
  metrics: Metrics;
  log: Logger;
}

export interface TimerJobs {
  scan: PeriodicJob;
  cleanup: PeriodicJob;
  reconcile: PeriodicJob;
  /** Stops the timers and waits for runs under way. */
  stop(): Promise<void>;
}

/** Every `ABN_SCAN_INTERVAL_SECONDS`: two-step deliveries, and pending analyses offered again. */
export function scanJob(deps: TimerJobDeps): PeriodicJob {
  const { config, db, store, deliveries, grants, analysis, metrics, log } = deps;
  return new PeriodicJob({
    name: "scan",
    intervalMs: config.scanIntervalSeconds * 1000,
    firstDelayMs: 100,
    metrics,
    log,
    run: async () => {
      await grants?.flush(); // grants handed out in the last 50 ms too
      const result = await db.withTimerLock("scan", () =>
        scanDeliveries({
          store,
          db,
          deliveries,
          maxUploadBytes: config.maxUploadBytes,
          inFlight: (orgId, experimentId, etag) => analysis.inFlight(orgId, experimentId, etag),
        }));
      return result !== undefined && result.noticed + result.retried > 0 ? result : undefined;
    },
  });
}

/**
 * At start-up, then every `ABN_RECONCILE_INTERVAL_SECONDS`: the catalog compared with a listing
 * of storage. The first one done marks the catalog ready (and warns about datasets over the
 * limit); while another instance holds the lock, this one's list reads storage, and it tries
 * again at the scan's pace.
 */
export function reconcileJob(deps: TimerJobDeps): PeriodicJob {
  const { config, db, store, deliveries, catalog, metrics, log } = deps;
  return new PeriodicJob({
    name: "reconcile",
    intervalMs: config.reconcileIntervalSeconds * 1000,
    firstDelayMs: 0,
    // A failed listing (storage down at start-up) is tried again at the scan's pace, not in an hour.
    retryMs: Math.min(config.reconcileIntervalSeconds, config.scanIntervalSeconds) * 1000,
    metrics,
    log,
    run: async () => {
      const first = !catalog.ready;
      const result = await db.withTimerLock(
        "reconcile",
        () => reconcile({ store, db, deliveries }),
      );
      if (result === undefined) return first ? NOT_RUN : undefined;
      if (first) await warnOversize(deps);
      catalog.markReady();
      return result.delivered + result.removed > 0 || first ? { ...result } : undefined;
    },
  });
}

/** Every `ABN_CLEANUP_INTERVAL_SECONDS`: oversize datasets, leftovers, closed grants. */
export function cleanupJob(deps: TimerJobDeps): PeriodicJob {
  const { config, db, store, metrics, log } = deps;
  return new PeriodicJob({
    name: "cleanup",
    intervalMs: config.cleanupIntervalSeconds * 1000,
    metrics,
    log,
    run: async () => {
      const result = await db.withTimerLock(
        "cleanup",
        () => cleanup({ store, db, metrics, maxUploadBytes: config.maxUploadBytes }),
      );
      return result !== undefined && result.deleted + result.swept + result.grantsPruned > 0
        ? result
        : undefined;
    },
  });
}

/** Sweeps leftovers of interrupted uploads (before the service takes requests). */
export async function startupSweep(store: ObjectStore, log: Logger): Promise<void> {
  const swept = await store.sweep().catch(() => 0);
  if (swept > 0) log.info("swept leftovers of interrupted uploads", { swept });
}

/** Results of an older analysis are run again in the background, after any new delivery. */
export function rerunOutdatedAnalyses(analysis: AnalysisScheduler, log: Logger): void {
  analysis.rerunOutdated().then((queued) => {
    if (queued > 0) log.info("re-running analyses made by an older version", { queued });
  }, (error) => log.warn("older analyses not re-run", { error: describeError(error) }));
}

/** Starts the re-run of older results and the three timers. */
export function startTimerJobs(deps: TimerJobDeps): TimerJobs {
  rerunOutdatedAnalyses(deps.analysis, deps.log);
  const jobs = { scan: scanJob(deps), cleanup: cleanupJob(deps), reconcile: reconcileJob(deps) };
  jobs.reconcile.start();
  jobs.scan.start();
  jobs.cleanup.start();
  return {
    ...jobs,
    async stop() {
      await jobs.reconcile.stop();
      await jobs.scan.stop();
      await jobs.cleanup.stop();
    },
  };
}

/** Warns about stored datasets over the limit (once the start-up reconciliation has run). */
async function warnOversize({ db, config, log }: TimerJobDeps): Promise<void> {
  const oversize = await countOversize(db, config.maxUploadBytes).catch(() => 0);
  if (oversize > 0) {
    log.warn(
      `${oversize} stored dataset(s) exceed ABN_MAX_UPLOAD_BYTES=${config.maxUploadBytes}; the clean-up will delete them`,
      { oversize },
    );
  }
}
