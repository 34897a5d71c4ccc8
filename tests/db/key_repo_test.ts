/**
 * Scoped keys on both control-plane drivers: scopes, names and expiry stored and read back alike,
 * the status of each key, revocation keeping the last active admin key (also when two handles
 * revoke at once), rotation in one transaction, and keys made before scopes existed keeping all
 * four after the migration.
 */
import { DatabaseSync } from "node:sqlite";
import { assert, assertEquals } from "../_assert.ts";
import { hashKey } from "../../src/db/api_keys.ts";
import { MIGRATIONS as SQLITE_MIGRATIONS } from "../../src/db/sqlite/migrations.ts";
import { SqliteControlPlane } from "../../src/db/sqlite/sqlite_control_plane.ts";
import { MIGRATIONS as PG_MIGRATIONS } from "../../src/db/postgres/migrations.ts";
import { openPostgres } from "../../src/db/postgres/postgres_control_plane.ts";
import { Client } from "../../src/db/postgres/_pg.ts";
import { controlPlaneTest } from "./_control_planes.ts";
import { postgresTest, withDatabase } from "../_postgres.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();

controlPlaneTest(
  "keys keep their scopes, name and expiry; the status follows revocation and expiry",
  async (db, reopen) => {
    const org = await db.orgs.create("acme");
    const all = await db.keys.create(org.id);
    // Made apart: the list is oldest first, and two keys of one millisecond are in id order.
    await new Promise((r) => setTimeout(r, 5));
    const scoped = await db.keys.create(org.id, {
      name: "ci pipeline",
      scopes: ["read", "upload"],
      expiresAt: inMs(400),
    });
    assertEquals(all.info.scopes, ["upload", "read", "write", "admin"]);
    assertEquals(all.info.name, null);
    assertEquals(all.info.expires_at, null);
    assertEquals(scoped.info.scopes, ["upload", "read"]); // stored in one order
    assertEquals(scoped.info.status, "active");
    const other = await reopen();
    const listed = await other.keys.list(org.id);
    assertEquals(listed.map((k) => [k.key_id, k.name, k.scopes, k.status]), [
      [all.info.key_id, null, ["upload", "read", "write", "admin"], "active"],
      [scoped.info.key_id, "ci pipeline", ["upload", "read"], "active"],
    ]);
    assertEquals(listed[1].expires_at, scoped.info.expires_at);
    assertEquals(await other.keys.get(scoped.info.key_id), listed[1]);
    assertEquals(await other.keys.get("key_missing"), null);
    const owner = await other.keys.ownerByHash(hashKey(scoped.api_key));
    assertEquals(owner?.scopes, ["upload", "read"]);
    assertEquals(owner?.expiresAt, scoped.info.expires_at);

    await sleep(450);
    const expired = (await other.keys.list(org.id))[1];
    assertEquals([expired.status, expired.active], ["expired", false]);
    // Revoked wins over expired.
    assertEquals((await db.keys.revoke(scoped.info.key_id)).outcome, "revoked");
    assertEquals((await other.keys.get(scoped.info.key_id))?.status, "revoked");
  },
);

controlPlaneTest(
  "revoking keeps the organization's last active admin key when asked, and only that",
  async (db) => {
    const acme = await db.orgs.create("acme");
    const beta = await db.orgs.create("beta");
    const admin = await db.keys.create(acme.id, { scopes: ["admin"] });
    const reader = await db.keys.create(acme.id, { scopes: ["read"] });
    const lapsed = await db.keys.create(acme.id, { expiresAt: inMs(200) });
    const guarded = { orgId: acme.id, keepLastAdmin: true };
    // Another admin key counts while it has not expired.
    assertEquals((await db.keys.revoke(reader.info.key_id, guarded)).outcome, "revoked");
    await sleep(250);
    assertEquals((await db.keys.revoke(admin.info.key_id, guarded)).outcome, "last_admin_key");
    assertEquals((await db.keys.get(admin.info.key_id))?.status, "active");
    // An expired admin key may go; another organization's key is not found.
    assertEquals((await db.keys.revoke(lapsed.info.key_id, guarded)).outcome, "revoked");
    assertEquals(
      (await db.keys.revoke(admin.info.key_id, { orgId: beta.id, keepLastAdmin: true })).outcome,
      "not_found",
    );
    const second = await db.keys.create(acme.id, { scopes: ["admin", "read"] });
    assertEquals((await db.keys.revoke(admin.info.key_id, guarded)).outcome, "revoked");
    assertEquals((await db.keys.revoke(second.info.key_id, guarded)).outcome, "last_admin_key");
    // Without the guard (the admin CLI) any key goes.
    assertEquals((await db.keys.revoke(second.info.key_id)).outcome, "revoked");
  },
);

controlPlaneTest(
  "two handles revoking an organization's two admin keys at once leave one of them",
  async (db, reopen) => {
    const org = await db.orgs.create("acme");
    const other = await reopen();
    for (let round = 0; round < 5; round++) {
      const a = await db.keys.create(org.id, { scopes: ["admin"] });
      const b = await db.keys.create(org.id, { scopes: ["admin"] });
      const guarded = { orgId: org.id, keepLastAdmin: true };
      const outcomes = (await Promise.all([
        db.keys.revoke(a.info.key_id, guarded),
        other.keys.revoke(b.info.key_id, guarded),
      ])).map((r) => r.outcome).sort();
      assertEquals(outcomes, ["last_admin_key", "revoked"], `round ${round}`);
      const left = (await db.keys.list(org.id)).filter((k) => k.active);
      assertEquals(left.length, 1);
      await db.keys.revoke(left[0].key_id); // start the next round without admin keys
    }
  },
);

