/**
 * One analysis run of one delivery, shared by both analysis queues (in memory with SQLite, jobs
 * with leases on PostgreSQL), in named steps:
 *
 * 1. `load`: the experiment's settings and the head of the previous delivery's summary;
 * 2. `aggregateStored`: the stored object as a stream, read by the upload's CSV rules (validated
 *    beside the reading when it was not on the way in, hashed when its SHA-256 is not known);
 * 3. `compare`: what changed since the previous delivery;
 * 4. `reportRun`: the analysis JSON, with the saved settings, and what the history keeps;
 * 5. `save`: the result keyed by the object's ETag with the `ANALYSIS_VERSION` that made it, and
 *    the history, in one transaction.
 *
 * A ready run keeps the experiment's history: a snapshot per delivered content (keyed by its
 * SHA-256), and the delivery's per-user summary, which the next delivery is compared with. Both
 * are saved with the result: a reader who sees the result finds its snapshot, and a run whose
 * result lost to a newer delivery leaves no trace in the history.
 *
 * A run whose data broke a check of the upload, or whose settings do not fit the data, is a
 * `failed` analysis with that message (a `ServiceError`: `ValidationError`, `SettingsError`);
 * storage or the database failing is a postponed run; anything else is a failed analysis logged
 * as an error. Logged as `analysis finished` with the time of each phase (tests count runs by
 * that line).
 */
import { createHash } from "node:crypto";
import type { AnalysisOutcome, ControlPlane, ResultHistory } from "../db/control_plane.ts";
import type { DeliverySummaryRow } from "../db/control_plane.ts";
import { DatabaseUnavailable } from "../db/control_plane.ts";
import { datasetKey } from "../storage/object_store.ts";
import type { ObjectInfo, ObjectStore } from "../storage/object_store.ts";
import { StorageError } from "../storage/object_store.ts";
import type { Delivery } from "../deliveries.ts";
import type { Metrics } from "../metrics.ts";
import type { Logger } from "../log.ts";
import { describeError } from "../log.ts";
import { ServiceError } from "../errors.ts";
import { aggregateDelivery } from "./aggregate_delivery.ts";
import { DaysOutOfRange } from "./aggregate/aggregate.ts";
import type { Aggregate } from "./aggregate/aggregate_types.ts";
import { ANALYSIS_VERSION, buildReport } from "./report.ts";
import { type Settings, validateSettings } from "./settings.ts";
import {
  type Changes,
  compareWithStored,
  type DeliverySummary,
  deliverySummaryOf,
  encodeDeliverySummary,
  readSummaryHead,
} from "./history/delivery_summary.ts";
import { snapshotFigures } from "./history/snapshot.ts";
import { type RunAggregation, runAggregation } from "./run_aggregation.ts";
import { RunPhases } from "./_run_phases.ts";

export interface RunDeps {
  db: ControlPlane;
  store: ObjectStore;
  metrics: Metrics;
  log: Logger;
  /** Snapshots kept per experiment (`ABN_HISTORY_MAX_SNAPSHOTS`); default 1000. */
  historyMaxSnapshots?: number;
}

/**
 * How a run ended: `finished` (an outcome was computed; `saved` false when a newer delivery
 * replaced the row or the database could not be written), `gone` (the object was deleted),
 * `replaced` (another object is stored now: that one is a delivery of its own), `postponed`
 * (storage or the database failed for a while: run it again later).
 */
export type RunResult =
  | { kind: "finished"; status: "ready" | "failed"; saved: boolean }
  | { kind: "gone" }
  | { kind: "replaced"; info: ObjectInfo }
  | { kind: "postponed" };

/** A run that ends before its outcome: the object is gone or was replaced. */
type Missing = Extract<RunResult, { kind: "gone" | "replaced" }>;

/** The stored object of a delivery, as `get` answers it. */
type Stored = { info: ObjectInfo; body: ReadableStream<Uint8Array> };

/** What `load` reads before the aggregation. */
interface Loaded {
  settings: Settings;
  /** The previous delivery's summary row, its blob only the head (`readSummaryHead`). */
  previous: DeliverySummaryRow | null;
  /** The content's SHA-256 when known: from the upload, or from the last run of this object. */
  sha256: string | undefined;
  options: RunAggregation;
}

/** The aggregate of the delivery's bytes, and their SHA-256. */
interface Aggregated {
  aggregate: Aggregate;
  sha256: string;
}

/** What `save` writes: the outcome, and for a ready run the history. */
interface Computed {
  outcome: AnalysisOutcome & { version: number };
  history?: ResultHistory;
}

