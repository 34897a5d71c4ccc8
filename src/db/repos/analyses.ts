/**
 * Analysis results: one per (organization, experiment), keyed by the stored object's ETag, with
 * the `ANALYSIS_VERSION` that made it. Every change of a result's status is mirrored into the
 * catalog row of the same ETag in the same transaction, by a statement of its own: it runs once
 * the analyses row is locked, so it also sees a catalog row that `catalog.put` committed while
 * this change waited for that lock, and the catalog never keeps another status than the saved
 * one.
 *
 * Saving a result writes its webhook events in the same transaction: `analysis.ready` or
 * `analysis.failed` when the row was pending (a re-run of an older result raises neither), and
 * for a ready result the experiment events against the facts of the experiment's previous ready
 * result (`ready_facts`, which a new delivery's pending row keeps).
 */
import type { Dialect, Sql, Transaction } from "../dialect.ts";
import { int, intOrNull, rowsParam, timeOrNull } from "../dialect.ts";
import { DatabaseUnavailable, nowIso } from "../errors.ts";
import type { DeliverySummaryRow } from "./summaries.ts";
import { saveSummary } from "./summaries.ts";
import type { HistorySnapshot } from "./history.ts";
import { recordSnapshot } from "./history.ts";
import type { OutboxEvent, WebhookOutbox } from "./webhook_outbox.ts";
import type { AnalysisFacts } from "../../webhooks/events.ts";
import { experimentEvents, factsOf } from "../../webhooks/events.ts";

export type AnalysisStatus = "pending" | "ready" | "failed";

/** One analysis result per (organization, experiment), keyed by the stored object's ETag. */
export interface AnalysisRow {
  org_id: string;
  experiment_id: string;
  etag: string;
  size_bytes: number;
  status: AnalysisStatus;
  error: string | null;
  rows: number | null;
  /** The analysis JSON, as text. */
  result: string | null;
  delivered_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** `ANALYSIS_VERSION` of the run that made the result; null before it was recorded. */
  analysis_version: number | null;
}

/** A finished analysis run. */
export interface AnalysisOutcome {
  status: "ready" | "failed";
  error: string | null;
  rows: number | null;
  result: unknown;
  /** `ANALYSIS_VERSION` of the run; default null. */
  version?: number;
}

/** A ready analysis made by an older version of the analysis, to run again. */
export interface OutdatedAnalysis {
  org_id: string;
  experiment_id: string;
  etag: string;
  size_bytes: number;
  delivered_at: string;
}

/** What a ready result adds to its experiment's history (`AnalysisRepo.saveResult`). */
export interface ResultHistory {
  /** The delivery's summary, replacing the experiment's; null keeps the one saved (the same). */
  summary: DeliverySummaryRow | null;
  /** The snapshot, recorded as `HistoryRepo.record` does. */
  snapshot: Omit<HistorySnapshot, "seq">;
  /** Snapshots kept per experiment. */
  keep: number;
}

export interface AnalysisRepo {
  get(orgId: string, experimentId: string): Promise<AnalysisRow | null>;
  /** The status of the analysis of the object with `etag`: `pending` until its result is saved. */
  status(orgId: string, experimentId: string, etag: string): Promise<AnalysisStatus>;
  /** Records that the object with `etag` awaits analysis (replacing an older delivery's result). */
  markPending(
    orgId: string,
    experimentId: string,
    etag: string,
    sizeBytes: number,
    deliveredAt: string,
  ): Promise<void>;
  /**
   * Saves a finished run, unless a newer delivery replaced the object meanwhile (false then, or
   * when the database cannot be written: the row stays `pending` and the job runs again).
   * `history`, given with a ready result, is written in the same transaction: whoever reads the
   * result then finds its snapshot too, and a result not saved leaves no history.
   */
  saveResult(
    orgId: string,
    experimentId: string,
    etag: string,
    outcome: AnalysisOutcome,
    startedAt: string,
    history?: ResultHistory,
  ): Promise<boolean>;
  delete(orgId: string, experimentId: string): Promise<void>;
  /** Ready results made by an analysis older than `version` (or by an unrecorded one), newest deliveries first. */
  outdated(version: number): Promise<OutdatedAnalysis[]>;
}

/** A delivery to mark pending (`markPending`, `jobs.admit`). */
export interface PendingDelivery {
  org_id: string;
  experiment_id: string;
  etag: string;
  size_bytes: number;
  delivered_at: string;
  /** `settings`: pending again for the same object; `upgrade`: never made pending. */
  source: string;
}

