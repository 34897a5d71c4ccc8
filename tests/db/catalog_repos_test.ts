/**
 * The dataset catalog and upload grants: the repositories' contract on both drivers (SQLite and
 * PostgreSQL: byte-order keyset pages, newer observation wins, the analysis status mirrored),
 * then the SQLite driver's group commit.
 */
import { DatabaseSync } from "node:sqlite";
import { assert, assertEquals } from "../_assert.ts";
import { SqliteControlPlane } from "../../src/db/sqlite/sqlite_control_plane.ts";
import type { DatasetEntry } from "../../src/db/control_plane.ts";
import { DatabaseUnavailable } from "../../src/db/control_plane.ts";
import { controlPlaneTest, withSqlite } from "./_control_planes.ts";

function entry(experimentId: string, fields: Partial<DatasetEntry> = {}): DatasetEntry {
  const org = fields.org_id ?? "org_a";
  return {
    org_id: org,
    experiment_id: experimentId,
    key: `org/${org}/experiments/${experimentId}/latest.csv`,
    size_bytes: 10,
    etag: `etag-${experimentId}`,
    delivered_at: "2026-01-01T00:00:00.000Z",
    observed_at: "2026-01-01T00:00:01.000Z",
    ...fields,
  };
}

/** The fields of a row, as a plain object (rows come with a null prototype). */
function plain<T>(row: T): T {
  return { ...row };
}

controlPlaneTest(
  "datasets.storedBytes sums one organization's dataset sizes, replacements and removals seen",
  async (db, reopen) => {
    assertEquals(await db.datasets.storedBytes("org_a"), 0);
    const big = 3 * 2 ** 40;
    await db.datasets.put([
      entry("x", { size_bytes: 100 }),
      entry("y", { size_bytes: 250 }),
      entry("z", { size_bytes: big }),
      entry("x", { org_id: "org_b", size_bytes: 7 }),
    ]);
    const other = await reopen();
    assertEquals(await other.datasets.storedBytes("org_a"), 350 + big);
    assertEquals(await other.datasets.storedBytes("org_b"), 7);
    // A replacement counts its new size; a removed row nothing.
    await db.datasets.put([
      entry("y", { size_bytes: 50, observed_at: "2026-01-01T00:00:02.000Z" }),
    ]);
    await db.datasets.remove("org_a", "z", "2026-01-01T00:00:03.000Z");
    assertEquals(await other.datasets.storedBytes("org_a"), 150);
    assertEquals(await other.datasets.storedBytes("org_missing"), 0);
  },
);

controlPlaneTest(
  "datasets.page answers one organization's rows in experiment_id byte order, by keyset",
  async (db, reopen) => {
    const ids = ["x", "x-1", "x.y", "X", "_a", "0", "x0", "a"];
    await db.datasets.put(ids.map((id) => entry(id)));
    await db.datasets.put([entry("other", { org_id: "org_b" })]);
    const sorted = [...ids].sort((a, b) => a < b ? -1 : 1);
    assertEquals(sorted, ["0", "X", "_a", "a", "x", "x-1", "x.y", "x0"]);
    const other = await reopen();
    const all = await other.datasets.page("org_a", { limit: 100 });
    assertEquals(all.map((r) => r.experiment_id), sorted);
    // Storage keys in byte order too, as reconciliation compares them with a listing ("x/…"
    // after "x-1/…" and "x.y/…").
    const keys = [...ids.map((id) => entry(id).key), entry("other", { org_id: "org_b" }).key];
    assertEquals(
      (await other.datasets.keyRange("", null, 100)).map((r) => r.key),
      keys.sort((a, b) => a < b ? -1 : 1),
    );
    const pages: string[][] = [];
    let after: string | null = null;
    do {
      const page: string[] = (await other.datasets.page("org_a", { after, limit: 3 }))
        .map((r) => r.experiment_id);
      pages.push(page);
      after = page.length === 3 ? page[2] : null;
    } while (after !== null);
    assertEquals(pages.flat(), sorted);
    assertEquals(pages[0], ["0", "X", "_a"]);
  },
);