/** Runs the analysis of `delivery` (see the module). */
export async function runAnalysis(deps: RunDeps, delivery: Delivery): Promise<RunResult> {
  const phases = new RunPhases();
  const startedAt = new Date().toISOString();
  let computed: Computed;
  try {
    const object = await openStored(deps.store, delivery);
    if ("kind" in object) return object;
    phases.enter("load");
    const loaded = await load(deps.db, delivery);
    phases.enter("aggregate");
    const aggregated = await aggregateStored(deps.store, delivery, object, loaded, phases);
    if ("kind" in aggregated) return aggregated;
    phases.enter("report");
    const changes = await compare(deps.db, delivery, loaded, aggregated);
    computed = reportRun(deps, delivery, object.info, loaded, aggregated, changes);
  } catch (error) {
    const failed = failure(deps, delivery, error);
    if (failed === null) return { kind: "postponed" };
    computed = failed;
  }
  return await save(deps, delivery, computed, phases, startedAt);
}

/** The delivery's object, unless it is gone or another is stored now. */
async function openStored(store: ObjectStore, delivery: Delivery): Promise<Stored | Missing> {
  const object = await store.get(delivery.key);
  if (!object) return { kind: "gone" };
  if (object.info.etag !== delivery.info.etag) {
    await object.body.cancel();
    return { kind: "replaced", info: object.info };
  }
  return object;
}

/**
 * Step 1: the settings, and the previous delivery's summary head (only its header is needed
 * before the aggregation: `compare` reads the whole summary after it).
 */
async function load(db: ControlPlane, delivery: Delivery): Promise<Loaded> {
  const { orgId, experimentId } = delivery;
  const settings = validateSettings((await db.settings.get(orgId, experimentId)) ?? {});
  const previous = await readSummaryHead(db.deliverySummaries, orgId, experimentId);
  const sha256 = delivery.sha256 ??
    (previous?.etag === delivery.info.etag ? previous.sha256 : undefined);
  return { settings, previous, sha256, options: runAggregation(settings, previous?.summary) };
}

/**
 * Step 2: the aggregate of the stored object, hashed unless its SHA-256 is known. A date outside
 * 16-bit days (before 1950 or after 2126) reads the object again, with 32-bit days.
 */
async function aggregateStored(
  store: ObjectStore,
  delivery: Delivery,
  object: Stored,
  loaded: Loaded,
  phases: RunPhases,
): Promise<Aggregated | Missing> {
  const read = async (body: ReadableStream<Uint8Array>, wideDays: boolean) => {
    const hash = loaded.sha256 === undefined ? createHash("sha256") : null;
    const aggregate = await aggregateDelivery(body, {
      ...loaded.options,
      // A two-step delivery is validated beside the reading: a refusal is the upload check's.
      validated: delivery.validated,
      // A file the upload found without dimension columns: records without their values.
      dimensions: delivery.hasDimensions ?? true,
      sizeBytes: object.info.size,
      userSummary: true,
      wideDays,
      onChunk: hash === null ? undefined : (chunk) => hash.update(chunk),
      waited: phases.waited,
      checked: phases.checked,
    });
    return { aggregate, sha256: loaded.sha256 ?? hash!.digest("hex") };
  };
  try {
    return await read(object.body, loaded.options.wideDays ?? false);
  } catch (error) {
    if (!(error instanceof DaysOutOfRange)) throw error;
    const again = await openStored(store, delivery);
    return "kind" in again ? again : await read(again.body, true);
  }
}

/**
 * Step 3: what changed since the previous delivery. The same bytes again (a re-run, or a
 * re-delivery) keep what was found then; otherwise the previous summary is read whole now that
 * the aggregation is done, and compared where it lies in its blob. Should another instance have
 * saved a newer delivery's summary meanwhile (this run's result is then refused), there is
 * nothing to compare with.
 */
async function compare(
  db: ControlPlane,
  delivery: Delivery,
  loaded: Loaded,
  aggregated: Aggregated,
): Promise<Changes | null> {
  const previous = loaded.previous;
  if (previous === null) return null;
  if (previous.sha256 === aggregated.sha256) {
    return previous.changes === null ? null : JSON.parse(previous.changes);
  }
  const again = await db.deliverySummaries.get(delivery.orgId, delivery.experimentId);
  if (again?.etag !== previous.etag) return null;
  const summary = deliverySummaryOf(aggregated.aggregate);
  return compareWithStored(again.summary, summary, previous.etag, previous.delivered_at);
}

