/** Organizations on PostgreSQL (the same statements as the SQLite driver's). */
import type { Org, OrgRepo } from "../control_plane.ts";
import { nowIso } from "../control_plane.ts";
import { newId, orgName } from "../ids.ts";
import type { PgClient } from "./pg_client.ts";
import { iso } from "./_rows.ts";

interface OrgRow {
  [column: string]: unknown;
  id: string;
  name: string;
  active: boolean;
  created_at: Date;
}

function toOrg(row: OrgRow): Org {
  return { id: row.id, name: row.name, active: row.active, created_at: iso(row.created_at) };
}

export function postgresOrgs(db: PgClient): OrgRepo {
  return {
    create: async (name) => {
      const org = { id: newId("org"), name: orgName(name), active: true, created_at: nowIso() };
      await db.query(
        "INSERT INTO orgs (id, name, active, created_at) VALUES ($1, $2, true, $3)",
        [org.id, org.name, org.created_at],
      );
      return org;
    },
    get: async (id) => {
      const { rows } = await db.query<OrgRow>("SELECT * FROM orgs WHERE id = $1", [id]);
      return rows[0] ? toOrg(rows[0]) : null;
    },
    findByName: async (name) => {
      const { rows } = await db.query<OrgRow>(
        "SELECT * FROM orgs WHERE name = $1 ORDER BY created_at LIMIT 1",
        [name],
      );
      return rows[0] ? toOrg(rows[0]) : null;
    },
    list: async () =>
      (await db.query<OrgRow>("SELECT * FROM orgs ORDER BY created_at, id")).rows.map(toOrg),
    setActive: async (id, active) =>
      ((await db.query("UPDATE orgs SET active = $1 WHERE id = $2", [active, id])).rowCount ??
        0) > 0,
  };
}