/** The columns of `PendingDelivery` as `Dialect.rows` reads them. */
export const PENDING_COLUMNS = {
  org_id: "text",
  experiment_id: "text",
  etag: "text",
  size_bytes: "integer",
  delivered_at: "time",
  source: "text",
} as const;

/**
 * Inside `tx`: the analyses rows of these deliveries (at most one per dataset, sorted) become
 * `pending`, for a new object or a `settings` re-run (never for an `upgrade`), and the catalog
 * mirrors it. `param` is `rowsParam` of them.
 */
export async function markPendingRows(db: Dialect, tx: Sql, param: string): Promise<void> {
  await tx.run(
    `INSERT INTO analyses (org_id, experiment_id, etag, size_bytes, status, delivered_at)
     SELECT i.org_id, i.experiment_id, i.etag, i.size_bytes, 'pending', i.delivered_at
     FROM ${db.rows("i", PENDING_COLUMNS)}
     LEFT JOIN analyses a ON a.org_id = i.org_id AND a.experiment_id = i.experiment_id
     WHERE i.source <> 'upgrade' AND (a.etag IS NULL OR a.etag <> i.etag OR i.source = 'settings')
     ORDER BY i.org_id, i.experiment_id
     ON CONFLICT (org_id, experiment_id) DO UPDATE SET
       etag = excluded.etag, size_bytes = excluded.size_bytes, status = 'pending',
       error = NULL, rows = NULL, result = NULL, delivered_at = excluded.delivered_at,
       started_at = NULL, finished_at = NULL, analysis_version = NULL`,
    [param],
  );
  await tx.run(
    `UPDATE datasets SET analysis_status = 'pending'
     WHERE analysis_status <> 'pending' AND (org_id, experiment_id, etag) IN (
       SELECT a.org_id, a.experiment_id, a.etag FROM analyses a
       JOIN ${db.rows("i", PENDING_COLUMNS)}
         ON a.org_id = i.org_id AND a.experiment_id = i.experiment_id AND a.etag = i.etag
       WHERE a.status = 'pending')`,
    [param],
  );
}

/** Inside `tx`: the catalog row of `etag` takes the status of its analysis. */
async function mirror(
  tx: Sql,
  orgId: string,
  experimentId: string,
  etag: string,
  status: AnalysisStatus,
): Promise<void> {
  await tx.run(
    `UPDATE datasets SET analysis_status = ?
     WHERE org_id = ? AND experiment_id = ? AND etag = ? AND analysis_status <> ?`,
    [status, orgId, experimentId, etag, status],
  );
}

/** The webhook events of a saved outcome: `previous` is the row as it was before the save. */
function eventsOfSave(
  [orgId, experimentId, etag]: [string, string, string],
  outcome: AnalysisOutcome,
  facts: AnalysisFacts | null,
  previous: { status: string; ready_facts: string | null },
): OutboxEvent[] {
  const event = (type: OutboxEvent["type"], more: Record<string, unknown>): OutboxEvent => ({
    type,
    orgId,
    experimentId,
    facts: { etag, ...more },
  });
  const events: OutboxEvent[] = [];
  if (previous.status === "pending") {
    events.push(
      outcome.status === "ready"
        ? event("analysis.ready", { status: "ready", rows: outcome.rows })
        : event("analysis.failed", { status: "failed", error: outcome.error }),
    );
  }
  if (facts !== null) {
    const before = previous.ready_facts === null
      ? null
      : JSON.parse(previous.ready_facts) as AnalysisFacts;
    for (const { type, ...more } of experimentEvents(before, facts)) events.push(event(type, more));
  }
  return events;
}

/**
 * Saving a finished run, inside `tx` (see `AnalysisRepo.saveResult`); answers whether it was
 * saved and how many webhook deliveries it queued.
 */
