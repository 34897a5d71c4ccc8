/**
 * Each experiment's history: one snapshot per delivered content (keyed by its SHA-256),
 * numbered per experiment, the latest's figures replaced by a re-run, the oldest beyond `keep`
 * dropped. A record holds its experiment's lock (`Transaction.lock`), so two instances recording
 * at once number their snapshots one after the other.
 */
import type { Dialect, Transaction } from "../dialect.ts";

/** One snapshot of an experiment's history, as stored. */
export interface HistorySnapshot {
  /** Its place in the experiment's history: 1, 2, … in the order they were kept. */
  seq: number;
  /** SHA-256 of the delivered content (hex): one snapshot per content. */
  sha256: string;
  etag: string;
  delivered_at: string;
  analysed_at: string;
  /** The snapshot's figures, a JSON object as text (`analysis/history/snapshot.ts`). */
  figures: string;
}

/** What `HistoryRepo.record` did with a snapshot. */
export type RecordOutcome = "added" | "replaced" | "unchanged";

export interface HistoryRepo {
  /**
   * Keeps the snapshot of a ready analysis, keyed by the content's SHA-256: content already kept
   * adds nothing ("unchanged"), except that the latest snapshot's figures and `analysed_at` are
   * replaced when it is that content ("replaced", e.g. a settings re-run). A new one is added
   * ("added") and the oldest beyond `keep` are dropped.
   */
  record(
    orgId: string,
    experimentId: string,
    snapshot: Omit<HistorySnapshot, "seq">,
    keep: number,
  ): Promise<RecordOutcome>;
  /** Snapshots after `afterSeq` (0: from the first), oldest first, at most `limit`. */
  list(
    orgId: string,
    experimentId: string,
    afterSeq: number,
    limit: number,
  ): Promise<HistorySnapshot[]>;
  delete(orgId: string, experimentId: string): Promise<void>;
}

/** Keeps a snapshot inside the transaction `tx`, as `HistoryRepo.record` describes. */
export async function recordSnapshot(
  tx: Transaction,
  orgId: string,
  experimentId: string,
  snapshot: Omit<HistorySnapshot, "seq">,
  keep: number,
): Promise<RecordOutcome> {
  await tx.lock(`history/${orgId}/${experimentId}`);
  const found = await tx.get<{ last: number | null; same: number | null }>(
    `SELECT max(seq) AS last, max(CASE WHEN sha256 = ? THEN seq END) AS same
     FROM history_snapshots WHERE org_id = ? AND experiment_id = ?`,
    [snapshot.sha256, orgId, experimentId],
  );
  const last = found?.last ?? null;
  const same = found?.same ?? null;
  if (same !== null) {
    if (same !== last) return "unchanged";
    await tx.run(
      `UPDATE history_snapshots SET figures = ?, analysed_at = ?
       WHERE org_id = ? AND experiment_id = ? AND seq = ?`,
      [snapshot.figures, snapshot.analysed_at, orgId, experimentId, same],
    );
    return "replaced";
  }
  const seq = (last ?? 0) + 1;
  await tx.run(
    `INSERT INTO history_snapshots (org_id, experiment_id, seq, sha256, etag, delivered_at,
       analysed_at, figures) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
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
  if (seq > keep) {
    await tx.run(
      "DELETE FROM history_snapshots WHERE org_id = ? AND experiment_id = ? AND seq <= ?",
      [orgId, experimentId, seq - keep],
    );
  }
  return "added";
}

export function historyRepo(db: Dialect): HistoryRepo {
  return {
    record: (orgId, experimentId, snapshot, keep) =>
      db.transaction((tx) => recordSnapshot(tx, orgId, experimentId, snapshot, keep)),
    list: (orgId, experimentId, afterSeq, limit) =>
      db.all<HistorySnapshot>(
        `SELECT seq, sha256, etag, delivered_at, analysed_at, figures FROM history_snapshots
         WHERE org_id = ? AND experiment_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
        [orgId, experimentId, afterSeq, limit],
      ),
    delete: async (orgId, experimentId) => {
      await db.run("DELETE FROM history_snapshots WHERE org_id = ? AND experiment_id = ?", [
        orgId,
        experimentId,
      ]);
    },
  };
}
