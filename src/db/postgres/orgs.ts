/** Organizations on PostgreSQL (the same statements as the SQLite driver's). */
import type { Org, OrgRepo } from "../control_plane.ts";
import { nowIso } from "../control_plane.ts";
import { newId, orgName } from "../ids.ts";
import type { PgClient } from "./pg_client.ts";
import { iso } from "./_rows.ts";

interface OrgRow {
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
      await db.run((sql) =>
        sql`INSERT INTO orgs (id, name, active, created_at)
          VALUES (${org.id}, ${org.name}, true, ${org.created_at})`
      );
      return org;
    },
    get: (id) =>
      db.run(async (sql) => {
        const [row] = await sql<OrgRow[]>`SELECT * FROM orgs WHERE id = ${id}`;
        return row ? toOrg(row) : null;
      }),
    findByName: (name) =>
      db.run(async (sql) => {
        const [row] = await sql<OrgRow[]>`
          SELECT * FROM orgs WHERE name = ${name} ORDER BY created_at LIMIT 1`;
        return row ? toOrg(row) : null;
      }),
    list: () =>
      db.run(async (sql) =>
        (await sql<OrgRow[]>`SELECT * FROM orgs ORDER BY created_at, id`).map(toOrg)
      ),
    setActive: (id, active) =>
      db.run(async (sql) =>
        (await sql`UPDATE orgs SET active = ${active} WHERE id = ${id}`).count > 0
      ),
  };
}
