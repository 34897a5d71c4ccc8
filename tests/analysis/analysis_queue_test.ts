import { assertEquals } from "../_assert.ts";
import { SqliteControlPlane } from "../../src/db/sqlite/sqlite_control_plane.ts";
import { LocalStore } from "../../src/storage/local_store.ts";
import type { ObjectInfo } from "../../src/storage/object_store.ts";
import { UrlSigner } from "../../src/crypto/url_signer.ts";
import { createLogger } from "../../src/log.ts";
import { DeliveryHub } from "../../src/deliveries.ts";
import { Metrics } from "../../src/metrics.ts";
import { AnalysisQueue } from "../../src/analysis/analysis_queue.ts";
import { ANALYSIS_VERSION } from "../../src/analysis/report.ts";

const CSV = new TextEncoder().encode(
  "user_id,variant,date,m\nu1,A,2026-01-01,1\nu2,B,2026-01-01,0\n",
);

async function setup(busy: () => boolean, busyWaitMs: number) {
  const dir = await Deno.makeTempDir({ prefix: "abn-queue-" });
  const store = new LocalStore({
    dataDir: dir,
    signer: new UrlSigner(new Uint8Array(32)),
    publicUrl: "http://127.0.0.1:1",
  });
  await store.open();
  const db = new SqliteControlPlane(`${dir}/abn.sqlite`);
  const log = createLogger({ sink: () => {} });
  const deliveries = new DeliveryHub({ log });
  const metrics = new Metrics();
  const queue = new AnalysisQueue({
    db,
    store,
    deliveries,
    metrics,
    maxUploadBytes: 1 << 20,
    busy,
    busyWaitMs,
    log,
  });
  const infos: ObjectInfo[] = [];
  for (let i = 0; i < 5; i++) {
    const writer = await store.createWriter(`org/o/experiments/e${i}/latest.csv`);
    await writer.write(CSV);
    infos.push(await writer.commit());
  }
  const deliver = (which = [0, 1, 2, 3, 4], source: "upload" | "reconcile" = "upload") =>
    which.forEach((i) =>
      deliveries.publish({
        orgId: "o",
        experimentId: `e${i}`,
        key: infos[i].key,
        info: infos[i],
        validated: true,
        source,
      })
    );
  const ready = () => metrics.analysisRuns.get({ outcome: "ready" });
  return {
    db,
    infos,
    deliver,
    ready,
    queue,
    async close() {
      await queue.stop();
      await db.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("AnalysisQueue lets small analyses wait while uploads stream, and runs them after", async () => {
  let busy = true;
  const t = await setup(() => busy, 60_000);
  try {
    t.deliver();
    await new Promise((r) => setTimeout(r, 300));
    assertEquals(t.ready(), 0);
    busy = false;
    await t.queue.whenIdle();
    assertEquals(t.ready(), 5);
  } finally {
    await t.close();
  }
});

Deno.test("AnalysisQueue runs a small analysis that waited too long even while uploads stream", async () => {
  const t = await setup(() => true, 100);
  try {
    t.deliver();
    await t.queue.whenIdle();
    assertEquals(t.ready(), 5);
  } finally {
    await t.close();
  }
});

Deno.test("AnalysisQueue keeps a re-run of an older result when a delivery finds that result saved", async () => {
  let busy = true;
  const t = await setup(() => busy, 60_000);
  try {
    // e0–e3 hold results of an older analysis; e4 has none yet.
    for (let i = 0; i < 4; i++) {
      const { etag, size } = t.infos[i];
      await t.db.analyses.markPending("o", `e${i}`, etag, size, "2026-03-01T00:00:00.000Z");
      const old = { status: "ready" as const, error: null, rows: 2, result: {}, version: 1 };
      await t.db.analyses.saveResult("o", `e${i}`, etag, old, "2026-03-01T00:00:01.000Z");
    }
    // e4's delivery waits while uploads stream, so the re-runs wait behind it ...
    t.deliver([4]);
    await new Promise((r) => setTimeout(r, 50));
    assertEquals(await t.queue.rerunOutdated(), 4);
    // ... when the start-up reconciliation announces the same objects: their results are saved,
    // so these deliveries run nothing, and must not drop the re-runs.
    t.deliver([0, 1, 2, 3], "reconcile");
    await new Promise((r) => setTimeout(r, 100));
    busy = false;
    await t.queue.whenIdle();
    for (let i = 0; i < 5; i++) {
      assertEquals((await t.db.analyses.get("o", `e${i}`))?.analysis_version, ANALYSIS_VERSION);
    }
    assertEquals(t.ready(), 5);
  } finally {
    await t.close();
  }
});
