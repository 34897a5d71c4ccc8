/**
 * Runs one test body against both control-plane drivers: SQLite (a fresh file) and PostgreSQL
 * (a fresh database in the test process's cluster; skipped without PostgreSQL). `reopen` gives
 * a second handle on the same database, as another instance (or the admin CLI) would hold.
 */
import type { ControlPlane } from "../../src/db/control_plane.ts";
import { SqliteControlPlane } from "../../src/db/sqlite/sqlite_control_plane.ts";
import { openPostgres } from "../../src/db/postgres/postgres_control_plane.ts";
import { postgresTest, withDatabase } from "../_postgres.ts";

export type ControlPlaneBody = (
  db: ControlPlane,
  reopen: () => Promise<ControlPlane>,
) => Promise<void>;

/** Registers `name (sqlite)` and `name (postgres)`. */
export function controlPlaneTest(name: string, body: ControlPlaneBody): void {
  Deno.test(`${name} (sqlite)`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "abn-db-" });
    const handles: ControlPlane[] = [];
    const open = () => {
      const db = new SqliteControlPlane(`${dir}/abn.sqlite`);
      handles.push(db);
      return Promise.resolve(db);
    };
    try {
      await body(await open(), open);
    } finally {
      for (const db of handles) await db.close();
      await Deno.remove(dir, { recursive: true });
    }
  });
  postgresTest(`${name} (postgres)`, () =>
    withDatabase(async (database) => {
      const handles: ControlPlane[] = [];
      const open = async () => {
        const db = await openPostgres(database.url);
        handles.push(db);
        return db;
      };
      try {
        await body(await open(), open);
      } finally {
        for (const db of handles) await db.close();
      }
    }));
}

/** A SQLite control plane in a temporary folder (for what only that driver has), then removed. */
export async function withSqlite(
  fn: (db: SqliteControlPlane, path: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "abn-sqlite-db-" });
  const db = new SqliteControlPlane(`${dir}/abn.sqlite`);
  try {
    await fn(db, `${dir}/abn.sqlite`);
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
}
