import type { Database } from "./database.ts";
import { nowIso, stmt } from "./database.ts";

/** The saved analysis settings of an experiment (raw JSON object), or null. */
export function getSettings(
  db: Database,
  orgId: string,
  experimentId: string,
): Record<string, unknown> | null {
  const row = stmt(db, "SELECT json FROM settings WHERE org_id = ? AND experiment_id = ?")
    .get(orgId, experimentId) as { json: string } | undefined;
  return row ? JSON.parse(row.json) : null;
}

export function saveSettings(
  db: Database,
  orgId: string,
  experimentId: string,
  settings: Record<string, unknown>,
): void {
  stmt(
    db,
    `INSERT INTO settings (org_id, experiment_id, json, updated_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (org_id, experiment_id) DO UPDATE SET json = excluded.json, updated_at = excluded.updated_at`,
  ).run(orgId, experimentId, JSON.stringify(settings), nowIso());
}
