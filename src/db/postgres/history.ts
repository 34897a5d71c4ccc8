/**
 * Experiment history on PostgreSQL (the SQLite driver's rules): one snapshot per delivered
 * content, numbered per experiment, the latest's figures replaced by a re-run, the oldest beyond
 * `keep` dropped. A record runs in a transaction holding an advisory lock of its experiment, so
 * two instances recording at once number their snapshots one after the other.
 */
import type { HistoryRepo, HistorySnapshot, RecordOutcome } from "../control_plane.ts";
import type { PgClient, Queryable } from "./pg_client.ts";
import { HISTORY_LOCK_NAMESPACE } from "./pg_client.ts";
import { iso } from "./_rows.ts";

interface Row {
  [column: string]: unknown;
  seq: number;
  sha256: string;
  etag: string;
  delivered_at: Date;
  analysed_at: Date;
  figures: string;
}

function toSnapshot(row: Row): HistorySnapshot {
  return {
    seq: row.seq,
    sha256: row.sha256,
    etag: row.etag,
    delivered_at: iso(row.delivered_at),
    analysed_at: iso(row.analysed_at),
    figures: row.figures,
  };
}

/** Keeps a snapshot inside the transaction `tx`, as `HistoryRepo.record` describes. */
export async function recordSnapshot(
  tx: Queryable,
  orgId: string,
  experimentId: string,
  snapshot: Omit<HistorySnapshot, "seq">,
  keep: number,
): Promise<RecordOutcome> {
  await tx.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [
    HISTORY_LOCK_NAMESPACE,
    `${orgId}/${experimentId}`,
  ]);
  const { rows: [{ last, same }] } = await tx.query<
    { last: number | null; same: number | null }
  >(
    `SELECT max(seq) AS last, max(seq) FILTER (WHERE sha256 = $3) AS same
     FROM history_snapshots WHERE org_id = $1 AND experiment_id = $2`,
    [orgId, experimentId, snapshot.sha256],
  );
  if (same !== null) {
    if (same !== last) return "unchanged";
    await tx.query(
      `UPDATE history_snapshots SET figures = $1, analysed_at = $2
       WHERE org_id = $3 AND experiment_id = $4 AND seq = $5`,
      [snapshot.figures, snapshot.analysed_at, orgId, experimentId, same],
    );
    return "replaced";
  }
  const seq = (last ?? 0) + 1;
  await tx.query(
    `INSERT INTO history_snapshots (org_id, experiment_id, seq, sha256, etag, delivered_at,
       analysed_at, figures) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [
      orgId,
      experimentId,
      seq,
      snapshot.sha256,
      snapshot.etag,
      snapshot.delivered_at,
      snapshot.analysed_at,
      snapshot.figures,
    ],
  );
  await tx.query(
    "DELETE FROM history_snapshots WHERE org_id = $1 AND experiment_id = $2 AND seq <= $3",
    [orgId, experimentId, seq - keep],
  );
  return "added";
}

export function postgresHistory(db: PgClient): HistoryRepo {
  return {
    record: (orgId, experimentId, snapshot, keep) =>
      db.transaction((tx) => recordSnapshot(tx, orgId, experimentId, snapshot, keep)),
    list: async (orgId, experimentId, afterSeq, limit) =>
      (await db.query<Row>(
        `SELECT seq, sha256, etag, delivered_at, analysed_at, figures FROM history_snapshots
         WHERE org_id = $1 AND experiment_id = $2 AND seq > $3 ORDER BY seq LIMIT $4`,
        [orgId, experimentId, afterSeq, limit],
      )).rows.map(toSnapshot),
    delete: async (orgId, experimentId) => {
      await db.query("DELETE FROM history_snapshots WHERE org_id = $1 AND experiment_id = $2", [
        orgId,
        experimentId,
      ]);
    },
  };
}
