/**
 * Upload grants on PostgreSQL (the same statements as the SQLite driver's): any instance's scan
 * heads the keys of grants any instance handed out.
 */
import type { Grant, GrantRepo } from "../control_plane.ts";
import type { PgClient } from "./pg_client.ts";
import { iso } from "./_rows.ts";

interface Row {
  [column: string]: unknown;
  key: string;
  org_id: string;
  experiment_id: string;
  expires_at: Date;
}

function toGrant(row: Row): Grant {
  return {
    key: row.key,
    org_id: row.org_id,
    experiment_id: row.experiment_id,
    expires_at: iso(row.expires_at),
  };
}

export function postgresGrants(db: PgClient): GrantRepo {
  return {
    put: async (grants) => {
      // One row per key (its latest expiry), in key order: one statement cannot update a row
      // twice, and concurrent batches lock their rows in the same order.
      const latest = new Map<string, Grant>();
      for (const g of grants) {
        const seen = latest.get(g.key);
        if (!seen || Date.parse(g.expires_at) > Date.parse(seen.expires_at)) latest.set(g.key, g);
      }
      const batch = [...latest.values()].sort((a, b) => a.key < b.key ? -1 : 1);
      if (batch.length === 0) return;
      await db.query(
        `INSERT INTO grants (key, org_id, experiment_id, expires_at)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[])
         ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at
         WHERE excluded.expires_at > grants.expires_at`,
        [
          batch.map((g) => g.key),
          batch.map((g) => g.org_id),
          batch.map((g) => g.experiment_id),
          batch.map((g) => g.expires_at),
        ],
      );
    },
    open: async (since, orgId) =>
      (orgId === undefined
        ? await db.query<Row>(
          `SELECT key, org_id, experiment_id, expires_at FROM grants
           WHERE expires_at >= $1 ORDER BY key`,
          [since],
        )
        : await db.query<Row>(
          `SELECT key, org_id, experiment_id, expires_at FROM grants
           WHERE expires_at >= $1 AND org_id = $2 ORDER BY key`,
          [since, orgId],
        )).rows.map(toGrant),
    get: async (key, since) => {
      const { rows } = await db.query<Row>(
        `SELECT key, org_id, experiment_id, expires_at FROM grants
         WHERE key = $1 AND expires_at >= $2`,
        [key, since],
      );
      return rows[0] ? toGrant(rows[0]) : null;
    },
    prune: async (before) =>
      (await db.query("DELETE FROM grants WHERE expires_at < $1", [before])).rowCount ?? 0,
  };
}
