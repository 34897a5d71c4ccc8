/**
 * Analysis results, one row per (organization, experiment), keyed by the stored object's ETag:
 * a row whose ETag differs from the object's is a result of an older delivery.
 */
import type { Database } from "./database.ts";
import { isDatabaseUnavailable, nowIso, stmt } from "./database.ts";

export type AnalysisStatus = "pending" | "ready" | "failed";

export interface AnalysisRow {
  org_id: string;
  experiment_id: string;
  etag: string;
  size_bytes: number;
  status: AnalysisStatus;
  error: string | null;
  rows: number | null;
  result: string | null;
  delivered_at: string;
  started_at: string | null;
  finished_at: string | null;
}

export function getAnalysis(db: Database, orgId: string, experimentId: string): AnalysisRow | null {
  return (stmt(db, "SELECT * FROM analyses WHERE org_id = ? AND experiment_id = ?")
    .get(orgId, experimentId) as AnalysisRow | undefined) ?? null;
}

/** The status of the analysis of the object with `etag`: `pending` until its result is saved. */
export function analysisStatus(
  db: Database,
  orgId: string,
  experimentId: string,
  etag: string,
): AnalysisStatus {
  const row = stmt(db, "SELECT status, etag FROM analyses WHERE org_id = ? AND experiment_id = ?")
    .get(orgId, experimentId) as { status: AnalysisStatus; etag: string } | undefined;
  return row && row.etag === etag ? row.status : "pending";
}

/** Records that the object with `etag` awaits analysis (replacing an older delivery's result). */
export function markPending(
  db: Database,
  orgId: string,
  experimentId: string,
  etag: string,
  sizeBytes: number,
  deliveredAt: string,
): void {
  stmt(
    db,
    `INSERT INTO analyses (org_id, experiment_id, etag, size_bytes, status, delivered_at)
     VALUES (?, ?, ?, ?, 'pending', ?)
     ON CONFLICT (org_id, experiment_id) DO UPDATE SET
       etag = excluded.etag, size_bytes = excluded.size_bytes, status = 'pending', error = NULL,
       rows = NULL, result = NULL, delivered_at = excluded.delivered_at, started_at = NULL,
       finished_at = NULL`,
  ).run(orgId, experimentId, etag, sizeBytes, deliveredAt);
}

/** Saves a finished run, unless a newer delivery replaced the object meanwhile. */
export function saveResult(
  db: Database,
  orgId: string,
  experimentId: string,
  etag: string,
  outcome: {
    status: "ready" | "failed";
    error: string | null;
    rows: number | null;
    result: unknown;
  },
  startedAt: string,
): boolean {
  let changes;
  try {
    changes = stmt(
      db,
      `UPDATE analyses SET status = ?, error = ?, rows = ?, result = ?, started_at = ?, finished_at = ?
     WHERE org_id = ? AND experiment_id = ? AND etag = ?`,
    ).run(
      outcome.status,
      outcome.error,
      outcome.rows,
      outcome.result === null ? null : JSON.stringify(outcome.result),
      startedAt,
      nowIso(),
      orgId,
      experimentId,
      etag,
    ).changes;
  } catch (error) {
    // A busy or read-only database must not take the process down from a background run: the
    // row stays `pending`, and the timer's scan runs the analysis again once it can be saved.
    if (isDatabaseUnavailable(error)) return false;
    throw error;
  }
  return Number(changes) > 0;
}

export function deleteAnalysis(db: Database, orgId: string, experimentId: string): void {
  stmt(db, "DELETE FROM analyses WHERE org_id = ? AND experiment_id = ?").run(
    orgId,
    experimentId,
  );
}

/** Every analysis row (the timer compares them with what storage holds). */
export function listAnalysisEtags(db: Database): Map<string, string> {
  const rows = stmt(db, "SELECT org_id, experiment_id, etag FROM analyses").all() as unknown as {
    org_id: string;
    experiment_id: string;
    etag: string;
  }[];
  return new Map(rows.map((r) => [`${r.org_id}/${r.experiment_id}`, r.etag]));
}
