/**
 * The summary of each experiment's last analysed delivery on PostgreSQL (the SQLite driver's
 * statements; the encoded summary is a `BYTEA`).
 */
import { Buffer } from "node:buffer";
import type { DeliverySummaryRepo, DeliverySummaryRow } from "../control_plane.ts";
import { nowIso } from "../control_plane.ts";
import type { PgClient, Queryable } from "./pg_client.ts";
import { iso } from "./_rows.ts";

function copyOf(bytes: Uint8Array): Uint8Array {
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return copy;
}

interface Row {
  [column: string]: unknown;
  etag: string;
  sha256: string;
  delivered_at: Date;
  summary: Uint8Array;
  changes: string | null;
}

/** An experiment's summary row, with the first `bytes` bytes of its blob (null: all of it). */
async function readSummary(
  db: PgClient,
  orgId: string,
  experimentId: string,
  bytes: number | null,
): Promise<DeliverySummaryRow | null> {
  const { rows: [row] } = await db.query<Row>(
    `SELECT etag, sha256, delivered_at, changes,
       ${bytes === null ? "summary" : "substring(summary from 1 for $3) AS summary"}
     FROM delivery_summaries WHERE org_id = $1 AND experiment_id = $2`,
    bytes === null ? [orgId, experimentId] : [orgId, experimentId, bytes],
  );
  if (!row) return null;
  return {
    etag: row.etag,
    sha256: row.sha256,
    delivered_at: iso(row.delivered_at),
    // A copy of the caller's own (the contract lets it free the blob): the driver's Buffer may
    // be a slice of Node's shared pool, which must never be detached.
    summary: copyOf(row.summary),
    changes: row.changes,
  };
}

/** Replaces an experiment's delivery summary (on the pool, or inside a transaction). */
export async function saveSummary(
  db: Queryable,
  orgId: string,
  experimentId: string,
  row: DeliverySummaryRow,
): Promise<void> {
  await db.query(
    `INSERT INTO delivery_summaries (org_id, experiment_id, etag, sha256, delivered_at,
       summary, changes, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (org_id, experiment_id) DO UPDATE SET etag = excluded.etag,
       sha256 = excluded.sha256, delivered_at = excluded.delivered_at,
       summary = excluded.summary, changes = excluded.changes,
       updated_at = excluded.updated_at`,
    [
      orgId,
      experimentId,
      row.etag,
      row.sha256,
      row.delivered_at,
      Buffer.from(row.summary.buffer, row.summary.byteOffset, row.summary.byteLength),
      row.changes,
      nowIso(),
    ],
  );
}

export function postgresDeliverySummaries(db: PgClient): DeliverySummaryRepo {
  return {
    get: (orgId, experimentId) => readSummary(db, orgId, experimentId, null),
    head: (orgId, experimentId, bytes) => readSummary(db, orgId, experimentId, bytes),
    save: (orgId, experimentId, row) => saveSummary(db, orgId, experimentId, row),
    delete: async (orgId, experimentId) => {
      await db.query(
        "DELETE FROM delivery_summaries WHERE org_id = $1 AND experiment_id = $2",
        [orgId, experimentId],
      );
    },
  };
}
