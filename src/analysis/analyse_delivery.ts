/**
 * One analysis run of one delivery, shared by both analysis queues (in memory with SQLite, jobs
 * with leases on PostgreSQL): reads the stored object, aggregates it (validating it first when
 * it was not validated on the way in), builds the report with the saved settings and saves it
 * keyed by the object's ETag. Logged as `analysis finished` (tests count runs by that line).
 */
import type { AnalysisOutcome, ControlPlane } from "../db/control_plane.ts";
import { DatabaseUnavailable } from "../db/control_plane.ts";
import type { ObjectInfo, ObjectStore } from "../storage/object_store.ts";
import { StorageError } from "../storage/object_store.ts";
import type { Delivery } from "../deliveries.ts";
import type { Metrics } from "../metrics.ts";
import type { Logger } from "../log.ts";
import { describeError } from "../log.ts";
import { ApiError } from "../http/errors.ts";
import { DatasetValidator } from "../pipeline/mod.ts";
import { aggregateCsv } from "./aggregate/aggregate.ts";
import { buildReport } from "./report.ts";
import { validateSettings } from "./settings.ts";

export interface AnalyseDeps {
  db: ControlPlane;
  store: ObjectStore;
  metrics: Metrics;
  log: Logger;
}

/**
 * How a run ended: `finished` (an outcome was computed; `saved` false when a newer delivery
 * replaced the row or the database could not be written), `gone` (the object was deleted),
 * `replaced` (another object is stored now: analyse that one), `postponed` (storage or the
 * database failed for a while: run it again later).
 */
export type AnalyseResult =
  | { kind: "finished"; status: "ready" | "failed"; saved: boolean }
  | { kind: "gone" }
  | { kind: "replaced"; info: ObjectInfo }
  | { kind: "postponed" };

export async function analyseDelivery(
  deps: AnalyseDeps,
  delivery: Delivery,
): Promise<AnalyseResult> {
  const { db, store, metrics, log } = deps;
  const startedAt = new Date().toISOString();
  const t0 = performance.now();
  const { orgId, experimentId, key } = delivery;
  const etag = delivery.info.etag;
  let outcome: AnalysisOutcome;
  try {
    const object = await store.get(key);
    if (!object) return { kind: "gone" };
    if (object.info.etag !== etag) {
      await object.body.cancel();
      return { kind: "replaced", info: object.info };
    }
    const settings = validateSettings((await db.settings.get(orgId, experimentId)) ?? {});
    const validator = delivery.validated ? null : new DatasetValidator();
    // Two threads where a worker can start; the validator sees every chunk first.
    let aggregate;
    try {
      aggregate = await aggregateCsv(object.body, {
        metricKinds: settings.metric_kinds,
        onChunk: validator ? (chunk) => validator.push(chunk) : undefined,
      });
    } catch (error) {
      // A file the reader cannot make sense of gets the upload check's own message.
      if (validator && !(error instanceof ApiError)) validator.finish();
      throw error;
    }
    validator?.finish();
    const rows = aggregate.rows;
    const report = buildReport(aggregate, settings);
    // `_data` keeps what settings are checked against (variants, metrics), not served as such.
    const data = { ...aggregate, daily: [] };
    outcome = { status: "ready", error: null, rows, result: { ...report, _data: data } };
  } catch (error) {
    if (error instanceof StorageError || error instanceof DatabaseUnavailable) {
      metrics.analysisRuns.inc({ outcome: "retry" });
      const failed = error instanceof StorageError ? "storage" : "the database";
      log.warn(`analysis postponed: ${failed} failed; it is retried later`, {
        org_id: orgId,
        experiment_id: experimentId,
        error: error.message,
      });
      return { kind: "postponed" };
    }
    if (error instanceof ApiError) {
      outcome = { status: "failed", error: error.message, rows: null, result: null };
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
      };
    }
  }
  const seconds = (performance.now() - t0) / 1000;
  metrics.analysisRuns.inc({ outcome: outcome.status });
  metrics.analysisSeconds.observe(seconds);
  let saved = false;
  try {
    saved = await db.analyses.saveResult(orgId, experimentId, etag, outcome, startedAt);
  } catch (error) {
    // Not saved: the row stays `pending`, and the analysis runs again.
    log.error("analysis result not saved", {
      org_id: orgId,
      experiment_id: experimentId,
      error: describeError(error),
    });
  }
  log.info("analysis finished", {
    org_id: orgId,
    experiment_id: experimentId,
    etag,
    source: delivery.source,
    status: outcome.status,
    duration_ms: Math.round(seconds * 1000),
  });
  return { kind: "finished", status: outcome.status, saved };
}