/** Step 4: the report, and what the history keeps of it. */
function reportRun(
  deps: RunDeps,
  delivery: Delivery,
  info: ObjectInfo,
  loaded: Loaded,
  { aggregate, sha256 }: Aggregated,
  changes: Changes | null,
): Computed {
  const rows = aggregate.rows;
  const report = buildReport(aggregate, loaded.settings, { changes });
  const outcome = { status: "ready" as const, error: null, rows, result: report };
  const etag = delivery.info.etag;
  const deliveredAt = info.lastModified.toISOString();
  // The same delivery again (a re-run) keeps its summary, and the changes found then.
  const rerun = loaded.previous?.sha256 === sha256 && loaded.previous?.etag === etag;
  const summary: DeliverySummary | null = rerun ? null : deliverySummaryOf(aggregate);
  const history: ResultHistory = {
    summary: summary === null ? null : {
      etag,
      sha256,
      delivered_at: deliveredAt,
      summary: encodeDeliverySummary(summary),
      changes: report.changes === null ? null : JSON.stringify(report.changes),
    },
    snapshot: {
      sha256,
      etag,
      delivered_at: deliveredAt,
      analysed_at: new Date().toISOString(),
      figures: JSON.stringify(snapshotFigures(report, rows)),
    },
    keep: deps.historyMaxSnapshots ?? 1000,
  };
  return { outcome: { ...outcome, version: ANALYSIS_VERSION }, history };
}

/**
 * The failed outcome of a run that threw `error`, or null for a failure that passes with time
 * (storage or the database): the row stays `pending`, and the analysis runs again later (the
 * timer's scan offers it again; a leased job is postponed).
 */
function failure(deps: RunDeps, delivery: Delivery, error: unknown): Computed | null {
  const where = { org_id: delivery.orgId, experiment_id: delivery.experimentId };
  if (error instanceof StorageError || error instanceof DatabaseUnavailable) {
    deps.metrics.analysisRuns.inc({ outcome: "retry" });
    const failed = error instanceof StorageError ? "storage" : "the database";
    deps.log.warn(`analysis postponed: ${failed} failed; it is retried later`, {
      ...where,
      error: error.message,
    });
    return null;
  }
  // The data broke a check, or the settings do not fit the data: that is the analysis's answer.
  let message: string;
  if (error instanceof ServiceError) message = error.message;
  else {
    deps.log.error("analysis failed", { ...where, error: describeError(error) });
    message = "The analysis failed unexpectedly; it will run again after the next delivery";
  }
  const outcome = { status: "failed" as const, error: message, rows: null, result: null };
  return { outcome: { ...outcome, version: ANALYSIS_VERSION } };
}

/**
 * Step 5: saves the outcome (and the history) keyed by the delivery's ETag, and logs the run. The
 * run's time ends where its phases before `save` do: the line's duration is their sum.
 */
async function save(
  deps: RunDeps,
  delivery: Delivery,
  { outcome, history }: Computed,
  phases: RunPhases,
  startedAt: string,
): Promise<RunResult> {
  const { orgId, experimentId } = delivery;
  const etag = delivery.info.etag;
  const seconds = (phases.enter("save") - phases.started) / 1000;
  deps.metrics.analysisRuns.inc({ outcome: outcome.status });
  deps.metrics.analysisSeconds.observe(seconds);
  let saved = false;
  try {
    saved = await deps.db.analyses.saveResult(
      orgId,
      experimentId,
      etag,
      outcome,
      startedAt,
      history,
    );
  } catch (error) {
    // Not saved (nor its history): the row stays `pending`, and the analysis runs again.
    deps.log.error("analysis result not saved", {
      org_id: orgId,
      experiment_id: experimentId,
      error: describeError(error),
    });
  }
  phases.enter("save");
  deps.log.info("analysis finished", {
    org_id: orgId,
    experiment_id: experimentId,
    etag,
    source: delivery.source,
    status: outcome.status,
    duration_ms: Math.round(seconds * 1000),
    ...phases.fields(),
  });
  return { kind: "finished", status: outcome.status, saved };
}

/**
 * The ready results made by an older analysis (`ANALYSIS_VERSION`), newest deliveries first, as
 * deliveries to run again (`source` "upgrade").
 */
export async function outdatedDeliveries(db: ControlPlane): Promise<Delivery[]> {
  const rows = await db.analyses.outdated(ANALYSIS_VERSION);
  return rows.map((row) => {
    const key = datasetKey(row.org_id, row.experiment_id);
    return {
      orgId: row.org_id,
      experimentId: row.experiment_id,
      key,
      info: { key, size: row.size_bytes, etag: row.etag, lastModified: new Date(row.delivered_at) },
      // A ready result means the stored bytes passed the upload checks.
      validated: true,
      source: "upgrade" as const,
    };
  });
}
