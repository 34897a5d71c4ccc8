/**
 * The dataset catalog on PostgreSQL, shared by every instance: the SQLite driver's statements,
 * with experiment ids and keys in byte order (`COLLATE "C"`, as SQLite's BINARY and storage
 * listings compare) for keyset pages and reconciliation.
 *
 * `put` writes a batch in one statement. The analysis status of a row's ETag is read with the
 * analyses rows locked (`FOR SHARE`): a result saved at the same moment waits for this statement
 * and then mirrors its status into the row just written, so the catalog cannot keep a status
 * read before that result was saved.
 */
import type { DatasetEntry, DatasetRepo, DatasetRow } from "../control_plane.ts";
import type { PgClient } from "./pg_client.ts";
import { int, iso } from "./_rows.ts";

interface Row {
  [column: string]: unknown;
  org_id: string;
  experiment_id: string;
  key: string;
  size_bytes: string;
  etag: string;
  delivered_at: Date;
  observed_at: Date;
  analysis_status: DatasetRow["analysis_status"];
}

const COLUMNS =
  "org_id, experiment_id, key, size_bytes, etag, delivered_at, observed_at, analysis_status";

function toRow(row: Row): DatasetRow {
  return {
    org_id: row.org_id,
    experiment_id: row.experiment_id,
    key: row.key,
    size_bytes: int(row.size_bytes),
    etag: row.etag,
    delivered_at: iso(row.delivered_at),
    observed_at: iso(row.observed_at),
    analysis_status: row.analysis_status,
  };
}

/**
 * One entry per dataset, as the SQLite driver's one-by-one upserts would leave it: the latest
 * observation, the later entry of equal ones. Sorted by dataset, so that concurrent batches lock
 * their rows in the same order.
 */
function latestPerDataset(entries: readonly DatasetEntry[]): DatasetEntry[] {
  const latest = new Map<string, DatasetEntry>();
  for (const e of entries) {
    const id = `${e.org_id}\u0000${e.experiment_id}`;
    const seen = latest.get(id);
    if (!seen || Date.parse(e.observed_at) >= Date.parse(seen.observed_at)) latest.set(id, e);
  }
  return [...latest.entries()].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0).map(([, e]) => e);
}

export function postgresDatasets(db: PgClient): DatasetRepo {
  const rows = async (sql: string, params: unknown[]) =>
    (await db.query<Row>(sql, params)).rows.map(toRow);
  return {
    put: async (entries) => {
      const batch = latestPerDataset(entries);
      if (batch.length === 0) return;
      await db.query(
        `WITH e AS (
           SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[],
             $6::timestamptz[], $7::timestamptz[])
             WITH ORDINALITY AS e(org_id, experiment_id, key, size_bytes, etag, delivered_at,
               observed_at, n)),
         a AS (
           SELECT a.org_id, a.experiment_id, a.etag, a.status FROM analyses a
           JOIN e ON a.org_id = e.org_id AND a.experiment_id = e.experiment_id
           FOR SHARE OF a)
         INSERT INTO datasets (${COLUMNS})
         SELECT e.org_id, e.experiment_id, e.key, e.size_bytes, e.etag, e.delivered_at,
           e.observed_at, COALESCE(a.status, 'pending')
         FROM e LEFT JOIN a
           ON a.org_id = e.org_id AND a.experiment_id = e.experiment_id AND a.etag = e.etag
         ORDER BY e.n
         ON CONFLICT (org_id, experiment_id) DO UPDATE SET
           key = excluded.key, size_bytes = excluded.size_bytes, etag = excluded.etag,
           delivered_at = excluded.delivered_at, observed_at = excluded.observed_at,
           analysis_status = excluded.analysis_status
         WHERE excluded.observed_at >= datasets.observed_at`,
        [
          batch.map((e) => e.org_id),
          batch.map((e) => e.experiment_id),
          batch.map((e) => e.key),
          batch.map((e) => e.size_bytes),
          batch.map((e) => e.etag),
          batch.map((e) => e.delivered_at),
          batch.map((e) => e.observed_at),
        ],
      );
    },
    remove: async (orgId, experimentId, observedBefore) =>
      ((await db.query(
        "DELETE FROM datasets WHERE org_id = $1 AND experiment_id = $2 AND observed_at <= $3",
        [orgId, experimentId, observedBefore],
      )).rowCount ?? 0) > 0,
    get: async (orgId, experimentId) =>
      (await rows(
        `SELECT ${COLUMNS} FROM datasets WHERE org_id = $1 AND experiment_id = $2`,
        [orgId, experimentId],
      ))[0] ?? null,
    page: (orgId, { after, limit }) =>
      after === null || after === undefined
        ? rows(
          `SELECT ${COLUMNS} FROM datasets WHERE org_id = $1 ORDER BY experiment_id LIMIT $2`,
          [orgId, limit],
        )
        : rows(
          `SELECT ${COLUMNS} FROM datasets WHERE org_id = $1 AND experiment_id > $2
           ORDER BY experiment_id LIMIT $3`,
          [orgId, after, limit],
        ),
    keyRange: (afterKey, throughKey, limit) =>
      throughKey === null
        ? rows(`SELECT ${COLUMNS} FROM datasets WHERE key > $1 ORDER BY key LIMIT $2`, [
          afterKey,
          limit,
        ])
        : rows(
          `SELECT ${COLUMNS} FROM datasets WHERE key > $1 AND key <= $2 ORDER BY key LIMIT $3`,
          [afterKey, throughKey, limit],
        ),
    // A scan of the table, as on SQLite (no index for every delivery to keep up).
    larger: (sizeBytes, limit) =>
      rows(
        `SELECT ${COLUMNS} FROM datasets WHERE size_bytes > $1
         ORDER BY size_bytes DESC LIMIT $2`,
        [sizeBytes, limit],
      ),
    pending: (maxBytes, observedBefore, limit) =>
      rows(
        `SELECT ${COLUMNS} FROM datasets
         WHERE analysis_status = 'pending' AND observed_at < $1 AND size_bytes <= $2
         ORDER BY observed_at DESC LIMIT $3`,
        [observedBefore, maxBytes, limit],
      ),
  };
}
