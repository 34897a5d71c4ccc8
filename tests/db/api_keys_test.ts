import { assert, assertEquals } from "../_assert.ts";
import { SqliteControlPlane } from "../../src/db/sqlite/sqlite_control_plane.ts";
import { generateKey, hashKey, isWellFormedKey } from "../../src/db/api_keys.ts";

Deno.test("generateKey makes abn_ keys with 32 random base62 characters and a valid checksum", () => {
  const seen = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const key = generateKey();
    assert(/^abn_[0-9A-Za-z]{38}$/.test(key), key);
    assert(isWellFormedKey(key));
    seen.add(key.slice(4, 36));
  }
  assertEquals(seen.size, 200);
});

Deno.test("isWellFormedKey refuses a key with one character changed", () => {
  const key = generateKey();
  let refused = 0;
  for (let i = 4; i < key.length; i++) {
    const c = key[i] === "a" ? "b" : "a";
    if (!isWellFormedKey(key.slice(0, i) + c + key.slice(i + 1))) refused++;
  }
  assertEquals(refused, key.length - 4);
  assertEquals(isWellFormedKey("abn_short"), false);
  assertEquals(isWellFormedKey(key.replace("abn_", "ABN_")), false);
  assertEquals(isWellFormedKey(key + "x"), false);
});

Deno.test("keys.create stores only the hash: the database file never contains the key", async () => {
  const dir = await Deno.makeTempDir();
  const db = new SqliteControlPlane(`${dir}/abn.sqlite`);
  const org = await db.orgs.create("acme");
  const keys = [(await db.keys.create(org.id)).api_key, (await db.keys.create(org.id)).api_key];
  db.sqlite.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  await db.close();
  const bytes = new TextDecoder("latin1").decode(await Deno.readFile(`${dir}/abn.sqlite`));
  for (const key of keys) {
    assertEquals(bytes.includes(key), false);
    assertEquals(bytes.includes(key.slice(4)), false);
    assertEquals(bytes.includes(key.slice(0, 10)), true); // the display prefix is kept
  }
  await Deno.remove(dir, { recursive: true });
});

Deno.test("keys.ownerByHash finds a key, sees its revocation and the organization's state", async () => {
  const dir = await Deno.makeTempDir();
  const db = new SqliteControlPlane(`${dir}/abn.sqlite`);
  const org = await db.orgs.create("acme");
  const { api_key, info } = await db.keys.create(org.id);
  assertEquals(await db.keys.ownerByHash(hashKey(api_key)), {
    keyId: info.key_id,
    orgId: org.id,
    orgActive: true,
    revoked: false,
    scopes: ["upload", "read", "write", "admin"],
    expiresAt: null,
  });
  assertEquals(await db.keys.ownerByHash(hashKey(generateKey())), null);
  assertEquals((await db.keys.revoke(info.key_id)).outcome, "revoked");
  assertEquals((await db.keys.ownerByHash(hashKey(api_key)))?.revoked, true);
  assertEquals((await db.keys.list(org.id))[0].active, false);
  assertEquals((await db.keys.revoke("key_missing")).outcome, "not_found");
  await db.close();
  await Deno.remove(dir, { recursive: true });
});
