/**
 * The analysis queue on both databases (jobs claimed with leases): small analyses wait while
 * uploads stream and run after (or once they waited too long); results of an older analysis are
 * run again, with their history kept, as any run's.
 */
import { assert, assertEquals } from "../_assert.ts";
import { SqliteControlPlane } from "../../src/db/sqlite/sqlite_control_plane.ts";
import { openPostgres } from "../../src/db/postgres/postgres_control_plane.ts";
import type { ControlPlane } from "../../src/db/control_plane.ts";
import { LocalStore } from "../../src/storage/local_store.ts";
import type { ObjectInfo } from "../../src/storage/object_store.ts";
import { UrlSigner } from "../../src/crypto/url_signer.ts";
import { createLogger } from "../../src/log.ts";
import { DeliveryHub } from "../../src/deliveries.ts";
import { Metrics } from "../../src/metrics.ts";
import { AnalysisQueue } from "../../src/analysis/queue.ts";
import { ANALYSIS_VERSION } from "../../src/analysis/report.ts";
import { postgresTest, withDatabase } from "../_postgres.ts";
import { generateCsv } from "../../bench/generate_csv.ts";

const CSV = new TextEncoder().encode(
  "user_id,variant,date,m\nu1,A,2026-01-01,1\nu2,B,2026-01-01,0\n",
);

type Setup = (busy: () => boolean, busyWaitMs: number) => ReturnType<typeof setupWith>;

