import type { Database } from "./database.ts";
import { nowIso, stmt } from "./database.ts";
import { newId } from "./ids.ts";

export interface Org {
  id: string;
  name: string;
  active: boolean;
  created_at: string;
}

interface OrgRow {
  id: string;
  name: string;
  active: number;
  created_at: string;
}

function toOrg(row: OrgRow): Org {
  return { id: row.id, name: row.name, active: row.active === 1, created_at: row.created_at };
}

/** Creates an active organization and answers it. */
export function createOrg(db: Database, name: string): Org {
  const trimmed = name.trim();
  if (trimmed === "" || trimmed.length > 200) {
    throw new RangeError("Cannot create organization: the name must be 1 to 200 characters");
  }
  const org = { id: newId("org"), name: trimmed, active: true, created_at: nowIso() };
  stmt(db, "INSERT INTO orgs (id, name, active, created_at) VALUES (?, ?, 1, ?)")
    .run(org.id, org.name, org.created_at);
  return org;
}

export function getOrg(db: Database, id: string): Org | null {
  const row = stmt(db, "SELECT * FROM orgs WHERE id = ?").get(id) as OrgRow | undefined;
  return row ? toOrg(row) : null;
}

export function findOrgByName(db: Database, name: string): Org | null {
  const row = stmt(db, "SELECT * FROM orgs WHERE name = ? ORDER BY created_at LIMIT 1")
    .get(name) as OrgRow | undefined;
  return row ? toOrg(row) : null;
}

export function listOrgs(db: Database): Org[] {
  return (stmt(db, "SELECT * FROM orgs ORDER BY created_at, id").all() as unknown as OrgRow[])
    .map(toOrg);
}

/** Activates or deactivates an organization; answers false when it does not exist. */
export function setOrgActive(db: Database, id: string, active: boolean): boolean {
  const result = stmt(db, "UPDATE orgs SET active = ? WHERE id = ?").run(active ? 1 : 0, id);
  return Number(result.changes) > 0;
}