async function saveOutcome(
  tx: Transaction,
  outbox: WebhookOutbox,
  id: [string, string, string],
  outcome: AnalysisOutcome,
  startedAt: string,
  history?: ResultHistory,
): Promise<{ saved: boolean; queued: number }> {
  const [orgId, experimentId, etag] = id;
  // One indexed read when the organization has no endpoints; the row as it was only otherwise.
  const subscribers = await outbox.subscribers(tx, [orgId]);
  const previous = subscribers.length === 0 ? undefined : await tx.get<
    { status: string; ready_facts: string | null }
  >(
    "SELECT status, ready_facts FROM analyses WHERE org_id = ? AND experiment_id = ? AND etag = ?",
    id,
  );
  const facts = outcome.status === "ready" ? factsOf(outcome.result as AnalysisFacts) : null;
  const changed = await tx.run(
    `UPDATE analyses SET status = ?, error = ?, rows = ?, result = ?, started_at = ?,
       finished_at = ?, analysis_version = ?, ready_facts = COALESCE(?, ready_facts)
     WHERE org_id = ? AND experiment_id = ? AND etag = ?`,
    [
      outcome.status,
      outcome.error,
      outcome.rows,
      outcome.result === null ? null : JSON.stringify(outcome.result),
      startedAt,
      nowIso(),
      outcome.version ?? null,
      facts === null ? null : JSON.stringify(facts),
      orgId,
      experimentId,
      etag,
    ],
  );
  if (changed === 0) return { saved: false, queued: 0 };
  await mirror(tx, orgId, experimentId, etag, outcome.status);
  if (history) {
    if (history.summary) await saveSummary(tx, orgId, experimentId, history.summary);
    await recordSnapshot(tx, orgId, experimentId, history.snapshot, history.keep);
  }
  const events = previous ? eventsOfSave(id, outcome, facts, previous) : [];
  const queued = events.length === 0 ? [] : await outbox.write(tx, subscribers, events);
  return { saved: true, queued: queued.length };
}

function toAnalysis(
  { ready_facts: _, ...row }: AnalysisRow & { ready_facts?: unknown },
): AnalysisRow {
  return {
    ...row,
    size_bytes: int(row.size_bytes),
    rows: intOrNull(row.rows),
    started_at: timeOrNull(row.started_at),
    finished_at: timeOrNull(row.finished_at),
    analysis_version: intOrNull(row.analysis_version),
  };
}

export function analysisRepo(db: Dialect, outbox: WebhookOutbox): AnalysisRepo {
  return {
    get: async (orgId, experimentId) => {
      const row = await db.get<AnalysisRow>(
        "SELECT * FROM analyses WHERE org_id = ? AND experiment_id = ?",
        [orgId, experimentId],
      );
      return row ? toAnalysis(row) : null;
    },
    status: async (orgId, experimentId, etag) => {
      const row = await db.get<{ status: AnalysisStatus; etag: string }>(
        "SELECT status, etag FROM analyses WHERE org_id = ? AND experiment_id = ?",
        [orgId, experimentId],
      );
      return row && row.etag === etag ? row.status : "pending";
    },
    markPending: (orgId, experimentId, etag, sizeBytes, deliveredAt) => {
      const param = rowsParam([{
        org_id: orgId,
        experiment_id: experimentId,
        etag,
        size_bytes: sizeBytes,
        delivered_at: deliveredAt,
        source: "settings",
      }]);
      return db.transaction((tx) => markPendingRows(db, tx, param));
    },
    saveResult: async (orgId, experimentId, etag, outcome, startedAt, history) => {
      try {
        const { saved, queued } = await db.transaction((tx) =>
          saveOutcome(tx, outbox, [orgId, experimentId, etag], outcome, startedAt, history)
        );
        if (queued > 0) outbox.wake();
        return saved;
      } catch (error) {
        // A busy, read-only or unreachable database must not take the process down from a
        // background run: the row stays `pending`, and the job runs the analysis again.
        if (error instanceof DatabaseUnavailable) return false;
        throw error;
      }
    },
    delete: (orgId, experimentId) =>
      db.transaction(async (tx) => {
        await tx.run("DELETE FROM analyses WHERE org_id = ? AND experiment_id = ?", [
          orgId,
          experimentId,
        ]);
        await tx.run(
          `UPDATE datasets SET analysis_status = 'pending'
           WHERE org_id = ? AND experiment_id = ? AND analysis_status <> 'pending'`,
          [orgId, experimentId],
        );
      }),
    outdated: async (version) =>
      (await db.all<OutdatedAnalysis>(
        `SELECT org_id, experiment_id, etag, size_bytes, delivered_at FROM analyses
         WHERE status = 'ready' AND (analysis_version IS NULL OR analysis_version < ?)
         ORDER BY delivered_at DESC, org_id, experiment_id`,
        [version],
      )).map((row) => ({ ...row, size_bytes: int(row.size_bytes) })),
  };
}