async function setupWith(
  dir: string,
  db: ControlPlane,
  busy: () => boolean,
  busyWaitMs: number,
  files: Uint8Array[] = Array(5).fill(CSV),
  lines: string[] = [],
) {
  const store = new LocalStore({
    dataDir: dir,
    signer: new UrlSigner(new Uint8Array(32)),
    publicUrl: "http://127.0.0.1:1",
  });
  await store.open();
  const log = createLogger({ sink: (line) => lines.push(line) });
  const deliveries = new DeliveryHub({ log });
  const metrics = new Metrics();
  const options = {
    db,
    store,
    deliveries,
    metrics,
    maxUploadBytes: 1 << 30,
    busy,
    busyWaitMs,
    log,
  };
  const queue = new AnalysisQueue({ ...options, leaseSeconds: 60, pollMs: 100 });
  const infos: ObjectInfo[] = [];
  for (let i = 0; i < files.length; i++) {
    const writer = await store.createWriter(`org/o/experiments/e${i}/latest.csv`);
    await writer.write(files[i]);
    infos.push(await writer.commit());
  }
  const deliver = (
    which = infos.map((_, i) => i),
    source: "upload" | "reconcile" | "scan" = "upload",
  ) =>
    which.forEach((i) =>
      deliveries.publish({
        orgId: "o",
        experimentId: `e${i}`,
        key: infos[i].key,
        info: infos[i],
        // A scan's delivery is a two-step one: validated beside the reading.
        validated: source !== "scan",
        source,
      })
    );
  const ready = () => metrics.analysisRuns.get({ outcome: "ready" });
  /** Resolves once `n` runs ended ready (the queue's idleness is this instance's only). */
  const readyCount = async (n: number, ms = 20_000) => {
    const deadline = Date.now() + ms;
    while (ready() < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await queue.whenIdle();
    return ready();
  };
  return {
    db,
    store,
    deliveries,
    infos,
    deliver,
    ready,
    readyCount,
    queue,
    stop: () => queue.stop(),
  };
}

/** Registers `name (sqlite)` and `name (postgres)`, the body given a setup on that driver. */
function queueTest(name: string, body: (setup: Setup) => Promise<void>): void {
  const run = async (open: (dir: string) => Promise<ControlPlane>) => {
    const dir = await Deno.makeTempDir({ prefix: "abn-queue-" });
    const opened: { db: ControlPlane; stop: () => Promise<void> }[] = [];
    try {
      await body(async (busy, busyWaitMs) => {
        const t = await setupWith(dir, await open(dir), busy, busyWaitMs);
        opened.push(t);
        return t;
      });
    } finally {
      for (const t of opened) {
        await t.stop();
        await t.db.close();
      }
      await Deno.remove(dir, { recursive: true });
    }
  };
  Deno.test(`${name} (sqlite)`, () =>
    run((dir) => Promise.resolve(new SqliteControlPlane(`${dir}/abn.sqlite`))));
  postgresTest(
    `${name} (postgres)`,
    () => withDatabase((database) => run(() => openPostgres(database.url))),
  );
}

queueTest("small analyses wait while uploads stream, and run after", async (setup) => {
  let busy = true;
  const t = await setup(() => busy, 60_000);
  t.deliver();
  await new Promise((r) => setTimeout(r, 300));
  assertEquals(t.ready(), 0);
  busy = false;
  assertEquals(await t.readyCount(5), 5);
});

queueTest(
  "a small analysis that waited too long runs even while uploads stream",
  async (setup) => {
    const t = await setup(() => true, 100);
    t.deliver();
    assertEquals(await t.readyCount(5), 5);
  },
);

queueTest(
  "results of an older analysis run again; the new result keeps a history snapshot",
  async (setup) => {
    const t = await setup(() => false, 0);
    const [info] = t.infos;
    const delivered = info.lastModified.toISOString();
    await t.db.analyses.markPending("o", "e0", info.etag, info.size, delivered);
    await t.db.analyses.saveResult(
      "o",
      "e0",
      info.etag,
      { status: "ready", error: null, rows: 2, result: {}, version: ANALYSIS_VERSION - 1 },
      delivered,
    );
    assertEquals(await t.queue.rerunOutdated(), 1);
    assertEquals(await t.readyCount(1), 1);
    const row = await t.db.analyses.get("o", "e0");
    assertEquals([row?.status, row?.analysis_version], ["ready", ANALYSIS_VERSION]);
    assertEquals((await t.db.history.list("o", "e0", 0, 10)).map((s) => s.etag), [info.etag]);
    assertEquals((await t.db.deliverySummaries.get("o", "e0"))?.etag, info.etag);
    // Nothing older is left to run again.
    assertEquals(await t.queue.rerunOutdated(), 0);
  },
);

queueTest(
  "a re-run of an older result is kept when a delivery finds that result saved",
  async (setup) => {
    let busy = true;
    const t = await setup(() => busy, 60_000);
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
    assertEquals(await t.readyCount(5), 5);
    for (let i = 0; i < 5; i++) {
      assertEquals((await t.db.analyses.get("o", `e${i}`))?.analysis_version, ANALYSIS_VERSION);
    }
  },
);

queueTest(
  "a burst of deliveries of one dataset ends with the newest analysed, in fewer runs than deliveries",
  async (setup) => {
    const t = await setup(() => false, 0);
    const key = t.infos[0].key;
    const versions: ObjectInfo[] = [];
    for (let i = 0; i < 12; i++) {
      const writer = await t.store.createWriter(key);
      await writer.write(CSV);
      versions.push(await writer.commit());
    }
    assertEquals(new Set(versions.map((v) => v.etag)).size, 12);
    for (const info of versions) {
      t.deliveries.publish({
        orgId: "o",
        experimentId: "e0",
        key,
        info,
        validated: true,
        source: "upload",
      });
    }
    const newest = versions.at(-1)!.etag;
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const row = await t.db.analyses.get("o", "e0");
      if (row?.etag === newest && row.status === "ready") break;
      await new Promise((r) => setTimeout(r, 20));
    }
    await t.queue.whenIdle();
    const row = await t.db.analyses.get("o", "e0");
    assertEquals([row?.etag, row?.status], [newest, "ready"]);
    assertEquals((await t.db.datasets.get("o", "e0"))?.analysis_status ?? "ready", "ready");
    const runs = t.ready();
    assert(runs >= 1 && runs < versions.length, `${runs} runs for ${versions.length} deliveries`);
  },
);

