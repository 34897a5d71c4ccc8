/**
 * Wiring, in one place: configuration → database → storage → catalog → uploads → application, and
 * the background work started with them (the start-up sweep, the embedded timer's reconciliation,
 * grant scan and clean-up, the analysis queue). Used by `main.ts serve` and by tests that run the
 * real server in-process.
 *
 * What differs when several instances share the control plane comes from its capabilities, not
 * from asking which driver it is: the timer's jobs run under `withTimerLock` (on one instance at
 * a time), the URL-signing secret comes from `secrets` (the same on every instance), and a
 * control plane with `jobs` gets the leased analysis queue instead of the in-memory one.
 */
import type { Config } from "./config.ts";
import { openControlPlane } from "./db/open_control_plane.ts";
import type { ControlPlane } from "./db/control_plane.ts";
import { LastUsedRecorder } from "./db/api_keys.ts";
import { Gauge, Metrics } from "./metrics.ts";
import { DeliveryHub } from "./deliveries.ts";
import type { ObjectStore } from "./storage/object_store.ts";
import { LocalStore } from "./storage/local_store.ts";
import { UrlSigner } from "./crypto/url_signer.ts";
import type { AppHandler } from "./http/context.ts";
import { createApp } from "./app.ts";
import { RateLimiter } from "./http/rate_limiter.ts";
import { Uploads } from "./upload/upload.ts";
import { TALLY_WORKER_LINGER_MS, TallyWorkers } from "./analysis/aggregate/tally_workers.ts";
import { apiRoutes } from "./routes/mod.ts";
import type { AppDeps, AppRoutes } from "./routes/deps.ts";
import { createLogger } from "./log.ts";
import type { Logger, LogSink } from "./log.ts";
import { describeError } from "./log.ts";
import { AnalysisQueue } from "./analysis/analysis_queue.ts";
import type { AnalysisScheduler } from "./analysis/analysis_queue.ts";
import { LeasedAnalysisQueue } from "./analysis/leased_analysis_queue.ts";
import { NOT_RUN, PeriodicJob } from "./jobs/periodic_job.ts";
import { cleanup, countOversize, scanDeliveries } from "./jobs/storage_jobs.ts";
import { DatasetCatalog } from "./catalog/dataset_catalog.ts";
import { GrantRecorder } from "./catalog/grant_recorder.ts";
import { reconcile } from "./catalog/reconcile.ts";

export interface Service {
  config: Readonly<Config>;
  db: ControlPlane;
  store: ObjectStore;
  metrics: Metrics;
  deliveries: DeliveryHub;
  analysis: AnalysisScheduler;
  catalog: DatasetCatalog;
  /** The timer's jobs (tests run them at will). */
  jobs: { scan: PeriodicJob; cleanup: PeriodicJob; reconcile: PeriodicJob };
  log: Logger;
  handler: AppHandler;
  /** Stops timers and background work; closes the database. */
  close(): Promise<void>;
}

export interface ServiceOptions {
  /** Replaces the storage driver built from the configuration (fault tests). */
  store?: ObjectStore;
  /** Where log lines go; default batched writes to stdout. */
  log?: LogSink;
  /** Extra routes (tests). */
  routes?: AppRoutes[];
}

/** The storage driver the configuration names. */
async function buildStore(config: Readonly<Config>, signer: UrlSigner): Promise<ObjectStore> {
  const store = config.storage === "s3"
    // Loaded on demand: the AWS SDK is only paid for when S3 is configured.
    ? new (await import("./storage/s3/s3_store.ts")).S3Store({
      endpoint: config.s3.endpoint,
      publicEndpoint: config.s3.publicEndpoint,
      region: config.s3.region,
      bucket: config.s3.bucket,
      accessKeyId: config.s3.accessKeyId,
      secretAccessKey: config.s3.secretAccessKey,
      forcePathStyle: config.s3.forcePathStyle,
      createBucket: config.s3.createBucket,
    })
    : new LocalStore({ dataDir: config.dataDir, signer, publicUrl: config.publicUrl });
  return store;
}

