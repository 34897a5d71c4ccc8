/** Organizations: who owns datasets and keys; a deactivated one is refused everywhere. */
import type { Dialect } from "../dialect.ts";
import { nowIso } from "../errors.ts";
import { newId, orgName } from "../ids.ts";

export interface Org {
  id: string;
  name: string;
  active: boolean;
  created_at: string;
}

export interface OrgRepo {
  /** Throws `RangeError` for a name that is empty or longer than 200 characters. */
  create(name: string): Promise<Org>;
  get(id: string): Promise<Org | null>;
  /** The oldest organization of that name. */
  findByName(name: string): Promise<Org | null>;
  list(): Promise<Org[]>;
  /** False when there is no such organization. */
  setActive(id: string, active: boolean): Promise<boolean>;
}

interface Row {
  [column: string]: unknown;
  id: string;
  name: string;
  active: unknown;
  created_at: string;
}

function toOrg(row: Row): Org {
  return { id: row.id, name: row.name, active: Boolean(row.active), created_at: row.created_at };
}

export function orgRepo(db: Dialect): OrgRepo {
  return {
    create: async (name) => {
      const org = { id: newId("org"), name: orgName(name), active: true, created_at: nowIso() };
      await db.run("INSERT INTO orgs (id, name, active, created_at) VALUES (?, ?, ?, ?)", [
        org.id,
        org.name,
        true,
        org.created_at,
      ]);
      return org;
    },
    get: async (id) => {
      const row = await db.get<Row>("SELECT * FROM orgs WHERE id = ?", [id]);
      return row ? toOrg(row) : null;
    },
    findByName: async (name) => {
      const row = await db.get<Row>(
        "SELECT * FROM orgs WHERE name = ? ORDER BY created_at LIMIT 1",
        [name],
      );
      return row ? toOrg(row) : null;
    },
    list: async () => (await db.all<Row>("SELECT * FROM orgs ORDER BY created_at, id")).map(toOrg),
    setActive: async (id, active) =>
      await db.run("UPDATE orgs SET active = ? WHERE id = ?", [active, id]) > 0,
  };
}
