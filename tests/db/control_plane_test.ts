/**
 * The control plane's contract, run on both drivers (SQLite and PostgreSQL): what one handle
 * writes another reads, timestamps are ISO text, lists are ordered alike.
 */
import { assert, assertEquals, assertRejects } from "../_assert.ts";
import { generateKey, hashKey } from "../../src/db/api_keys.ts";
import { controlPlaneTest } from "./_control_planes.ts";

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

controlPlaneTest(
  "orgs are created, found, listed oldest first and (de)activated",
  async (db, reopen) => {
    const a = await db.orgs.create("  acme  ");
    assertEquals(a.name, "acme");
    assert(ISO.test(a.created_at), a.created_at);
    await new Promise((r) => setTimeout(r, 2));
    const b = await db.orgs.create("beta");
    await new Promise((r) => setTimeout(r, 2));
    await db.orgs.create("acme");
    const other = await reopen();
    assertEquals(await other.orgs.get(a.id), a);
    assertEquals(await other.orgs.get("org_missing"), null);
    assertEquals((await other.orgs.findByName("acme"))?.id, a.id);
    assertEquals(await other.orgs.findByName("nobody"), null);
    assertEquals((await other.orgs.list()).map((o) => o.name), ["acme", "beta", "acme"]);
    assertEquals(await db.orgs.setActive(b.id, false), true);
    assertEquals((await other.orgs.get(b.id))?.active, false);
    assertEquals(await db.orgs.setActive("org_missing", false), false);
    await assertRejects(() => db.orgs.create("   "), RangeError);
    await assertRejects(() => db.orgs.create("x".repeat(201)), RangeError);
  },
);

controlPlaneTest(
  "orgs.setQuota keeps a storage quota per organization, none by default",
  async (db, reopen) => {
    const a = await db.orgs.create("acme");
    const b = await db.orgs.create("beta");
    assertEquals(a.quota_bytes, null);
    const big = 5 * 2 ** 40; // past 32 bits: PostgreSQL's BIGINT comes back as a number
    assertEquals(await db.orgs.setQuota(a.id, big), true);
    assertEquals(await db.orgs.setQuota(b.id, 0), true);
    const other = await reopen();
    assertEquals((await other.orgs.get(a.id))?.quota_bytes, big);
    assertEquals((await other.orgs.get(b.id))?.quota_bytes, 0);
    const listed = new Map((await other.orgs.list()).map((o) => [o.id, o.quota_bytes]));
    assertEquals([listed.get(a.id), listed.get(b.id)], [big, 0]);
    assertEquals(await other.orgs.setQuota(a.id, null), true);
    assertEquals((await db.orgs.get(a.id))?.quota_bytes, null);
    assertEquals(await db.orgs.setQuota("org_missing", 1), false);
    await assertRejects(() => db.orgs.setQuota(a.id, -1), RangeError);
    await assertRejects(() => db.orgs.setQuota(a.id, 1.5), RangeError);
    assertEquals((await db.orgs.get(a.id))?.quota_bytes, null);
  },
);

controlPlaneTest(
  "keys are stored as hashes, listed, revoked and touched in one batch",
  async (db, reopen) => {
    const org = await db.orgs.create("acme");
    const first = await db.keys.create(org.id);
    await new Promise((r) => setTimeout(r, 2)); // listed by creation time, then by id
    const second = await db.keys.create(org.id);
    assert(first.api_key.startsWith(first.info.prefix));
    assertEquals(first.info.active, true);
    const other = await reopen();
    assertEquals(await other.keys.ownerByHash(hashKey(first.api_key)), {
      keyId: first.info.key_id,
      orgId: org.id,
      orgActive: true,
      revoked: false,
      scopes: ["upload", "read", "write", "admin"],
      expiresAt: null,
    });
    assertEquals(await other.keys.ownerByHash(hashKey(generateKey())), null);
    assertEquals((await other.keys.list(org.id)).map((k) => k.key_id), [
      first.info.key_id,
      second.info.key_id,
    ]);
    assertEquals(JSON.stringify(await other.keys.list(org.id)).includes(first.api_key), false);

    const at = "2026-03-05T10:00:00.123Z";
    await db.keys.touch(new Map([[first.info.key_id, at], [second.info.key_id, at]]));
    await db.keys.touch(new Map());
    assertEquals((await other.keys.list(org.id)).map((k) => k.last_used_at), [at, at]);

    assertEquals((await db.keys.revoke(first.info.key_id)).outcome, "revoked");
    const revoked = (await other.keys.list(org.id))[0];
    assertEquals(revoked.active, false);
    assert(ISO.test(revoked.revoked_at ?? ""));
    // Again: the first time stays.
    assertEquals((await db.keys.revoke(first.info.key_id)).outcome, "unchanged");
    assertEquals((await other.keys.list(org.id))[0].revoked_at, revoked.revoked_at);
    assertEquals((await other.keys.ownerByHash(hashKey(first.api_key)))?.revoked, true);
    await db.orgs.setActive(org.id, false);
    assertEquals((await other.keys.ownerByHash(hashKey(second.api_key)))?.orgActive, false);
    assertEquals((await db.keys.revoke("key_missing")).outcome, "not_found");
  },
);

