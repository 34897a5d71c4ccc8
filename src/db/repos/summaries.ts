/**
 * The summary of each experiment's last analysed delivery (users by id hash, rows per date;
 * `analysis/history/delivery_summary.ts` encodes it): what the next delivery's `changes` are
 * computed from. Its blob is kept in parts of `SUMMARY_PART_BYTES` on both engines (SQLite's
 * migration 4, PostgreSQL's 5): `head` reads the first parts only (a run needs the blob's header
 * before it aggregates), and neither the database nor its driver ever holds a large summary in
 * one value (PostgreSQL would send a 10 MB `BYTEA` as 20 MB of hex text). What `get` and `head`
 * answer is a `Uint8Array` of the caller's own.
 */
import type { Sql, SqlValue } from "../dialect.ts";
import type { Dialect } from "../dialect.ts";
import { nowIso } from "../errors.ts";

/** Bytes per stored part of a summary's blob. */
export const SUMMARY_PART_BYTES = 64 * 1024;

/** Parts written by one statement at most. */
const PARTS_PER_STATEMENT = 16;

/** The summary of an experiment's last analysed delivery. */
export interface DeliverySummaryRow {
  etag: string;
  /** SHA-256 of the delivered content (hex). */
  sha256: string;
  delivered_at: string;
  /** The encoded summary (`analysis/history/delivery_summary.ts`). */
  summary: Uint8Array;
  /** The `changes` JSON (as text) the analysis of this delivery found; null on a first one. */
  changes: string | null;
}

export interface DeliverySummaryRepo {
  /** The experiment's summary. */
  get(orgId: string, experimentId: string): Promise<DeliverySummaryRow | null>;
  /**
   * The same row with only the first `bytes` bytes of its blob (all of it when shorter): what a
   * run needs before it aggregates (the blob's header) without reading every user's hash.
   */
  head(orgId: string, experimentId: string, bytes: number): Promise<DeliverySummaryRow | null>;
  /** Replaces the experiment's summary. */
  save(orgId: string, experimentId: string, row: DeliverySummaryRow): Promise<void>;
  delete(orgId: string, experimentId: string): Promise<void>;
}

/** The experiment's summary row, with the first `bytes` bytes of its blob. */
async function readSummary(
  db: Sql,
  orgId: string,
  experimentId: string,
  bytes: number,
): Promise<DeliverySummaryRow | null> {
  const row = await db.get<Omit<DeliverySummaryRow, "summary">>(
    `SELECT etag, sha256, delivered_at, changes FROM delivery_summaries
     WHERE org_id = ? AND experiment_id = ?`,
    [orgId, experimentId],
  );
  if (row === undefined) return null;
  const parts = await db.all<{ bytes: Uint8Array }>(
    `SELECT bytes FROM delivery_summary_parts WHERE org_id = ? AND experiment_id = ? AND part < ?
     ORDER BY part`,
    [orgId, experimentId, Math.min(Math.ceil(bytes / SUMMARY_PART_BYTES), 2 ** 31 - 1)],
  );
  const size = parts.reduce((sum, part) => sum + part.bytes.length, 0);
  const summary = new Uint8Array(Math.min(size, bytes));
  let at = 0;
  for (const { bytes: part } of parts) {
    const take = Math.min(part.length, summary.length - at);
    summary.set(part.subarray(0, take), at);
    at += take;
  }
  return {
    etag: row.etag,
    sha256: row.sha256,
    delivered_at: row.delivered_at,
    summary,
    changes: row.changes,
  };
}

/** Replaces an experiment's delivery summary, inside the transaction `tx`. */
export async function saveSummary(
  tx: Sql,
  orgId: string,
  experimentId: string,
  row: DeliverySummaryRow,
): Promise<void> {
  await tx.run(
    `INSERT INTO delivery_summaries (org_id, experiment_id, etag, sha256, delivered_at,
       summary, changes, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (org_id, experiment_id) DO UPDATE SET etag = excluded.etag,
       sha256 = excluded.sha256, delivered_at = excluded.delivered_at,
       changes = excluded.changes, updated_at = excluded.updated_at`,
    [orgId, experimentId, row.etag, row.sha256, row.delivered_at, EMPTY, row.changes, nowIso()],
  );
  const blob = row.summary;
  const count = Math.ceil(blob.length / SUMMARY_PART_BYTES);
  for (let first = 0; first < count; first += PARTS_PER_STATEMENT) {
    const params: SqlValue[] = [];
    const last = Math.min(count, first + PARTS_PER_STATEMENT);
    for (let part = first; part < last; part++) {
      const at = part * SUMMARY_PART_BYTES;
      params.push(orgId, experimentId, part, blob.subarray(at, at + SUMMARY_PART_BYTES));
    }
    await tx.run(
      `INSERT INTO delivery_summary_parts (org_id, experiment_id, part, bytes)
       VALUES ${Array(last - first).fill("(?, ?, ?, ?)").join(", ")}
       ON CONFLICT (org_id, experiment_id, part) DO UPDATE SET bytes = excluded.bytes`,
      params,
    );
  }
  await tx.run(
    "DELETE FROM delivery_summary_parts WHERE org_id = ? AND experiment_id = ? AND part >= ?",
    [orgId, experimentId, count],
  );
}

/** The `summary` column's value: the blob is in the parts. */
const EMPTY = new Uint8Array(0);

export function summaryRepo(db: Dialect): DeliverySummaryRepo {
  return {
    get: (orgId, experimentId) => readSummary(db, orgId, experimentId, Infinity),
    head: (orgId, experimentId, bytes) => readSummary(db, orgId, experimentId, bytes),
    save: (orgId, experimentId, row) =>
      db.transaction((tx) => saveSummary(tx, orgId, experimentId, row)),
    delete: (orgId, experimentId) =>
      db.transaction(async (tx) => {
        for (const table of ["delivery_summaries", "delivery_summary_parts"]) {
          await tx.run(`DELETE FROM ${table} WHERE org_id = ? AND experiment_id = ?`, [
            orgId,
            experimentId,
          ]);
        }
      }),
  };
}
