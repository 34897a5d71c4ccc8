/** Analysis settings on PostgreSQL (the same statements as the SQLite driver's). */
import type { SettingsRepo } from "../control_plane.ts";
import { nowIso } from "../control_plane.ts";
import type { PgClient } from "./pg_client.ts";

export function postgresSettings(db: PgClient): SettingsRepo {
  return {
    get: (orgId, experimentId) =>
      db.run(async (sql) => {
        const [row] = await sql<{ json: string }[]>`
          SELECT json FROM settings WHERE org_id = ${orgId} AND experiment_id = ${experimentId}`;
        return row ? JSON.parse(row.json) : null;
      }),
    save: async (orgId, experimentId, settings) => {
      await db.run((sql) =>
        sql`INSERT INTO settings (org_id, experiment_id, json, updated_at)
          VALUES (${orgId}, ${experimentId}, ${JSON.stringify(settings)}, ${nowIso()})
          ON CONFLICT (org_id, experiment_id) DO UPDATE SET json = excluded.json,
            updated_at = excluded.updated_at`
      );
    },
  };
}