export async function createService(
  config: Readonly<Config>,
  options: ServiceOptions = {},
): Promise<Service> {
  await Deno.mkdir(config.dataDir, { recursive: true });
  const db = await openControlPlane(config);
  let store: ObjectStore;
  let signer: UrlSigner;
  try {
    signer = new UrlSigner(await db.secrets.getOrCreate("url-signing"));
    store = options.store ?? await buildStore(config, signer);
    await store.open();
  } catch (error) {
    await db.close();
    throw error;
  }
  const log = createLogger({ sink: options.log });
  const metrics = new Metrics();
  const catalog = new DatasetCatalog({ db, log });
  const deliveries = new DeliveryHub({ log, catalog, db });
  // Only S3 needs grants: local upload URLs are PUT through this process, which delivers them.
  const grants = store.driver === "s3" ? new GrantRecorder({ db, log }) : undefined;
  // The aggregation's worker, kept between large analyses in a row, and their memory while
  // another large analysis is on its way (an upload streams, or a large delivery waits).
  const tallyWorkers = new TallyWorkers(
    TALLY_WORKER_LINGER_MS,
    (): boolean => uploads.inProgress > 0 || analysis.largeWaiting(),
  );
  const uploads = new Uploads({
    store,
    metrics,
    deliveries,
    maxUploadBytes: config.maxUploadBytes,
    bodyIdleTimeoutSeconds: config.bodyIdleTimeoutSeconds,
    bodyMinBytesPerSecond: config.bodyMinBytesPerSecond,
    maxConcurrentUploads: config.maxConcurrentUploads,
  });
  const recorder = new LastUsedRecorder(db);
  const deps: AppDeps = {
    config,
    db,
    store,
    metrics,
    recorder,
    deliveries,
    catalog,
    grants,
    signer,
    uploads,
    rateLimiter: config.rateLimitPerMinute > 0
      ? new RateLimiter(config.rateLimitPerMinute)
      : undefined,
    log,
  };
  metrics.add(
    new Gauge(
      "abn_uploads_in_progress",
      "Upload bodies streaming now (direct uploads and local upload URLs)",
      () => uploads.inProgress,
    ),
    // What the process holds: all of it, and of it the main thread's JavaScript heap and the
    // memory outside it (the analysis's typed arrays and the upload buffers of that thread).
    new Gauge(
      "abn_process_resident_memory_bytes",
      "Resident memory of the whole process (all threads), bytes",
      () => Deno.memoryUsage().rss,
    ),
    new Gauge(
      "abn_js_heap_used_bytes",
      "JavaScript heap in use on the service's main thread, bytes",
      () => Deno.memoryUsage().heapUsed,
    ),
    new Gauge(
      "abn_js_external_memory_bytes",
      "Memory of the main thread's ArrayBuffers and other objects outside its heap, bytes",
      () => Deno.memoryUsage().external,
    ),
  );

  await startupSweep(store, log);
  const queueOptions = {
    db,
    store,
    deliveries,
    metrics,
    maxUploadBytes: config.maxUploadBytes,
    busy: () => uploads.busy,
    historyMaxSnapshots: config.historyMaxSnapshots,
    // Large analyses in a row reuse the aggregation's worker and its memory.
    tallyWorkers,
    log,
  };
  const analysis: AnalysisScheduler = db.jobs
    ? new LeasedAnalysisQueue({
      ...queueOptions,
      jobs: db.jobs,
      leaseSeconds: config.analysisLeaseSeconds,
    })
    : new AnalysisQueue(queueOptions);
  // Results of an older analysis are run again in the background, after any new delivery.
  analysis.rerunOutdated().then((queued) => {
    if (queued > 0) log.info("re-running analyses made by an older version", { queued });
  }, (error) => log.warn("older analyses not re-run", { error: describeError(error) }));
  // Timer work runs on one instance at a time (every step is idempotent all the same).
  const scan = new PeriodicJob({
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
  const reconciler = new PeriodicJob({
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
      // Another instance reconciles the shared catalog now: this one's list reads storage until
      // a reconciliation of its own finished, tried again at the retry's pace.
      if (result === undefined) return first ? NOT_RUN : undefined;
      if (first) await warnOversize(db, config, log);
      catalog.markReady();
      return result.delivered + result.removed > 0 || first ? { ...result } : undefined;
    },
  });
  const clean = new PeriodicJob({
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
  reconciler.start();
  scan.start();
  clean.start();

  const handler = createApp(deps, [...apiRoutes, ...(options.routes ?? [])]);
  return {
    config,
    db,
    store,
    metrics,
    deliveries,
    analysis,
    catalog,
    jobs: { scan, cleanup: clean, reconcile: reconciler },
    log,
    handler,
    async close() {
      await reconciler.stop();
      await scan.stop();
      await clean.stop();
      await analysis.stop();
      tallyWorkers.stop();
      await grants?.flush();
      await recorder.flush();
      log.flush();
      await db.close();
    },
  };
}

/** Sweeps leftovers of interrupted uploads. */
async function startupSweep(store: ObjectStore, log: Logger): Promise<void> {
  const swept = await store.sweep().catch(() => 0);
  if (swept > 0) log.info("swept leftovers of interrupted uploads", { swept });
}

/** Warns about stored datasets over the limit (once the start-up reconciliation has run). */
async function warnOversize(db: ControlPlane, config: Readonly<Config>, log: Logger) {
  const oversize = await countOversize(db, config.maxUploadBytes).catch(() => 0);
  if (oversize > 0) {
    log.warn(
      `${oversize} stored dataset(s) exceed ABN_MAX_UPLOAD_BYTES=${config.maxUploadBytes}; the clean-up will delete them`,
      { oversize },
    );
  }
}
