/**
 * Upload grants: the upload URLs `initiate` handed out (recorded for S3, where the PUT bypasses
 * the service), so any instance's scan heads the keys of grants any instance handed out.
 */
import type { Dialect } from "../dialect.ts";
import { rowsParam } from "../dialect.ts";

/** An upload URL handed out by `initiate`. */
export interface Grant {
  org_id: string;
  experiment_id: string;
  key: string;
  /** When the URL expires, ISO-8601. */
  expires_at: string;
}

export interface GrantRepo {
  /** Records grants, in one transaction; a key keeps the latest expiry it was granted. */
  put(grants: readonly Grant[]): Promise<void>;
  /** Grants expiring at or after `since` (of one organization when given), by key. */
  open(since: string, orgId?: string): Promise<Grant[]>;
  /** Grants of one key expiring at or after `since`, if any. */
  get(key: string, since: string): Promise<Grant | null>;
  /** Deletes grants that expired before `before`; answers how many. */
  prune(before: string): Promise<number>;
}

const COLUMNS = "key, org_id, experiment_id, expires_at";

export function grantRepo(db: Dialect): GrantRepo {
  return {
    put: async (grants) => {
      // One row per key (its latest expiry), in key order: one statement cannot change a row
      // twice, and concurrent batches lock their rows in the same order.
      const latest = new Map<string, Grant>();
      for (const g of grants) {
        const seen = latest.get(g.key);
        if (!seen || Date.parse(g.expires_at) > Date.parse(seen.expires_at)) latest.set(g.key, g);
      }
      const batch = [...latest.values()].sort((a, b) => a.key < b.key ? -1 : 1);
      if (batch.length === 0) return;
      await db.run(
        `INSERT INTO grants (${COLUMNS})
         SELECT ${COLUMNS} FROM ${
          db.rows("g", { key: "text", org_id: "text", experiment_id: "text", expires_at: "time" })
        } WHERE true
         ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at
         WHERE excluded.expires_at > grants.expires_at`,
        [rowsParam(batch.map((g) => ({ ...g })))],
      );
    },
    open: (since, orgId) =>
      orgId === undefined
        ? db.all<Grant>(`SELECT ${COLUMNS} FROM grants WHERE expires_at >= ? ORDER BY key`, [
          since,
        ])
        : db.all<Grant>(
          `SELECT ${COLUMNS} FROM grants WHERE expires_at >= ? AND org_id = ? ORDER BY key`,
          [since, orgId],
        ),
    get: async (key, since) =>
      (await db.get<Grant>(`SELECT ${COLUMNS} FROM grants WHERE key = ? AND expires_at >= ?`, [
        key,
        since,
      ])) ?? null,
    prune: (before) => db.run("DELETE FROM grants WHERE expires_at < ?", [before]),
  };
}