controlPlaneTest(
  "datasets.put keeps the later observation and takes the analysis status of the new ETag",
  async (db, reopen) => {
    await db.datasets.put([entry("e", { etag: "v1", observed_at: "2026-01-01T00:00:05.000Z" })]);
    // An older observation (a listing that started before the commit) changes nothing.
    await db.datasets.put([entry("e", { etag: "v0", observed_at: "2026-01-01T00:00:04.000Z" })]);
    assertEquals((await db.datasets.get("org_a", "e"))?.etag, "v1");
    assertEquals((await db.datasets.get("org_a", "e"))?.analysis_status, "pending");
    // The analysis of v1 runs and is saved: the row mirrors it.
    await db.analyses.markPending("org_a", "e", "v1", 10, "2026-01-01T00:00:00.000Z");
    assertEquals(
      await db.analyses.saveResult(
        "org_a",
        "e",
        "v1",
        { status: "ready", error: null, rows: 2, result: {} },
        "2026-01-01T00:00:06.000Z",
      ),
      true,
    );
    assertEquals((await db.datasets.get("org_a", "e"))?.analysis_status, "ready");
    // A new object: pending; the same object again (reconciliation): its saved status.
    await db.datasets.put([entry("e", { etag: "v2", observed_at: "2026-01-01T00:00:07.000Z" })]);
    assertEquals((await db.datasets.get("org_a", "e"))?.analysis_status, "pending");
    await db.datasets.put([entry("e", { etag: "v1", observed_at: "2026-01-01T00:00:08.000Z" })]);
    assertEquals((await db.datasets.get("org_a", "e"))?.analysis_status, "ready");
    // A settings re-run marks it pending again; deleting the analysis too.
    await db.analyses.markPending("org_a", "e", "v1", 10, "2026-01-01T00:00:00.000Z");
    assertEquals((await db.datasets.get("org_a", "e"))?.analysis_status, "pending");
    await db.analyses.saveResult(
      "org_a",
      "e",
      "v1",
      { status: "failed", error: "bad", rows: null, result: null },
      "2026-01-01T00:00:09.000Z",
    );
    assertEquals((await db.datasets.get("org_a", "e"))?.analysis_status, "failed");
    await db.analyses.delete("org_a", "e");
    const other = await reopen();
    assertEquals((await other.datasets.get("org_a", "e"))?.analysis_status, "pending");
    // One batch holding several observations of a dataset: the latest wins, the later of equals.
    await other.datasets.put([
      entry("f", { etag: "f1", observed_at: "2026-01-01T00:00:05.000Z" }),
      entry("f", { etag: "f3", observed_at: "2026-01-01T00:00:06.000Z" }),
      entry("g", { etag: "g1" }),
      entry("f", { etag: "f4", observed_at: "2026-01-01T00:00:06.000Z" }),
      entry("f", { etag: "f2", observed_at: "2026-01-01T00:00:04.000Z" }),
    ]);
    assertEquals((await db.datasets.get("org_a", "f"))?.etag, "f4");
    assertEquals(plain((await db.datasets.get("org_a", "g"))!), {
      ...entry("g", { etag: "g1" }),
      analysis_status: "pending",
    });
  },
);

controlPlaneTest(
  "a catalog row written while its analysis is saved elsewhere ends with the saved status",
  async (db, reopen) => {
    const other = await reopen();
    const ids = Array.from({ length: 40 }, (_, i) => `race${i}`);
    for (const id of ids) {
      await db.analyses.markPending("org_a", id, `v-${id}`, 10, "2026-01-01T00:00:00.000Z");
    }
    // One instance records the objects while another saves their results, all at once.
    await Promise.all(ids.flatMap((id, i) => [
      db.datasets.put([entry(id, { etag: `v-${id}` })]),
      other.analyses.saveResult(
        "org_a",
        id,
        `v-${id}`,
        { status: i % 2 ? "ready" : "failed", error: null, rows: 1, result: {} },
        "2026-01-01T00:00:01.000Z",
      ),
    ]));
    const rows = await db.datasets.page("org_a", { limit: 100 });
    assertEquals(rows.length, ids.length);
    for (const row of rows) {
      const i = Number(row.experiment_id.slice(4));
      assertEquals([row.experiment_id, row.analysis_status], [
        row.experiment_id,
        i % 2 ? "ready" : "failed",
      ]);
    }
  },
);

