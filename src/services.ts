/**
 * Background services started with the server: the start-up sweep, the embedded timer (delivery
 * scan and clean-up) and the analysis worker. The answer stops them all.
 */
import type { AppDeps } from "./app.ts";
import { PeriodicJob } from "./jobs/periodic_job.ts";
import { cleanup, countOversize, scanDeliveries } from "./jobs/storage_jobs.ts";
import { AnalysisService } from "./analysis/analysis_queue.ts";

export type Stop = () => Promise<void>;

export async function startServices(deps: AppDeps): Promise<Stop> {
  const { config, store, db, deliveries, metrics } = deps;
  const log = deps.log ?? ((line: string) => console.log(line));
  const swept = await store.sweep().catch(() => 0);
  const oversize = await countOversize(store, config.maxUploadBytes).catch(() => 0);
  if (swept > 0 || oversize > 0) {
    log(JSON.stringify({
      level: oversize > 0 ? "warn" : "info",
      time: new Date().toISOString(),
      msg: oversize > 0
        ? `${oversize} stored dataset(s) exceed ABN_MAX_UPLOAD_BYTES=${config.maxUploadBytes}; the clean-up will delete them`
        : "swept leftovers of interrupted uploads",
      swept,
      oversize,
    }));
  }
  const analysis = new AnalysisService({
    db,
    store,
    deliveries,
    metrics,
    maxUploadBytes: config.maxUploadBytes,
    log,
  });
  deps.services.analysis = analysis;
  const inFlight = analysis.inFlight.bind(analysis);
  const scan = new PeriodicJob({
    name: "scan",
    intervalMs: config.scanIntervalSeconds * 1000,
    firstDelayMs: 100,
    metrics,
    log,
    run: async () => {
      const result = await scanDeliveries({
        store,
        db,
        deliveries,
        maxUploadBytes: config.maxUploadBytes,
        inFlight,
      });
      return result.noticed > 0 ? result : undefined;
    },
  });
  const clean = new PeriodicJob({
    name: "cleanup",
    intervalMs: config.cleanupIntervalSeconds * 1000,
    metrics,
    log,
    run: async () => {
      const result = await cleanup({ store, db, metrics, maxUploadBytes: config.maxUploadBytes });
      return result.deleted + result.swept > 0 ? result : undefined;
    },
  });
  deps.services.scan = scan;
  deps.services.cleanup = clean;
  scan.start();
  clean.start();
  return async () => {
    await scan.stop();
    await clean.stop();
    await analysis.stop();
  };
}