Deno.test("the analysis finished line times the run's phases", async () => {
  const parts: Uint8Array[] = [];
  for await (const chunk of generateCsv({ rows: 60_000, seed: 3, days: 5 })) parts.push(chunk);
  const large = new Uint8Array(await new Blob(parts as Uint8Array<ArrayBuffer>[]).arrayBuffer());
  const broken = new TextEncoder().encode("user_id,variant,date,m\nu1,A,2026-02-30,1\n");
  for (const validated of [true, false]) {
    const lines: string[] = [];
    // A file read on two threads (over 1 MiB), a small one, and (not validated) a broken one.
    const files = validated ? [large, CSV] : [large, CSV, broken];
    const dir = await Deno.makeTempDir({ prefix: "abn-queue-" });
    const db = new SqliteControlPlane(`${dir}/abn.sqlite`);
    const t = await setupWith(dir, db, () => false, 0, files, lines);
    try {
      t.deliver(undefined, validated ? "upload" : "scan");
      await t.queue.whenIdle();
      const finished = lines.map((line) => JSON.parse(line)).filter((line) =>
        line.msg === "analysis finished"
      );
      assertEquals(finished.length, files.length, lines.join("\n"));
      for (const line of finished) {
        const phases = [
          "read_ms",
          "load_ms",
          "validate_ms",
          "aggregate_ms",
          "report_ms",
          "save_ms",
        ];
        for (const field of ["duration_ms", ...phases]) {
          assertEquals(Number.isInteger(line[field]) && line[field] >= 0, true, field);
        }
        // The phases up to the result make its duration (each rounded on its own).
        const sum = line.read_ms + line.load_ms + line.validate_ms + line.aggregate_ms +
          line.report_ms;
        assertEquals(Math.abs(sum - line.duration_ms) <= 4, true, JSON.stringify(line));
        const status = line.experiment_id === "e2" ? "failed" : "ready";
        assertEquals(line.status, status);
      }
      // The large file's aggregation takes measurable time on any machine, and so do the checks
      // of its bytes when they were not checked on the way in.
      const e0 = finished.find((line) => line.experiment_id === "e0");
      assertEquals(e0.aggregate_ms > 0, true);
      if (!validated) assertEquals(e0.validate_ms > 0, true, JSON.stringify(e0));
    } finally {
      await t.stop();
      await db.close();
      await Deno.remove(dir, { recursive: true });
    }
  }
});

queueTest(
  "settled resolves once the delivery's analysis ran here, at once when none is queued, and not before",
  async (setup) => {
    let busy = true;
    const t = await setup(() => busy, 60_000);
    const [info] = t.infos;
    assertEquals(await t.queue.settled("o", "e0", info.etag, 1_000), true, "nothing queued");
    t.deliver([0]);
    // Held back while uploads stream: not settled within the bound.
    assertEquals(await t.queue.settled("o", "e0", info.etag, 300), false);
    assertEquals((await t.db.analyses.get("o", "e0"))?.status, "pending");
    busy = false;
    assertEquals(await t.queue.settled("o", "e0", info.etag, 20_000), true);
    assertEquals((await t.db.analyses.get("o", "e0"))?.status, "ready");
    assertEquals(t.ready(), 1);
  },
);

queueTest(
  "settled on one instance sees another instance's run end through the job row",
  async (setup) => {
    let aBusy = true;
    const a = await setup(() => aBusy, 60_000);
    // The second instance never claims a small job (it waits for uploads that never stop).
    const b = await setup(() => true, 60_000);
    const [info] = b.infos; // the objects as stored now (the second setup wrote them last)
    a.deliveries.publish({
      orgId: "o",
      experimentId: "e0",
      key: info.key,
      info,
      validated: true,
      source: "upload",
    });
    // Admitted by the first instance: its job row is what the second one sees.
    while (await b.db.jobs.etagOf("o", "e0") !== info.etag) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const waited = b.queue.settled("o", "e0", info.etag, 20_000);
    await new Promise((r) => setTimeout(r, 300));
    assertEquals((await b.db.analyses.get("o", "e0"))?.status, "pending");
    aBusy = false;
    assertEquals(await waited, true);
    assertEquals((await b.db.analyses.get("o", "e0"))?.status, "ready");
    assertEquals([a.ready(), b.ready()], [1, 0]);
  },
);
