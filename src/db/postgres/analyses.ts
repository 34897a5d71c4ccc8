/**
 * Analysis results on PostgreSQL (the same statements as the SQLite driver's). Every change of a
 * result's status is mirrored into the catalog row of the same ETag in the same transaction, by
 * a statement of its own: it runs once the analyses row is locked, so it also sees a catalog row
 * that `datasets.put` committed while this change waited for that lock (`put` reads the status
 * with the analyses rows locked), and the catalog never keeps another status than the saved one.
 */
import type {
  AnalysisRepo,
  AnalysisRow,
  AnalysisStatus,
  OutdatedAnalysis,
} from "../control_plane.ts";
import { DatabaseUnavailable, outcomeValues } from "../control_plane.ts";
import type { PgClient, Queryable } from "./pg_client.ts";
import { int, intOrNull, iso, isoOrNull } from "./_rows.ts";
import { recordSnapshot } from "./history.ts";
import { saveSummary } from "./delivery_summaries.ts";

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
  analysis_version: number | null;
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
    analysis_version: row.analysis_version,
  };
}

/** Mirrors the status of the analysis of `etag` into the catalog row of that ETag. */
async function mirror(
  tx: Queryable,
  orgId: string,
  experimentId: string,
  etag: string,
  status: AnalysisStatus,
): Promise<void> {
  await tx.query(
    `UPDATE datasets SET analysis_status = $1
     WHERE org_id = $2 AND experiment_id = $3 AND etag = $4 AND analysis_status <> $1`,
    [status, orgId, experimentId, etag],
  );
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
    // One statement (one round trip): the row and the catalog's mirror of its status.
    markPending: async (orgId, experimentId, etag, sizeBytes, deliveredAt) => {
      await db.query(
        `WITH a AS (
           INSERT INTO analyses (org_id, experiment_id, etag, size_bytes, status, delivered_at)
           VALUES ($1, $2, $3, $4, 'pending', $5)
           ON CONFLICT (org_id, experiment_id) DO UPDATE SET
             etag = excluded.etag, size_bytes = excluded.size_bytes, status = 'pending',
             error = NULL, rows = NULL, result = NULL, delivered_at = excluded.delivered_at,
             started_at = NULL, finished_at = NULL, analysis_version = NULL
           RETURNING 1)
         UPDATE datasets SET analysis_status = 'pending'
         WHERE org_id = $1 AND experiment_id = $2 AND etag = $3 AND analysis_status <> 'pending'
           AND EXISTS (SELECT FROM a)`,
        [orgId, experimentId, etag, sizeBytes, deliveredAt],
      );
    },
    saveResult: async (orgId, experimentId, etag, outcome, startedAt, history) => {
      try {
        return await db.transaction(async (tx) => {
          const { rowCount } = await tx.query(
            `UPDATE analyses SET status = $1, error = $2, rows = $3, result = $4, started_at = $5,
               finished_at = $6, analysis_version = $7
             WHERE org_id = $8 AND experiment_id = $9 AND etag = $10`,
            [...outcomeValues(outcome, startedAt), orgId, experimentId, etag],
          );
          if ((rowCount ?? 0) === 0) return false;
          await mirror(tx, orgId, experimentId, etag, outcome.status);
          if (history) {
            if (history.summary) await saveSummary(tx, orgId, experimentId, history.summary);
            await recordSnapshot(tx, orgId, experimentId, history.snapshot, history.keep);
          }
          return true;
        });
      } catch (error) {
        // Not saved: the row stays `pending`, and the job (or the scan) runs the analysis again.
        if (error instanceof DatabaseUnavailable) return false;
        throw error;
      }
    },
    delete: (orgId, experimentId) =>
      db.transaction(async (tx) => {
        await tx.query("DELETE FROM analyses WHERE org_id = $1 AND experiment_id = $2", [
          orgId,
          experimentId,
        ]);
        await tx.query(
          `UPDATE datasets SET analysis_status = 'pending'
           WHERE org_id = $1 AND experiment_id = $2 AND analysis_status <> 'pending'`,
          [orgId, experimentId],
        );
      }),
    outdated: async (version) => {
      const { rows } = await db.query<
        {
          org_id: string;
          experiment_id: string;
          etag: string;
          size_bytes: string;
          delivered_at: Date;
        }
      >(
        `SELECT org_id, experiment_id, etag, size_bytes, delivered_at FROM analyses
         WHERE status = 'ready' AND (analysis_version IS NULL OR analysis_version < $1)
         ORDER BY delivered_at DESC, org_id, experiment_id`,
        [version],
      );
      return rows.map((r): OutdatedAnalysis => ({
        org_id: r.org_id,
        experiment_id: r.experiment_id,
        etag: r.etag,
        size_bytes: int(r.size_bytes),
        delivered_at: iso(r.delivered_at),
      }));
    },
  };
}