controlPlaneTest(
  "datasets.remove leaves a row observed after the removal's time",
  async (db) => {
    await db.datasets.put([entry("e", { observed_at: "2026-01-01T00:00:05.000Z" })]);
    assertEquals(await db.datasets.remove("org_a", "e", "2026-01-01T00:00:04.000Z"), false);
    assertEquals((await db.datasets.get("org_a", "e"))?.experiment_id, "e");
    assertEquals(await db.datasets.remove("org_a", "e", "2026-01-01T00:00:05.000Z"), true);
    assertEquals(await db.datasets.get("org_a", "e"), null);
  },
);

controlPlaneTest(
  "datasets.keyRange, larger and pending answer what reconciliation, clean-up and scan read",
  async (db) => {
    await db.datasets.put([
      entry("a", { size_bytes: 5 }),
      entry("b", { size_bytes: 500 }),
      entry("c", { size_bytes: 50, observed_at: "2026-01-01T00:00:09.000Z" }),
      entry("d", { size_bytes: 7, org_id: "org_b" }),
    ]);
    const keys = (rows: { key: string }[]) => rows.map((r) => r.key);
    assertEquals(keys(await db.datasets.keyRange("", null, 10)), [
      "org/org_a/experiments/a/latest.csv",
      "org/org_a/experiments/b/latest.csv",
      "org/org_a/experiments/c/latest.csv",
      "org/org_b/experiments/d/latest.csv",
    ]);
    assertEquals(
      keys(
        await db.datasets.keyRange(
          "org/org_a/experiments/a/latest.csv",
          "org/org_a/experiments/c/latest.csv",
          10,
        ),
      ),
      ["org/org_a/experiments/b/latest.csv", "org/org_a/experiments/c/latest.csv"],
    );
    assertEquals(keys(await db.datasets.keyRange("", null, 1)).length, 1);
    assertEquals((await db.datasets.larger(40, 10)).map((r) => r.experiment_id), ["b", "c"]);
    // Pending, small enough, observed before the cut-off: a, d (c is too recent, b too large).
    const pending = await db.datasets.pending(100, "2026-01-01T00:00:05.000Z", 10);
    assertEquals(pending.map((r) => r.experiment_id).sort(), ["a", "d"]);
    assertEquals(plain(pending.find((r) => r.experiment_id === "a")!), {
      ...entry("a", { size_bytes: 5 }),
      analysis_status: "pending",
    });
  },
);

controlPlaneTest(
  "grants keep their latest expiry and are open from a cut-off on",
  async (db, reopen) => {
    const grant = (key: string, expires: string, org = "org_a") => ({
      key,
      org_id: org,
      experiment_id: key,
      expires_at: expires,
    });
    await db.grants.put([grant("k1", "2026-01-01T01:00:00.000Z")]);
    await db.grants.put([grant("k1", "2026-01-01T00:30:00.000Z")]); // older: kept later one
    await db.grants.put([
      grant("k2", "2026-01-01T00:10:00.000Z"),
      grant("k3", "2026-01-01T02:00:00.000Z", "org_b"),
    ]);
    const other = await reopen();
    const open = (since: string, org?: string) =>
      other.grants.open(since, org).then((gs) => gs.map((g) => `${g.key}@${g.expires_at}`));
    assertEquals(await open("2026-01-01T00:20:00.000Z"), [
      "k1@2026-01-01T01:00:00.000Z",
      "k3@2026-01-01T02:00:00.000Z",
    ]);
    assertEquals(await open("2026-01-01T00:00:00.000Z", "org_a"), [
      "k1@2026-01-01T01:00:00.000Z",
      "k2@2026-01-01T00:10:00.000Z",
    ]);
    assertEquals((await db.grants.get("k2", "2026-01-01T00:00:00.000Z"))?.key, "k2");
    assertEquals(await db.grants.get("k2", "2026-01-01T00:20:00.000Z"), null);
    assertEquals(await db.grants.prune("2026-01-01T00:20:00.000Z"), 1);
    assertEquals(await open("2000-01-01T00:00:00.000Z"), [
      "k1@2026-01-01T01:00:00.000Z",
      "k3@2026-01-01T02:00:00.000Z",
    ]);
    // One batch granting a key twice keeps its later expiry.
    await db.grants.put([
      grant("k4", "2026-01-01T04:00:00.000Z"),
      grant("k4", "2026-01-01T03:00:00.000Z"),
    ]);
    assertEquals(
      (await other.grants.get("k4", "2026-01-01T03:30:00.000Z"))?.expires_at,
      "2026-01-01T04:00:00.000Z",
    );
    assertEquals(await db.grants.prune("2026-01-01T05:00:00.000Z"), 3);
    assertEquals(await open("2000-01-01T00:00:00.000Z"), []);
  },
);

