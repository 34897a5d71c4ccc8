/**
 * One analysis run of one delivery, shared by both analysis queues (in memory with SQLite, jobs
 * with leases on PostgreSQL): reads the stored object, aggregates it (validating it beside the
 * reading when it was not validated on the way in), builds the report with the saved settings
 * and what changed since the previous delivery, and saves it keyed by the object's ETag with the
 * `ANALYSIS_VERSION` that made it. Logged as `analysis finished` (tests count runs by that line).
 *
 * A ready run also keeps the experiment's history: a snapshot per delivered content (keyed by its
 * SHA-256, from the upload or hashed here while reading), and the delivery's per-user summary,
 * which the next delivery is compared with (`changes`). Both are saved with the result, in its
 * transaction: a reader who sees the result finds its snapshot, and a run whose result lost to a
 * newer delivery leaves no trace in the history.
 */
import { createHash } from "node:crypto";
import type { AnalysisOutcome, ControlPlane, ResultHistory } from "../db/control_plane.ts";
import { datasetKey } from "../storage/object_store.ts";
import { DatabaseUnavailable } from "../db/control_plane.ts";
import type { ObjectInfo, ObjectStore } from "../storage/object_store.ts";
import { StorageError } from "../storage/object_store.ts";
import type { Delivery } from "../deliveries.ts";
import type { Metrics } from "../metrics.ts";
import type { Logger } from "../log.ts";
import { describeError } from "../log.ts";
import { ServiceError } from "../errors.ts";
import { aggregateDelivery } from "./aggregate_delivery.ts";
import { DaysOutOfRange } from "./aggregate/aggregate.ts";
import { ANALYSIS_VERSION, buildReport } from "./report.ts";
import { validateSettings } from "./settings.ts";
import {
  type Changes,
  compareWithStored,
  deliverySummaryOf,
  encodeDeliverySummary,
  readSummaryHead,
} from "./history/delivery_summary.ts";
import { snapshotFigures } from "./history/snapshot.ts";
import { releaseBuffers } from "../buffers.ts";
import type { TallyWorkers } from "./aggregate/tally_workers.ts";
import { runAggregation } from "./run_aggregation.ts";
import type { Aggregate } from "./aggregate/aggregate_types.ts";

/** The phases of a run that its `analysis finished` line times (see `RunPhases`). */
type Phase = "read" | "load" | "validate" | "aggregate" | "report" | "save";

/**
 * Milliseconds per phase of one run: `read` (awaiting the stored bytes, wherever it happens),
 * `load` (the settings and the previous delivery's summary from the database), `validate` (the
 * upload checks and the hashing of bytes that were not checked on the way in: a two-step
 * delivery's), `aggregate` (the aggregation), `report` (the report and the comparison with the
 * previous delivery), `save` (the result and the history written to the database).
 */
class RunPhases {
  /** Time spent awaiting storage: `aggregateDelivery` adds to it (see its `waited`). */
  readonly waited = { ms: 0 };
  /** Time spent checking and hashing: `aggregateDelivery` adds to it (see its `checked`). */
  readonly checked = { ms: 0 };
  readonly ms: Record<Phase, number> = {
    read: 0,
    load: 0,
    validate: 0,
    aggregate: 0,
    report: 0,
    save: 0,
  };
  #phase: Phase = "read";
  #since = performance.now();
  /** Time measured inside a phase that counts as a phase of its own. */
  readonly #carried: { counter: { ms: number }; into: Phase; before: number }[] = [
    { counter: this.waited, into: "read", before: 0 },
    { counter: this.checked, into: "validate", before: 0 },
  ];

  /**
   * Ends the current phase (its time awaiting storage counted as `read`, checking and hashing as
   * `validate`) and starts `next`; answers the moment of the change (`performance.now()`).
   */
  enter(next: Phase): number {
    const now = performance.now();
    let own = now - this.#since;
    for (const carried of this.#carried) {
      const ms = carried.counter.ms - carried.before;
      carried.before = carried.counter.ms;
      this.ms[carried.into] += ms;
      own -= ms;
    }
    this.ms[this.#phase] += own;
    this.#since = now;
    this.#phase = next;
    return now;
  }

  /** The log line's fields, whole milliseconds. */
  fields(): Record<`${Phase}_ms`, number> {
    const ms = this.ms;
    return {
      read_ms: Math.round(ms.read),
      load_ms: Math.round(ms.load),
      validate_ms: Math.round(ms.validate),
      aggregate_ms: Math.round(ms.aggregate),
      report_ms: Math.round(ms.report),
      save_ms: Math.round(ms.save),
    };
  }
}

export interface AnalyseDeps {
  db: ControlPlane;
  store: ObjectStore;
  metrics: Metrics;
  log: Logger;
  /** Snapshots kept per experiment (`ABN_HISTORY_MAX_SNAPSHOTS`); default 1000. */
  historyMaxSnapshots?: number;
  /** Where the aggregation's worker waits between runs (see `TallyWorkers`); default nowhere. */
  tallyWorkers?: TallyWorkers;
}