controlPlaneTest(
  "rotating makes a key with the same name and scopes; the old one expires after the overlap",
  async (db, reopen) => {
    const org = await db.orgs.create("acme");
    const beta = await db.orgs.create("beta");
    const old = await db.keys.create(org.id, { name: "loader", scopes: ["upload"] });
    const before = Date.now();
    const result = await db.keys.rotate(old.info.key_id, { orgId: org.id, overlapSeconds: 3600 });
    assert(result.outcome === "rotated");
    const { created } = result;
    assertEquals([created.info.name, created.info.scopes], ["loader", ["upload"]]);
    assertEquals(created.info.expires_at, null);
    assert(created.api_key !== old.api_key);
    const other = await reopen();
    const oldNow = await other.keys.get(old.info.key_id);
    assertEquals(oldNow?.status, "active");
    const overlapEnd = Date.parse(oldNow?.expires_at ?? "");
    assert(overlapEnd >= before + 3_600_000 && overlapEnd <= Date.now() + 3_600_000);
    assertEquals(result.old.expires_at, oldNow?.expires_at);
    assertEquals((await other.keys.ownerByHash(hashKey(created.api_key)))?.scopes, ["upload"]);

    // Rotating again never lengthens the old key's life; overlap 0 ends it now.
    const again = await db.keys.rotate(old.info.key_id, { overlapSeconds: 7200 });
    assert(again.outcome === "rotated");
    assertEquals(again.old.expires_at, oldNow?.expires_at);
    const now = await db.keys.rotate(created.info.key_id, { overlapSeconds: 0 });
    assert(now.outcome === "rotated");
    assertEquals((await other.keys.get(created.info.key_id))?.status, "expired");

    // A key with an expiry passes its lifetime on.
    const monthly = await db.keys.create(org.id, { expiresAt: inMs(30 * 86_400_000) });
    const renewed = await db.keys.rotate(monthly.info.key_id, { overlapSeconds: 60 });
    assert(renewed.outcome === "rotated");
    const lifetime = Date.parse(renewed.created.info.expires_at ?? "") - Date.now();
    assert(Math.abs(lifetime - 30 * 86_400_000) < 60_000, renewed.created.info.expires_at ?? "");
    assertEquals(renewed.old.status, "active");

    assertEquals(
      (await db.keys.rotate(monthly.info.key_id, { orgId: beta.id, overlapSeconds: 0 })).outcome,
      "not_found",
    );
    assertEquals((await db.keys.rotate("key_missing", { overlapSeconds: 0 })).outcome, "not_found");
    await db.keys.revoke(monthly.info.key_id);
    const revoked = await db.keys.rotate(monthly.info.key_id, { overlapSeconds: 0 });
    assertEquals(revoked.outcome, "not_active");
    assertEquals((await db.keys.list(org.id)).length, 6);
  },
);

Deno.test("SQLite: keys made before scopes existed keep all four after the migration", async () => {
  const dir = await Deno.makeTempDir({ prefix: "abn-keys-migrate-" });
  const path = `${dir}/abn.sqlite`;
  try {
    const old = new DatabaseSync(path);
    for (const sql of SQLITE_MIGRATIONS.slice(0, 5)) old.exec(sql);
    old.exec("PRAGMA user_version = 5");
    old.exec(`INSERT INTO orgs (id, name, active, created_at)
      VALUES ('org_old', 'old', 1, '2026-01-01T00:00:00.000Z')`);
    old.exec(`INSERT INTO api_keys (id, org_id, prefix, hash, created_at)
      VALUES ('key_0000000000000old', 'org_old', 'abn_abcdef', 'h', '2026-01-01T00:00:00.000Z')`);
    old.close();
    const db = new SqliteControlPlane(path);
    try {
      const [key] = await db.keys.list("org_old");
      assertEquals([key.scopes, key.status, key.name, key.expires_at], [
        ["upload", "read", "write", "admin"],
        "active",
        null,
        null,
      ]);
    } finally {
      await db.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

postgresTest(
  "PostgreSQL: keys made before scopes existed keep all four after the migration",
  () =>
    withDatabase(async (database) => {
      const client = new Client({ connectionString: database.url });
      await client.connect();
      try {
        await client.query(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY,
        name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`);
        for (const migration of PG_MIGRATIONS.filter((m) => m.version <= 6)) {
          await client.query(migration.sql);
          await client.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [
            migration.version,
            migration.name,
          ]);
        }
        await client.query(`INSERT INTO orgs (id, name, active, created_at)
        VALUES ('org_old', 'old', true, '2026-01-01T00:00:00Z')`);
        await client.query(`INSERT INTO api_keys (id, org_id, prefix, hash, created_at)
        VALUES ('key_0000000000000old', 'org_old', 'abn_abcdef', 'h', '2026-01-01T00:00:00Z')`);
      } finally {
        await client.end();
      }
      const db = await openPostgres(database.url);
      try {
        assertEquals(db.schema, { from: 6, to: PG_MIGRATIONS[PG_MIGRATIONS.length - 1].version });
        const [key] = await db.keys.list("org_old");
        assertEquals([key.scopes, key.status, key.name, key.expires_at], [
          ["upload", "read", "write", "admin"],
          "active",
          null,
          null,
        ]);
      } finally {
        await db.close();
      }
    }),
);
