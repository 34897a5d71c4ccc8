/** Analysis results on PostgreSQL (the same statements as the SQLite driver's). */
import type { AnalysisRepo, AnalysisRow, AnalysisStatus } from "../control_plane.ts";
import { DatabaseUnavailable, nowIso } from "../control_plane.ts";
import type { PgClient } from "./pg_client.ts";
import { int, intOrNull, iso, isoOrNull } from "./_rows.ts";

interface Row {
  [column: string]: unknown;
  org_id: string;
  experiment_id: string;
  etag: string;
  size_bytes: string;
  status: AnalysisStatus;
  error: string | null;
  rows: string | null;
  result: string | null;
  delivered_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

function toAnalysis(row: Row): AnalysisRow {
  return {
    org_id: row.org_id,
    experiment_id: row.experiment_id,
    etag: row.etag,
    size_bytes: int(row.size_bytes),
    status: row.status,
    error: row.error,
    rows: intOrNull(row.rows),
    result: row.result,
    delivered_at: iso(row.delivered_at),
    started_at: isoOrNull(row.started_at),
    finished_at: isoOrNull(row.finished_at),
  };
}

export function postgresAnalyses(db: PgClient): AnalysisRepo {
  return {
    get: async (orgId, experimentId) => {
      const { rows } = await db.query<Row>(
        "SELECT * FROM analyses WHERE org_id = $1 AND experiment_id = $2",
        [orgId, experimentId],
      );
      return rows[0] ? toAnalysis(rows[0]) : null;
    },
    status: async (orgId, experimentId, etag) => {
      const { rows } = await db.query<{ status: AnalysisStatus; etag: string }>(
        "SELECT status, etag FROM analyses WHERE org_id = $1 AND experiment_id = $2",
        [orgId, experimentId],
      );
      return rows[0] && rows[0].etag === etag ? rows[0].status : "pending";
    },
    markPending: async (orgId, experimentId, etag, sizeBytes, deliveredAt) => {
      await db.query(
        `INSERT INTO analyses (org_id, experiment_id, etag, size_bytes, status, delivered_at)
         VALUES ($1, $2, $3, $4, 'pending', $5)
         ON CONFLICT (org_id, experiment_id) DO UPDATE SET
           etag = excluded.etag, size_bytes = excluded.size_bytes, status = 'pending',
           error = NULL, rows = NULL, result = NULL, delivered_at = excluded.delivered_at,
           started_at = NULL, finished_at = NULL`,
        [orgId, experimentId, etag, sizeBytes, deliveredAt],
      );
    },
    saveResult: async (orgId, experimentId, etag, outcome, startedAt) => {
      try {
        const { rowCount } = await db.query(
          `UPDATE analyses SET status = $1, error = $2, rows = $3, result = $4, started_at = $5,
             finished_at = $6
           WHERE org_id = $7 AND experiment_id = $8 AND etag = $9`,
          [
            outcome.status,
            outcome.error,
            outcome.rows,
            outcome.result === null ? null : JSON.stringify(outcome.result),
            startedAt,
            nowIso(),
            orgId,
            experimentId,
            etag,
          ],
        );
        return (rowCount ?? 0) > 0;
      } catch (error) {
        // Not saved: the row stays `pending`, and the job (or the scan) runs the analysis again.
        if (error instanceof DatabaseUnavailable) return false;
        throw error;
      }
    },
    delete: async (orgId, experimentId) => {
      await db.query("DELETE FROM analyses WHERE org_id = $1 AND experiment_id = $2", [
        orgId,
        experimentId,
      ]);
    },
    etags: async () => {
      const { rows } = await db.query<{ org_id: string; experiment_id: string; etag: string }>(
        "SELECT org_id, experiment_id, etag FROM analyses",
      );
      return new Map(rows.map((r) => [`${r.org_id}/${r.experiment_id}`, r.etag]));
    },
    pending: async () => {
      const { rows } = await db.query<{ org_id: string; experiment_id: string }>(
        "SELECT org_id, experiment_id FROM analyses WHERE status = 'pending'",
      );
      return new Set(rows.map((r) => `${r.org_id}/${r.experiment_id}`));
    },
  };
}