/**
 * How a run ended: `finished` (an outcome was computed; `saved` false when a newer delivery
 * replaced the row or the database could not be written), `gone` (the object was deleted),
 * `replaced` (another object is stored now: that one is a delivery of its own), `postponed`
 * (storage or the database failed for a while: run it again later).
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
  const phases = new RunPhases();
  const { orgId, experimentId, key } = delivery;
  const etag = delivery.info.etag;
  let outcome: AnalysisOutcome & { version: number };
  /** What the history keeps of a ready run, saved with its result. */
  let history: ResultHistory | undefined;
  /** Large arrays of this run only (user hashes, summary blobs), freed at its end. */
  const scratch: (ArrayBufferView | null | undefined)[] = [];
  try {
    const object = await store.get(key);
    if (!object) return { kind: "gone" };
    if (object.info.etag !== etag) {
      await object.body.cancel();
      return { kind: "replaced", info: object.info };
    }
    phases.enter("load");
    const settings = validateSettings((await db.settings.get(orgId, experimentId)) ?? {});
    // Only the summary's header is needed so far: the report reads the whole summary, once the
    // aggregation's memory is given back (see below).
    const previous = await readSummaryHead(db.deliverySummaries, orgId, experimentId);
    // The content's SHA-256: from the upload, from the last run of this object, or read here.
    const known = delivery.sha256 ?? (previous?.etag === etag ? previous.sha256 : undefined);
    const options = runAggregation(settings, previous?.summary);
    releaseBuffers(previous?.summary);
    phases.enter("aggregate");
    const hashed = known === undefined;
    let hash = hashed ? createHash("sha256") : null;
    const aggregateBody = (body: ReadableStream<Uint8Array>, wideDays: boolean) =>
      // A two-step delivery is validated beside the reading: a refusal is the upload check's.
      aggregateDelivery(body, {
        ...options,
        validated: delivery.validated,
        // A file the upload found without dimension columns: records without their values.
        dimensions: delivery.hasDimensions ?? true,
        sizeBytes: object.info.size,
        tallyWorkers: deps.tallyWorkers,
        userSummary: true,
        wideDays,
        onChunk: hash === null ? undefined : (chunk) => hash!.update(chunk),
        waited: phases.waited,
        checked: phases.checked,
      });
    let aggregate: Aggregate;
    try {
      aggregate = await aggregateBody(object.body, options.wideDays ?? false);
    } catch (error) {
      if (!(error instanceof DaysOutOfRange)) throw error;
      // A date before 1950 or after 2126: read again, with 32-bit days.
      const again = await store.get(key);
      if (!again) return { kind: "gone" };
      if (again.info.etag !== etag) {
        await again.body.cancel();
        return { kind: "replaced", info: again.info };
      }
      hash = hashed ? createHash("sha256") : null;
      aggregate = await aggregateBody(again.body, true);
    }
    const sha256 = known ?? hash!.digest("hex");
    phases.enter("report");
    const rows = aggregate.rows;
    const summary = deliverySummaryOf(aggregate);
    const users = summary.users;
    scratch.push(users.hi, users.lo, users.variant);
    const sameContent = previous?.sha256 === sha256;
    let changes: Changes | null = null;
    if (previous && sameContent) {
      // The same bytes again (a re-run, or a re-delivery): what they changed, as found then.
      changes = previous.changes === null ? null : JSON.parse(previous.changes);
    } else if (previous) {
      // Read again now that the aggregation's memory is given back. Should another instance have
      // saved a newer delivery's summary meanwhile (this run's result is then refused), there is
      // nothing to compare with.
      const again = await db.deliverySummaries.get(orgId, experimentId);
      scratch.push(again?.summary);
      // Compared where it lies in the blob (see `compareWithStored`).
      if (again?.etag === previous.etag) {
        changes = compareWithStored(again.summary, summary, previous.etag, previous.delivered_at);
      }
      releaseBuffers(again?.summary);
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
    const encoded = sameContent && previous?.etag === etag ? null : encodeDeliverySummary(summary);
    scratch.push(encoded);
    // Encoded: the users' hashes go before the result is saved, unless the blob was written
    // around them (then they go with it).
    if (encoded?.buffer !== users.hi.buffer) releaseBuffers(users.hi, users.lo, users.variant);
    history = {
      // The same delivery again (a re-run) keeps its summary, and the changes found then.
      summary: encoded === null ? null : {
        etag,
        sha256,
        delivered_at: deliveredAt,
        summary: encoded,
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
  } catch (error) {
    if (error instanceof StorageError || error instanceof DatabaseUnavailable) {
      // Transient: the row stays `pending`, and the analysis runs again later (the timer's scan
      // offers it again; a leased job is postponed).
      metrics.analysisRuns.inc({ outcome: "retry" });
      const failed = error instanceof StorageError ? "storage" : "the database";
      log.warn(`analysis postponed: ${failed} failed; it is retried later`, {
        org_id: orgId,
        experiment_id: experimentId,
        error: error.message,
      });
      return { kind: "postponed" };
    }
    if (error instanceof ServiceError) {
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
  // The run's time ends where its phases before `save` do: the line's duration is their sum.
  const seconds = (phases.enter("save") - t0) / 1000;
  metrics.analysisRuns.inc({ outcome: outcome.status });
  metrics.analysisSeconds.observe(seconds);
  let saved = false;
  try {
    saved = await db.analyses.saveResult(orgId, experimentId, etag, outcome, startedAt, history);
  } catch (error) {
    // Not saved (nor its history): the row stays `pending`, and the analysis runs again.
    log.error("analysis result not saved", {
      org_id: orgId,
      experiment_id: experimentId,
      error: describeError(error),
    });
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
