/**
 * What only PostgreSQL has: timer locks held by one instance at a time, migrations applied once by instances starting together, TLS, and start-up
 * failures reported in one line without the password.
 */
import { assert, assertEquals, assertRejects } from "../_assert.ts";
import { DatabaseOpenError, DatabaseUnavailable } from "../../src/db/control_plane.ts";
import {
  openPostgres,
  PostgresControlPlane,
} from "../../src/db/postgres/postgres_control_plane.ts";
import { createPool } from "../../src/db/postgres/pg_client.ts";
import { admin, postgresTest, withDatabase } from "../_postgres.ts";
import { freePort, runMain } from "../_server.ts";

/** Two handles on one fresh database, as two instances. */
function twoInstances(
  name: string,
  fn: (a: PostgresControlPlane, b: PostgresControlPlane) => Promise<void>,
): void {
  postgresTest(name, () =>
    withDatabase(async (database) => {
      const a = await openPostgres(database.url);
      const b = await openPostgres(database.url);
      try {
        await fn(a, b);
      } finally {
        await a.close();
        await b.close();
      }
    }));
}

twoInstances(
  "withTimerLock: one instance at a time runs the job; the lock is free after",
  async (a, b) => {
    let release!: () => void;
    const held = new Promise<void>((r) => release = r);
    let entered!: () => void;
    const inside = new Promise<void>((r) => entered = r);
    const first = a.withTimerLock("scan", async () => {
      entered();
      await held;
      return "a";
    });
    await inside;
    assertEquals(await b.withTimerLock("scan", () => Promise.resolve("b")), undefined);
    assertEquals(await b.withTimerLock("cleanup", () => Promise.resolve("b")), "b"); // another lock
    release();
    assertEquals(await first, "a");
    assertEquals(await b.withTimerLock("scan", () => Promise.resolve("b")), "b");
  },
);

