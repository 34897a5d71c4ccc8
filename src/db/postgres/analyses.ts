/** Analysis results on PostgreSQL (the same statements as the SQLite driver's). */
import type { AnalysisRepo, AnalysisRow, AnalysisStatus } from "../control_plane.ts";
import { DatabaseUnavailable, nowIso } from "../control_plane.ts";
import type { PgClient } from "./pg_client.ts";
import { int, intOrNull, iso, isoOrNull } from "./_rows.ts";

interface Row {
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
    get: (orgId, experimentId) =>
      db.run(async (sql) => {
        const [row] = await sql<Row[]>`
          SELECT * FROM analyses WHERE org_id = ${orgId} AND experiment_id = ${experimentId}`;
        return row ? toAnalysis(row) : null;
      }),
    status: (orgId, experimentId, etag) =>
      db.run(async (sql) => {
        const [row] = await sql<{ status: AnalysisStatus; etag: string }[]>`
          SELECT status, etag FROM analyses
          WHERE org_id = ${orgId} AND experiment_id = ${experimentId}`;
        return row && row.etag === etag ? row.status : "pending";
      }),
    markPending: async (orgId, experimentId, etag, sizeBytes, deliveredAt) => {
      await db.run((sql) =>
        sql`INSERT INTO analyses (org_id, experiment_id, etag, size_bytes, status, delivered_at)
          VALUES (${orgId}, ${experimentId}, ${etag}, ${sizeBytes}, 'pending', ${deliveredAt})
          ON CONFLICT (org_id, experiment_id) DO UPDATE SET
            etag = excluded.etag, size_bytes = excluded.size_bytes, status = 'pending',
            error = NULL, rows = NULL, result = NULL, delivered_at = excluded.delivered_at,
            started_at = NULL, finished_at = NULL`
      );
    },
    saveResult: async (orgId, experimentId, etag, outcome, startedAt) => {
      try {
        const result = outcome.result === null ? null : JSON.stringify(outcome.result);
        return await db.run(async (sql) =>
          (await sql`UPDATE analyses SET status = ${outcome.status}, error = ${outcome.error},
              rows = ${outcome.rows}, result = ${result}, started_at = ${startedAt},
              finished_at = ${nowIso()}
            WHERE org_id = ${orgId} AND experiment_id = ${experimentId} AND etag = ${etag}`)
            .count > 0
        );
      } catch (error) {
        // Not saved: the row stays `pending`, and the job (or the scan) runs the analysis again.
        if (error instanceof DatabaseUnavailable) return false;
        throw error;
      }
    },
    delete: async (orgId, experimentId) => {
      await db.run((sql) =>
        sql`DELETE FROM analyses WHERE org_id = ${orgId} AND experiment_id = ${experimentId}`
      );
    },
    etags: () =>
      db.run(async (sql) => {
        const rows = await sql<{ org_id: string; experiment_id: string; etag: string }[]>`
          SELECT org_id, experiment_id, etag FROM analyses`;
        return new Map(rows.map((r) => [`${r.org_id}/${r.experiment_id}`, r.etag]));
      }),
    pending: () =>
      db.run(async (sql) => {
        const rows = await sql<{ org_id: string; experiment_id: string }[]>`
          SELECT org_id, experiment_id FROM analyses WHERE status = 'pending'`;
        return new Set(rows.map((r) => `${r.org_id}/${r.experiment_id}`));
      }),
  };
}
