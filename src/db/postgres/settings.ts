/** Analysis settings on PostgreSQL (the same statements as the SQLite driver's). */
import type { SettingsRepo } from "../control_plane.ts";
import { nowIso } from "../control_plane.ts";
import type { PgClient } from "./pg_client.ts";

export function postgresSettings(db: PgClient): SettingsRepo {
  return {
    get: async (orgId, experimentId) => {
      const { rows } = await db.query<{ json: string }>(
        "SELECT json FROM settings WHERE org_id = $1 AND experiment_id = $2",
        [orgId, experimentId],
      );
      return rows[0] ? JSON.parse(rows[0].json) : null;
    },
    save: async (orgId, experimentId, settings) => {
      await db.query(
        `INSERT INTO settings (org_id, experiment_id, json, updated_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (org_id, experiment_id) DO UPDATE SET json = excluded.json,
           updated_at = excluded.updated_at`,
        [orgId, experimentId, JSON.stringify(settings), nowIso()],
      );
    },
  };
}