postgresTest(
  "migrations: instances starting together apply each migration once",
  () =>
    withDatabase(async (database) => {
      const planes = await Promise.all([1, 2, 3, 4].map(() => openPostgres(database.url)));
      try {
        const { rows } = await planes[0].db.query<{ version: number }>(
          "SELECT version FROM schema_migrations ORDER BY version",
        );
        assertEquals(rows.map((v) => v.version), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        assertEquals(planes.filter((p) => p.schema.from === 0).length, 1, "one instance migrated");
        assertEquals(planes.every((p) => p.schema.to === 10), true);
        const migrated = await runMain(["admin", "db", "migrate"], {
          ABN_DATABASE_URL: database.url,
        });
        assertEquals(migrated.code, 0, migrated.stderr);
        assertEquals(migrated.stdout.trim(), "PostgreSQL schema up to date (version 10)");
      } finally {
        for (const p of planes) await p.close();
      }
    }),
);

postgresTest(
  "TLS: sslmode=no-verify encrypts; sslrootcert=CA verifies the server; an unknown CA is refused",
  () =>
    withDatabase(async (database, cluster) => {
      for (
        const query of ["sslmode=no-verify", `sslmode=verify-full&sslrootcert=${cluster.caFile}`]
      ) {
        const db = await openPostgres(`${database.url}?${query}`);
        try {
          const { rows: [{ ssl }] } = await db.db.query<{ ssl: boolean }>(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
          );
          assertEquals(ssl, true, query);
        } finally {
          await db.close();
        }
      }
      const error = await assertRejects(
        () => openPostgres(`${database.url}?sslmode=verify-full`),
        DatabaseOpenError,
      );
      assert(/certificate/i.test(error.message), error.message);
    }),
);

/** Checks an open failure: one line, the expected cause, no password. */
async function openFails(url: string, password: string, cause: RegExp): Promise<void> {
  const error = await assertRejects(() => openPostgres(url), DatabaseOpenError);
  assert(cause.test(error.message), error.message);
  assertEquals(error.message.includes("\n"), false, error.message);
  assertEquals(error.message.includes(password), false, error.message);
}

postgresTest(
  "bad configuration stops opening with one line naming the cause, never the password",
  () =>
    withDatabase(async (database, cluster) => {
      const user = { name: "abn_limited", password: `secret-${crypto.randomUUID()}` };
      await admin(
        database.url,
        `CREATE ROLE ${user.name} LOGIN PASSWORD '${user.password}'`,
      );
      try {
        const port = freePort();
        await openFails(
          `postgres://u:${user.password}@127.0.0.1:${port}/db`,
          user.password,
          new RegExp(`PostgreSQL at 127\\.0\\.0\\.1:${port} refused the connection`),
        );
        await openFails(
          cluster.url(database.name, { name: user.name, password: "wrong-password" }),
          "wrong-password",
          /refused the password of user "abn_limited"/,
        );
        await openFails(
          cluster.url("no_such_db", user),
          user.password,
          /has no database "no_such_db"/,
        );
        // PostgreSQL 15 lets no one but the owner create tables in `public`.
        await openFails(
          cluster.url(database.name, user),
          user.password,
          /user "abn_limited" lacks a permission in database "abn_test_\w+": permission denied for schema public/,
        );
        // The owner migrated, but the role may not use the tables.
        await (await openPostgres(database.url)).close();
        await openFails(
          cluster.url(database.name, user),
          user.password,
          /lacks a permission .*SELECT, INSERT, UPDATE and DELETE are needed on schema_migrations, orgs, api_keys/,
        );
        await admin(
          database.url,
          `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${user.name}`,
        );
        const db = await openPostgres(cluster.url(database.name, user));
        await db.orgs.create("works");
        await db.close();
      } finally {
        await admin(
          database.url,
          `REVOKE ALL ON ALL TABLES IN SCHEMA public FROM ${user.name}`,
          `DROP ROLE ${user.name}`,
        );
      }
    }),
);

postgresTest(
  "serve refuses to start on a wrong password: exit 1, one line on stderr, no password anywhere",
  () =>
    withDatabase(async (database, cluster) => {
      const dataDir = await Deno.makeTempDir({ prefix: "abn-pg-serve-" });
      try {
        const url = cluster.url(database.name, {
          name: cluster.user,
          password: "not-the-password",
        });
        const out = await runMain(["serve"], {
          ABN_DATA_DIR: dataDir,
          ABN_DATABASE_URL: url,
          ABN_PORT: String(freePort()),
        });
        assertEquals(out.code, 1);
        assertEquals(
          out.stderr.trim(),
          `Cannot start: PostgreSQL at 127.0.0.1:${cluster.port} refused the password of user "${cluster.user}" (ABN_DATABASE_URL)`,
        );
        assertEquals((out.stdout + out.stderr).includes("not-the-password"), false);
      } finally {
        await Deno.remove(dataDir, { recursive: true });
      }
    }),
);

postgresTest(
  "a database that went away answers DatabaseUnavailable (503), not a crash",
  async () => {
    const db = new PostgresControlPlane(
      createPool(`postgres://u:p@127.0.0.1:${freePort()}/db?connect_timeout=2`),
      { from: 2, to: 2 },
    );
    try {
      await assertRejects(() => db.orgs.get("org_x"), DatabaseUnavailable);
      await assertRejects(() => db.keys.ownerByHash("x"), DatabaseUnavailable);
      await assertRejects(() => db.jobs.claim("A", 60, 1), DatabaseUnavailable);
      await assertRejects(
        () => db.withTimerLock("scan", () => Promise.resolve(1)),
        DatabaseUnavailable,
      );
      assertEquals(await db.reachable(), false);
      // A result that cannot be saved is reported unsaved (the job runs again), not thrown.
      assertEquals(
        await db.analyses.saveResult("o", "e", "t", {
          status: "failed",
          error: null,
          rows: null,
          result: null,
        }, new Date().toISOString()),
        false,
      );
    } finally {
      await db.close();
    }
  },
);
