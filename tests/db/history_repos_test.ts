/**
 * The control plane's history repos on both drivers (SQLite and PostgreSQL): snapshots keyed by
 * content, numbered, trimmed and paged; the per-experiment delivery summary; the analyses an older
 * version made. Then the SQLite migration of a database made before them.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { SqliteControlPlane } from "../../src/db/sqlite/sqlite_control_plane.ts";
import { controlPlaneTest, withSqlite } from "./_control_planes.ts";

const snap = (sha256: string, n: number) => ({
  sha256,
  etag: `etag-${n}`,
  delivered_at: `2026-01-0${n}T00:00:00.000Z`,
  analysed_at: `2026-01-0${n}T00:00:01.000Z`,
  figures: JSON.stringify({ rows: n }),
});

controlPlaneTest(
  "HistoryRepo keeps one snapshot per content, replaces the latest's figures, trims the oldest",
  async (db, reopen) => {
    const h = db.history;
    assert.equal(await h.record("o1", "e", snap("a", 1), 3), "added");
    assert.equal(await h.record("o1", "e", snap("b", 2), 3), "added");
    // The same content again: nothing new; the latest (b) gets the new figures, an older one not.
    assert.equal(
      await h.record("o1", "e", { ...snap("a", 3), figures: '{"rows":9}' }, 3),
      "unchanged",
    );
    assert.equal(
      await h.record("o1", "e", { ...snap("b", 3), figures: '{"rows":8}' }, 3),
      "replaced",
    );
    let list = await h.list("o1", "e", 0, 10);
    assert.deepEqual(list.map((s) => [s.seq, s.sha256, s.etag, s.analysed_at, s.figures]), [
      [1, "a", "etag-1", "2026-01-01T00:00:01.000Z", '{"rows":1}'],
      [2, "b", "etag-2", "2026-01-03T00:00:01.000Z", '{"rows":8}'],
    ]);
    // Two more: four kept at most three, the oldest goes.
    await h.record("o1", "e", snap("c", 4), 3);
    await h.record("o1", "e", snap("d", 5), 3);
    list = await h.list("o1", "e", 0, 10);
    assert.deepEqual(list.map((s) => [s.seq, s.sha256]), [[2, "b"], [3, "c"], [4, "d"]]);
    // Pages: after a sequence number, at most `limit`.
    assert.deepEqual((await h.list("o1", "e", 2, 1)).map((s) => s.seq), [3]);
    assert.deepEqual(await h.list("o1", "e", 4, 10), []);
    // Per organization and experiment.
    assert.deepEqual(await h.list("o2", "e", 0, 10), []);
    assert.equal(await h.record("o2", "e", snap("a", 1), 3), "added");
    assert.deepEqual((await h.list("o2", "e", 0, 10)).map((s) => s.seq), [1]);
    await h.delete("o1", "e");
    assert.deepEqual(await h.list("o1", "e", 0, 10), []);
    assert.equal((await h.list("o2", "e", 0, 10)).length, 1);
    // After a deletion the history starts again.
    assert.equal(await h.record("o1", "e", snap("a", 1), 3), "added");
    const other = await reopen();
    assert.deepEqual((await other.history.list("o1", "e", 0, 10)).map((s) => s.seq), [1]);
    // Two handles (instances) recording at once number their snapshots one after the other.
    const outcomes = await Promise.all(
      ["p", "q", "r", "s"].map((sha, i) =>
        (i % 2 === 0 ? db : other).history.record("o3", "e", snap(sha, i + 1), 10)
      ),
    );
    assert.deepEqual(outcomes, ["added", "added", "added", "added"]);
    const numbered = await other.history.list("o3", "e", 0, 10);
    assert.deepEqual(numbered.map((s) => s.seq), [1, 2, 3, 4]);
    assert.deepEqual(numbered.map((s) => s.sha256).sort(), ["p", "q", "r", "s"]);
  },
);

controlPlaneTest(
  "DeliverySummaryRepo replaces an experiment's summary, blob and all",
  async (db, reopen) => {
    const repo = db.deliverySummaries;
    assert.equal(await repo.get("o", "e"), null);
    const row = {
      etag: "e1",
      sha256: "s1",
      delivered_at: "2026-01-01T00:00:00.000Z",
      summary: Uint8Array.from([1, 2, 3, 250]),
      changes: null,
    };
    await repo.save("o", "e", row);
    assert.deepEqual(await repo.get("o", "e"), row);
    const next = { ...row, etag: "e2", summary: new Uint8Array(100_000).fill(7), changes: "{}" };
    await repo.save("o", "e", next);
    const other = await reopen();
    assert.deepEqual(await other.deliverySummaries.get("o", "e"), next);
    assert.equal(await other.deliverySummaries.get("o", "other"), null);
    // A blob that is a view inside a larger buffer (as a summary written around its hashes is):
    // its own bytes are stored, not the buffer's.
    const buffer = Uint8Array.from({ length: 300_000 }, (_, i) => (i * 31) & 0xff).buffer;
    const view = { ...row, etag: "e3", summary: new Uint8Array(buffer, 4092, 200_001) };
    await repo.save("o", "e", view);
    const stored = await other.deliverySummaries.get("o", "e");
    assert.deepEqual(stored?.summary, new Uint8Array(buffer, 4092, 200_001).slice());
    await repo.delete("o", "e");
    assert.equal(await other.deliverySummaries.get("o", "e"), null);
  },
);

Deno.test("DeliverySummaryRepo keeps a large blob in parts, and a shorter one replaces all of them", async (t) => {
  await withSqlite(async (db, path) => {
    const repo = db.deliverySummaries;
    const blob = Uint8Array.from({ length: 1_000_003 }, (_, i) => (i * 7919) & 0xff);
    const row = { etag: "e1", sha256: "s1", delivered_at: "d", summary: blob, changes: null };
    await repo.save("o", "e", row);
    await repo.save("o", "other", { ...row, summary: Uint8Array.from([9]) });
    const read = await repo.get("o", "e");
    assert.deepEqual(read, row);
    const parts = (sql: string) => {
      const peek = new DatabaseSync(path);
      try {
        return (peek.prepare(sql).get() as { n: number }).n;
      } finally {
        peek.close();
      }
    };
    const count = "SELECT count(*) AS n FROM delivery_summary_parts WHERE experiment_id = 'e'";
    await t.step("no part holds more than 64 KiB", () => {
      assert.equal(parts(count), Math.ceil(blob.length / 65536));
      assert.equal(
        parts("SELECT max(length(bytes)) AS n FROM delivery_summary_parts"),
        65536,
      );
    });
    const shorter = { ...row, etag: "e2", summary: blob.slice(0, 70_000) };
    await repo.save("o", "e", shorter);
    assert.deepEqual(await repo.get("o", "e"), shorter);
    assert.equal(parts(count), 2);
    const empty = { ...row, etag: "e3", summary: new Uint8Array(0) };
    await repo.save("o", "e", empty);
    assert.deepEqual(await repo.get("o", "e"), empty);
    await repo.delete("o", "e");
    assert.equal(parts(count), 0);
    assert.deepEqual((await repo.get("o", "other"))?.summary, Uint8Array.from([9]));
  });
});

controlPlaneTest(
  "DeliverySummaryRepo.head reads the first bytes of the blob only, the whole of a shorter one",
  async (db) => {
    const repo = db.deliverySummaries;
    assert.equal(await repo.head("o", "e", 16), null);
    // Over three of SQLite's 64 KiB parts.
    const blob = Uint8Array.from({ length: 150_001 }, (_, i) => (i * 7919 + 3) & 0xff);
    const row = {
      etag: "e1",
      sha256: "s1",
      delivered_at: "2026-01-01T00:00:00.000Z",
      summary: blob,
      changes: "{}",
    };
    await repo.save("o", "e", row);
    for (const bytes of [1, 16, 65_536, 65_537, 131_072, 150_000]) {
      const head = await repo.head("o", "e", bytes);
      assert.deepEqual(head, { ...row, summary: blob.slice(0, bytes) }, `${bytes} bytes`);
    }
    for (const bytes of [150_001, 150_002, 10_000_000]) {
      assert.deepEqual(await repo.head("o", "e", bytes), row, `${bytes} bytes`);
    }
    assert.equal(await repo.head("o", "other", 16), null);
  },
);

controlPlaneTest(
  "AnalysisRepo lists ready results of older versions, newest deliveries first",
  async (db, reopen) => {
    const a = db.analyses;
    const ready = { status: "ready" as const, error: null, rows: 1, result: {} };
    await a.markPending("o", "old", "e1", 10, "2026-01-01T00:00:00.000Z");
    await a.saveResult("o", "old", "e1", { ...ready, version: 2 }, "2026-01-01T00:00:00.000Z");
    await a.markPending("o", "newer", "e2", 10, "2026-01-03T00:00:00.000Z");
    await a.saveResult("o", "newer", "e2", ready, "2026-01-03T00:00:00.000Z"); // no version
    await a.markPending("o", "current", "e3", 10, "2026-01-04T00:00:00.000Z");
    await a.saveResult("o", "current", "e3", { ...ready, version: 3 }, "2026-01-04T00:00:00.000Z");
    await a.markPending("o", "waiting", "e4", 10, "2026-01-05T00:00:00.000Z");
    const other = await reopen();
    assert.deepEqual(
      (await other.analyses.outdated(3)).map((r) => [r.experiment_id, r.etag, r.size_bytes]),
      [["newer", "e2", 10], ["old", "e1", 10]],
    );
    assert.deepEqual(
      (await other.analyses.outdated(3))[0].delivered_at,
      "2026-01-03T00:00:00.000Z",
    );
    assert.equal((await a.get("o", "current"))?.analysis_version, 3);
    // A new delivery forgets the version until its result is saved.
    await a.markPending("o", "current", "e5", 10, "2026-01-06T00:00:00.000Z");
    assert.equal((await a.get("o", "current"))?.analysis_version, null);
  },
);

Deno.test("a database made before the history tables gains them, its results marked for a re-run", async () => {
  const dir = await Deno.makeTempDir({ prefix: "abn-history-migrate-" });
  const path = `${dir}/abn.sqlite`;
  try {
    // Version 1 of the schema, as a service before this one left it.
    const old = new DatabaseSync(path);
    old.exec(`CREATE TABLE analyses (org_id TEXT NOT NULL, experiment_id TEXT NOT NULL,
      etag TEXT NOT NULL, size_bytes INTEGER NOT NULL, status TEXT NOT NULL, error TEXT,
      rows INTEGER, result TEXT, delivered_at TEXT NOT NULL, started_at TEXT, finished_at TEXT,
      PRIMARY KEY (org_id, experiment_id));
      CREATE TABLE orgs (id TEXT PRIMARY KEY, name TEXT NOT NULL, active INTEGER NOT NULL DEFAULT 1,
      created_at TEXT NOT NULL);
      CREATE TABLE api_keys (id TEXT PRIMARY KEY, org_id TEXT NOT NULL, prefix TEXT NOT NULL,
      hash TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL, last_used_at TEXT, revoked_at TEXT);
      CREATE TABLE settings (org_id TEXT NOT NULL, experiment_id TEXT NOT NULL, json TEXT NOT NULL,
      updated_at TEXT NOT NULL, PRIMARY KEY (org_id, experiment_id));
      INSERT INTO analyses VALUES ('o', 'e', 'etag', 5, 'ready', NULL, 1, '{"analysis_version":2}',
      '2026-01-01T00:00:00.000Z', NULL, NULL);
      PRAGMA user_version = 1;`);
    old.close();
    const db = new SqliteControlPlane(path);
    try {
      assert.deepEqual((await db.analyses.outdated(3)).map((r) => r.experiment_id), ["e"]);
      assert.equal(await db.history.record("o", "e", snap("a", 1), 10), "added");
      assert.equal(await db.deliverySummaries.get("o", "e"), null);
    } finally {
      await db.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

controlPlaneTest(
  "saveResult writes a ready result's history with it, and none for a result not saved",
  async (db, reopen) => {
    const ready = { status: "ready" as const, error: null, rows: 1, result: {}, version: 3 };
    const summary = {
      etag: "e1",
      sha256: "s1",
      delivered_at: "2026-01-01T00:00:00.000Z",
      summary: Uint8Array.from([9, 8, 7]),
      changes: null,
    };
    const history = { summary, snapshot: snap("s1", 1), keep: 10 };
    await db.analyses.markPending("o", "e", "e1", 10, "2026-01-01T00:00:00.000Z");
    // A newer delivery replaced the object meanwhile: neither the result nor its history.
    await db.analyses.markPending("o", "e", "e2", 10, "2026-01-02T00:00:00.000Z");
    assert.equal(
      await db.analyses.saveResult("o", "e", "e1", ready, "2026-01-01T00:00:01.000Z", history),
      false,
    );
    const other = await reopen();
    assert.deepEqual(await other.history.list("o", "e", 0, 10), []);
    assert.equal(await other.deliverySummaries.get("o", "e"), null);
    // Saved: the snapshot and the summary are there as soon as the result is.
    const second = {
      summary: { ...summary, etag: "e2", sha256: "s2" },
      snapshot: snap("s2", 2),
      keep: 10,
    };
    assert.equal(
      await db.analyses.saveResult("o", "e", "e2", ready, "2026-01-02T00:00:01.000Z", second),
      true,
    );
    assert.deepEqual(
      (await other.history.list("o", "e", 0, 10)).map((s) => [s.seq, s.sha256, s.etag]),
      [[1, "s2", "etag-2"]],
    );
    assert.deepEqual(await other.deliverySummaries.get("o", "e"), second.summary);
    // A re-run of the same delivery (no new summary) replaces the latest snapshot's figures.
    await db.analyses.markPending("o", "e", "e2", 10, "2026-01-02T00:00:00.000Z");
    const rerun = {
      summary: null,
      snapshot: { ...snap("s2", 3), figures: '{"rows":7}' },
      keep: 10,
    };
    assert.equal(
      await db.analyses.saveResult("o", "e", "e2", ready, "2026-01-03T00:00:01.000Z", rerun),
      true,
    );
    assert.deepEqual(
      (await other.history.list("o", "e", 0, 10)).map((s) => [s.seq, s.figures]),
      [[1, '{"rows":7}']],
    );
    assert.deepEqual(await other.deliverySummaries.get("o", "e"), second.summary);
  },
);
