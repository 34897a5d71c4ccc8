/**
 * Wiring, in one place: configuration → database → storage → application → timer. Used by
 * `main.ts serve` and by tests that run the real server in-process.
 */
import type { Config } from "./config.ts";
import { openDatabase } from "./db/database.ts";
import type { Database } from "./db/database.ts";
import { LastUsedRecorder } from "./db/api_keys.ts";
import { Gauge, Metrics } from "./metrics.ts";
import { DeliveryHub } from "./deliveries.ts";
import type { ObjectStore } from "./storage/object_store.ts";
import { LocalStore } from "./storage/local_store.ts";
import { loadOrCreateSecret, UrlSigner } from "./crypto/url_signer.ts";
import type { AppHandler, RouteTable } from "./app.ts";
import { createApp } from "./app.ts";
import { RateLimiter } from "./http/rate_limiter.ts";
import { UploadSlots } from "./ingest/upload_slots.ts";
import { apiRoutes } from "./routes/mod.ts";
import { startServices } from "./services.ts";
import { createBatchedLog } from "./log.ts";

export interface Service {
  config: Readonly<Config>;
  db: Database;
  store: ObjectStore;
  metrics: Metrics;
  deliveries: DeliveryHub;
  handler: AppHandler;
  services: Record<string, unknown>;
  /** Stops timers and background work; closes the database. */
  close(): Promise<void>;
}

export interface ServiceOptions {
  /** Replaces the storage driver built from the configuration (fault tests). */
  store?: ObjectStore;
  /** Request log sink; default console.log. */
  log?: (line: string) => void;
  /** Extra routes (tests). */
  routes?: RouteTable[];
}

export async function createService(
  config: Readonly<Config>,
  options: ServiceOptions = {},
): Promise<Service> {
  await Deno.mkdir(config.dataDir, { recursive: true });
  const dbDir = config.dbPath.slice(0, config.dbPath.lastIndexOf("/"));
  if (dbDir) await Deno.mkdir(dbDir, { recursive: true });
  const db = openDatabase(config.dbPath);
  const signer = new UrlSigner(
    await loadOrCreateSecret(`${config.dataDir}/secrets/url-signing.key`),
  );
  const store = options.store ?? (config.storage === "s3"
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
    : new LocalStore({ dataDir: config.dataDir, signer, publicUrl: config.publicUrl }));
  await store.open();
  const metrics = new Metrics();
  const batched = options.log ? null : createBatchedLog();
  const log = options.log ?? batched!;
  const deliveries = new DeliveryHub();
  const services: Record<string, unknown> = { signer };
  const deps = {
    config,
    db,
    store,
    metrics,
    recorder: new LastUsedRecorder(db),
    deliveries,
    rateLimiter: config.rateLimitPerMinute > 0
      ? new RateLimiter(config.rateLimitPerMinute)
      : undefined,
    uploadSlots: new UploadSlots(config.maxConcurrentUploads),
    services,
    log,
  };
  metrics.add(
    new Gauge(
      "abn_uploads_in_progress",
      "Upload bodies streaming now (direct uploads and local upload URLs)",
      () => deps.uploadSlots.inUse,
    ),
  );
  const stopServices = await startServices(deps);
  const handler = createApp(deps, [...apiRoutes, ...(options.routes ?? [])]);
  return {
    config,
    db,
    store,
    metrics,
    deliveries,
    handler,
    services,
    async close() {
      await stopServices();
      batched?.flush();
      db.close();
    },
  };
}
