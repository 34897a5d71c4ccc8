/**
 * Wiring, in one place: configuration → database → storage → catalog → uploads → application, and
 * the background work started with them (the start-up sweep, the embedded timer's reconciliation,
 * grant scan and clean-up, the analysis queue). Used by `main.ts serve` and by tests that run the
 * real server in-process.
 *
 * What differs when several instances share the control plane comes from its capabilities, not
 * from asking which driver it is: the timer's jobs (`jobs/timer_jobs.ts`) run under
 * `withTimerLock` (on one instance at a time), the URL-signing secret comes from `secrets` (the
 * same on every instance), and the one analysis queue claims its jobs with leases on both.
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
import { StorageQuotas } from "./upload/quota.ts";
import { apiRoutes } from "./routes/mod.ts";
import type { AppDeps, AppRoutes } from "./routes/deps.ts";
import { createLogger } from "./log.ts";
import type { Logger, LogSink } from "./log.ts";
import { AnalysisQueue } from "./analysis/queue.ts";
import type { AnalysisScheduler } from "./analysis/queue.ts";
import { AnalysisService } from "./analysis/analysis_service.ts";
import type { PeriodicJob } from "./jobs/periodic_job.ts";
import { startTimerJobs, startupSweep } from "./jobs/timer_jobs.ts";
import { DatasetCatalog } from "./catalog/dataset_catalog.ts";
import { GrantRecorder } from "./catalog/grant_recorder.ts";
import { AuditLog } from "./audit/audit_log.ts";
import { WebhookSender } from "./jobs/webhook_sender.ts";
import { auditTrail, type WebhookAudit } from "./webhooks/audit_hook.ts";

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
  /** Sends the webhook outbox's deliveries. */
  webhooks: WebhookSender;
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

/** The control plane, the URL signer (its secret from the database) and the opened storage. */
async function openStores(config: Readonly<Config>, options: ServiceOptions) {
  await Deno.mkdir(config.dataDir, { recursive: true });
  const db = await openControlPlane(config);
  try {
    const signer = new UrlSigner(await db.secrets.getOrCreate("url-signing"));
    const store = options.store ?? await buildStore(config, signer);
    await store.open();
    return { db, signer, store };
  } catch (error) {
    await db.close();
    throw error;
  }
}

/** What receives datasets: the catalog, the delivery hub, S3's grant recorder and the uploads. */
function buildDeliveries(
  config: Readonly<Config>,
  parts: { db: ControlPlane; store: ObjectStore; metrics: Metrics; log: Logger },
) {
  const { db, store, metrics, log } = parts;
  const catalog = new DatasetCatalog({ db, log });
  const deliveries = new DeliveryHub({ log, catalog, db });
  // Only S3 needs grants: local upload URLs are PUT through this process, which delivers them.
  const grants = store.driver === "s3" ? new GrantRecorder({ db, log }) : undefined;
  const quotas = new StorageQuotas({ db, defaultQuotaBytes: config.orgQuotaBytes });
  // A dataset noticed in storage (a two-step delivery on S3, a repair) is not in the usage
  // this process keeps: the next upload of its organization reads it again.
  deliveries.subscribe((d) => {
    if (d.source === "scan" || d.source === "event" || d.source === "reconcile") {
      quotas.forget(d.orgId);
    }
  });
  const uploads = new Uploads({
    store,
    metrics,
    deliveries,
    maxUploadBytes: config.maxUploadBytes,
    bodyIdleTimeoutSeconds: config.bodyIdleTimeoutSeconds,
    bodyMinBytesPerSecond: config.bodyMinBytesPerSecond,
    maxConcurrentUploads: config.maxConcurrentUploads,
    maxConcurrentUploadsPerOrg: config.maxConcurrentUploadsPerOrg,
    quotas,
  });
  return { catalog, deliveries, grants, uploads, quotas };
}

/** The process's gauges: uploads streaming, and its memory. */
function addGauges(metrics: Metrics, uploads: Uploads): void {
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
}

/** The one analysis queue; it claims fewer large jobs while upload bodies stream. */
function buildAnalysis(
  config: Readonly<Config>,
  parts: {
    db: ControlPlane;
    store: ObjectStore;
    deliveries: DeliveryHub;
    metrics: Metrics;
    uploads: Uploads;
    log: Logger;
  },
): AnalysisScheduler {
  const { uploads, ...rest } = parts;
  return new AnalysisQueue({
    ...rest,
    maxUploadBytes: config.maxUploadBytes,
    busy: () => uploads.busy,
    historyMaxSnapshots: config.historyMaxSnapshots,
    leaseSeconds: config.analysisLeaseSeconds,
  });
}

/** The webhook sender: the outbox's deliveries, held back while upload bodies stream. */
function startWebhooks(
  config: Readonly<Config>,
  parts: { db: ControlPlane; metrics: Metrics; log: Logger; uploads: Uploads; audit: AuditLog },
): { sender: WebhookSender; audit: WebhookAudit } {
  const { db, metrics, log, uploads } = parts;
  const audit = auditTrail(parts.audit);
  const sender = new WebhookSender({
    db,
    metrics,
    log,
    audit,
    schedule: config.webhookRetrySchedule,
    timeoutSeconds: config.webhookTimeoutSeconds,
    allowPrivate: config.webhookAllowPrivate,
    busy: () => uploads.busy,
  });
  sender.start();
  return { sender, audit };
}

/** The HTTP application over everything the routes use. */
function buildApp(
  config: Readonly<Config>,
  parts: Omit<AppDeps, "config" | "rateLimiter">,
  routes: AppRoutes[] = [],
): AppHandler {
  const deps: AppDeps = {
    config,
    ...parts,
    rateLimiter: config.rateLimitPerMinute > 0
      ? new RateLimiter(config.rateLimitPerMinute)
      : undefined,
  };
  return createApp(deps, [...apiRoutes, ...routes]);
}

export async function createService(
  config: Readonly<Config>,
  options: ServiceOptions = {},
): Promise<Service> {
  const { db, signer, store } = await openStores(config, options);
  const log = createLogger({ sink: options.log });
  const metrics = new Metrics();
  const received = buildDeliveries(config, { db, store, metrics, log });
  const { catalog, deliveries, grants, uploads } = received;
  addGauges(metrics, uploads);
  await startupSweep(store, log);
  const analysis = buildAnalysis(config, { db, store, deliveries, metrics, uploads, log });
  const audit = new AuditLog({ db, log });
  const timers = startTimerJobs({ ...received, config, db, store, audit, analysis, metrics, log });
  const webhooks = startWebhooks(config, { db, metrics, log, uploads, audit });
  const recorder = new LastUsedRecorder(db);
  const handler = buildApp(config, {
    ...received,
    db,
    store,
    metrics,
    recorder,
    signer,
    audit,
    webhookAudit: webhooks.audit,
    analysis: new AnalysisService({ db, scheduler: analysis }),
    log,
  }, options.routes);
  return {
    config,
    db,
    store,
    metrics,
    deliveries,
    analysis,
    catalog,
    jobs: { scan: timers.scan, cleanup: timers.cleanup, reconcile: timers.reconcile },
    webhooks: webhooks.sender,
    log,
    handler,
    async close() {
      await timers.stop();
      await analysis.stop();
      await webhooks.sender.stop();
      await grants?.flush();
      await recorder.flush();
      await audit.close();
      log.flush();
      await db.close();
    },
  };
}
