/** Analysis settings per experiment, saved whole (`analysis/settings.ts` checks them). */
import type { Dialect } from "../dialect.ts";
import { nowIso } from "../errors.ts";

export interface SettingsRepo {
  get(orgId: string, experimentId: string): Promise<Record<string, unknown> | null>;
  /** Replaces the saved object. */
  save(orgId: string, experimentId: string, settings: Record<string, unknown>): Promise<void>;
}

export function settingsRepo(db: Dialect): SettingsRepo {
  return {
    get: async (orgId, experimentId) => {
      const row = await db.get<{ json: string }>(
        "SELECT json FROM settings WHERE org_id = ? AND experiment_id = ?",
        [orgId, experimentId],
      );
      return row ? JSON.parse(row.json) : null;
    },
    save: async (orgId, experimentId, settings) => {
      await db.run(
        `INSERT INTO settings (org_id, experiment_id, json, updated_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (org_id, experiment_id) DO UPDATE SET json = excluded.json,
           updated_at = excluded.updated_at`,
        [orgId, experimentId, JSON.stringify(settings), nowIso()],
      );
    },
  };
}