controlPlaneTest(
  "settings are saved per experiment and replaced whole, key order kept",
  async (db, reopen) => {
    assertEquals(await db.settings.get("org_a", "exp"), null);
    await db.settings.save("org_a", "exp", { mde: 0.1, control: "B", alpha: 0.01 });
    const other = await reopen();
    const read = await other.settings.get("org_a", "exp");
    assertEquals(read, { mde: 0.1, control: "B", alpha: 0.01 });
    assertEquals(Object.keys(read ?? {}), ["mde", "control", "alpha"]);
    await other.settings.save("org_a", "exp", { power: 0.9 });
    assertEquals(await db.settings.get("org_a", "exp"), { power: 0.9 });
    assertEquals(await db.settings.get("org_b", "exp"), null);
  },
);

controlPlaneTest(
  "analyses are keyed by ETag: a newer delivery wins over an older run's result",
  async (db, reopen) => {
    const delivered = "2026-03-05T10:00:00.000Z";
    await db.analyses.markPending("org_a", "exp", "etag-1", 123, delivered);
    assertEquals(await db.analyses.status("org_a", "exp", "etag-1"), "pending");
    assertEquals(await db.analyses.status("org_a", "exp", "etag-0"), "pending");
    const other = await reopen();
    await other.analyses.markPending("org_a", "exp", "etag-2", 456, delivered);
    const outcome = { status: "ready" as const, error: null, rows: 10, result: { b: 1, a: [2] } };
    const started = "2026-03-05T10:00:01.000Z";
    assertEquals(await db.analyses.saveResult("org_a", "exp", "etag-1", outcome, started), false);
    assertEquals(await db.analyses.saveResult("org_a", "exp", "etag-2", outcome, started), true);
    const row = await other.analyses.get("org_a", "exp");
    assertEquals(row?.status, "ready");
    assertEquals(row?.size_bytes, 456);
    assertEquals(row?.rows, 10);
    assertEquals(row?.result, JSON.stringify({ b: 1, a: [2] }));
    assertEquals(row?.delivered_at, delivered);
    assertEquals(row?.started_at, started);
    assert(ISO.test(row?.finished_at ?? ""));
    assertEquals(await other.analyses.status("org_a", "exp", "etag-2"), "ready");
    await db.analyses.saveResult("org_a", "exp", "etag-2", {
      status: "failed",
      error: "bad",
      rows: null,
      result: null,
    }, started);
    assertEquals((await other.analyses.get("org_a", "exp"))?.error, "bad");
    await other.analyses.delete("org_a", "exp");
    assertEquals(await db.analyses.get("org_a", "exp"), null);
  },
);

controlPlaneTest("secrets are made once and read alike by every handle", async (db, reopen) => {
  assertEquals(await db.secrets.get("url-signing"), null);
  const made = await db.secrets.getOrCreate("url-signing");
  assertEquals(made.length, 32);
  const other = await reopen();
  assertEquals(await other.secrets.getOrCreate("url-signing"), made);
  assertEquals(await other.secrets.get("url-signing"), made);
  const initial = crypto.getRandomValues(new Uint8Array(32));
  assertEquals(await other.secrets.getOrCreate("url-signing", initial), made);
  assertEquals(await other.secrets.getOrCreate("other", initial), initial);
});

controlPlaneTest("withTimerLock runs the job and answers its result", async (db) => {
  assertEquals(await db.withTimerLock("scan", () => Promise.resolve(42)), 42);
  await assertRejects(
    () => db.withTimerLock("scan", () => Promise.reject(new TypeError("boom"))),
    TypeError,
  );
  // A failed job released the lock.
  assertEquals(await db.withTimerLock("scan", () => Promise.resolve("again")), "again");
});