Deno.test("writes issued together share one transaction", async () => {
  await withSqlite(async (db, path) => {
    await db.datasets.put([entry("first")]);
    const wal = () => Deno.statSync(`${path}-wal`).size;
    const before = wal();
    await Promise.all(Array.from({ length: 50 }, (_, i) => db.datasets.put([entry(`e${i}`)])));
    // Fifty commits would append fifty sets of pages to the WAL; one appends a few.
    assert(wal() - before < 10 * 4096, `the WAL grew by ${wal() - before} bytes`);
    assertEquals((await db.datasets.page("org_a", { limit: 100 })).length, 51);
  });
});

Deno.test("a write that fails in a group commit fails alone", async () => {
  await withSqlite(async (db) => {
    const writes = Array.from({ length: 20 }, (_, i) => db.datasets.put([entry(`e${i}`)]));
    const failing = db.orgs.create(""); // RangeError inside the batch
    const results = await Promise.allSettled([...writes, failing]);
    assertEquals(results.slice(0, 20).every((r) => r.status === "fulfilled"), true);
    const last = results[20];
    assert(last.status === "rejected" && last.reason instanceof RangeError, String(last));
    assertEquals((await db.datasets.page("org_a", { limit: 100 })).length, 20);
    assertEquals(await db.orgs.list(), []);
  });
});

Deno.test("a group commit that cannot take the write lock rejects every write with DatabaseUnavailable", async () => {
  await withSqlite(async (db, path) => {
    db.sqlite.exec("PRAGMA busy_timeout = 50");
    const other = new DatabaseSync(path);
    other.exec("BEGIN IMMEDIATE");
    try {
      const results = await Promise.allSettled([
        db.datasets.put([entry("a")]),
        db.datasets.put([entry("b")]),
      ]);
      for (const r of results) {
        assert(r.status === "rejected" && r.reason instanceof DatabaseUnavailable, String(r));
      }
      // saveResult reports a busy database as "not saved", never as an error.
      assertEquals(
        await db.analyses.saveResult(
          "org_a",
          "a",
          "v",
          { status: "ready", error: null, rows: 1, result: {} },
          "2026-01-01T00:00:00.000Z",
        ),
        false,
      );
    } finally {
      other.exec("ROLLBACK");
      other.close();
    }
    await db.datasets.put([entry("a")]);
    assertEquals((await db.datasets.get("org_a", "a"))?.experiment_id, "a");
  });
});

Deno.test("close commits writes still waiting for their group", async () => {
  const dir = await Deno.makeTempDir({ prefix: "abn-catalog-db-" });
  const db = new SqliteControlPlane(`${dir}/abn.sqlite`);
  const write = db.datasets.put([entry("late")]);
  await db.close();
  await write;
  const again = new SqliteControlPlane(`${dir}/abn.sqlite`);
  assertEquals((await again.datasets.get("org_a", "late"))?.experiment_id, "late");
  await again.close();
  await Deno.remove(dir, { recursive: true });
});
