import { assertEquals } from "../_assert.ts";
import { DatasetCatalog } from "../../src/catalog/dataset_catalog.ts";
import type { ControlPlane, DatasetEntry } from "../../src/db/control_plane.ts";
import { DatabaseUnavailable } from "../../src/db/control_plane.ts";
import { createLogger } from "../../src/log.ts";
import { datasetKey, type ObjectInfo } from "../../src/storage/object_store.ts";

/** The next turn of the event loop, by which a write asked for in this one has started. */
const nextTurn = () => new Promise((r) => setTimeout(r, 0));

/** A control plane whose catalog writes take `delayMs` and fail while `failing` is set. */
function slowDb(delayMs: number) {
  const writes: string[][] = [];
  const state = { failing: false };
  const db = {
    datasets: {
      async put(entries: readonly DatasetEntry[]) {
        const failing = state.failing;
        await new Promise((r) => setTimeout(r, delayMs));
        if (failing) throw new DatabaseUnavailable("away");
        writes.push(entries.map((e) => e.experiment_id));
      },
    },
  } as unknown as ControlPlane;
  return { db, writes, state };
}

const info = (experiment: string): ObjectInfo => ({
  key: datasetKey("org_a", experiment),
  size: 60,
  etag: `etag-${experiment}`,
  lastModified: new Date("2026-01-01T00:00:00Z"),
});

Deno.test("DatasetCatalog: records made while a write is under way go together in the next one", async () => {
  const { db, writes } = slowDb(20);
  const catalog = new DatasetCatalog({ db, log: createLogger({ sink: () => {} }) });
  const first = catalog.record([info("e1")], "2026-01-01T00:00:01.000Z");
  await nextTurn();
  const rest = ["e2", "e3", "e4", "e5"].map((e) =>
    catalog.record([info(e)], "2026-01-01T00:00:01.000Z")
  );
  // None resolves before its own write is done.
  let settled = 0;
  for (const p of rest) p.then(() => settled++);
  assertEquals(await first, true);
  assertEquals(writes, [["e1"]]);
  assertEquals(settled, 0);
  assertEquals(await Promise.all(rest), [true, true, true, true]);
  assertEquals(writes, [["e1"], ["e2", "e3", "e4", "e5"]]);
  // Idle again: the next record is written at once, alone.
  assertEquals(await catalog.record([info("e6")], "2026-01-01T00:00:02.000Z"), true);
  assertEquals(writes.at(-1), ["e6"]);
});

Deno.test("DatasetCatalog: records made in one turn of the event loop go in one write", async () => {
  const { db, writes } = slowDb(5);
  const catalog = new DatasetCatalog({ db, log: createLogger({ sink: () => {} }) });
  const all = ["e1", "e2", "e3"].map((e) => catalog.record([info(e)], "2026-01-01T00:00:01.000Z"));
  assertEquals(await Promise.all(all), [true, true, true]);
  assertEquals(writes, [["e1", "e2", "e3"]]);
});

Deno.test("DatasetCatalog: a failed write answers false to its callers only, and later writes go on", async () => {
  const { db, writes, state } = slowDb(10);
  const lines: string[] = [];
  const catalog = new DatasetCatalog({ db, log: createLogger({ sink: (l) => lines.push(l) }) });
  state.failing = true;
  const failed = catalog.record([info("f1")], "2026-01-01T00:00:01.000Z");
  await nextTurn();
  const next = catalog.record([info("f2")], "2026-01-01T00:00:01.000Z");
  state.failing = false;
  assertEquals(await failed, false);
  assertEquals(await next, true);
  assertEquals(writes, [["f2"]]);
  assertEquals(lines.filter((l) => l.includes("catalog not updated")).length, 1);
  // A key that is not a dataset's writes nothing and answers true.
  assertEquals(
    await catalog.record([{ ...info("x"), key: "other/x" }], "2026-01-01T00:00:02Z"),
    true,
  );
  assertEquals(writes.length, 1);
});
