import { assertEquals } from "../_assert.ts";
import { SqliteControlPlane } from "../../src/db/sqlite/sqlite_control_plane.ts";
import { LocalStore } from "../../src/storage/local_store.ts";
import type { ObjectInfo } from "../../src/storage/object_store.ts";
import { UrlSigner } from "../../src/crypto/url_signer.ts";
import { createLogger } from "../../src/log.ts";
import { DeliveryHub } from "../../src/deliveries.ts";
import { Metrics } from "../../src/metrics.ts";
import { AnalysisQueue } from "../../src/analysis/analysis_queue.ts";
import { generateCsv } from "../../bench/generate_csv.ts";

const CSV = new TextEncoder().encode(
  "user_id,variant,date,m\nu1,A,2026-01-01,1\nu2,B,2026-01-01,0\n",
);

async function setup(
  busy: () => boolean,
  busyWaitMs: number,
  files: Uint8Array[] = Array(5).fill(CSV),
  lines: string[] = [],
) {
  const dir = await Deno.makeTempDir({ prefix: "abn-queue-" });
  const store = new LocalStore({
    dataDir: dir,
    signer: new UrlSigner(new Uint8Array(32)),
    publicUrl: "http://127.0.0.1:1",
  });
  await store.open();
  const db = new SqliteControlPlane(`${dir}/abn.sqlite`);
  const log = createLogger({ sink: (line) => lines.push(line) });
  const deliveries = new DeliveryHub({ log });
  const metrics = new Metrics();
  const queue = new AnalysisQueue({
    db,
    store,
    deliveries,
    metrics,
    maxUploadBytes: 1 << 26,
    busy,
    busyWaitMs,
    log,
  });
  const infos: ObjectInfo[] = [];
  for (let i = 0; i < files.length; i++) {
    const writer = await store.createWriter(`org/o/experiments/e${i}/latest.csv`);
    await writer.write(files[i]);
    infos.push(await writer.commit());
  }
  const deliver = (validated = true) =>
    infos.forEach((info, i) =>
      deliveries.publish({
        orgId: "o",
        experimentId: `e${i}`,
        key: info.key,
        info,
        validated,
        source: validated ? "upload" : "scan",
      })
    );
  const ready = () => metrics.analysisRuns.get({ outcome: "ready" });
  return {
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

Deno.test("the analysis finished line times the run's phases", async () => {
  const parts: Uint8Array[] = [];
  for await (const chunk of generateCsv({ rows: 60_000, seed: 3, days: 5 })) parts.push(chunk);
  const large = new Uint8Array(await new Blob(parts as Uint8Array<ArrayBuffer>[]).arrayBuffer());
  const broken = new TextEncoder().encode("user_id,variant,date,m\nu1,A,2026-02-30,1\n");
  for (const validated of [true, false]) {
    const lines: string[] = [];
    // A file read on two threads (over 1 MiB), a small one, and (not validated) a broken one.
    const files = validated ? [large, CSV] : [large, CSV, broken];
    const t = await setup(() => false, 0, files, lines);
    try {
      t.deliver(validated);
      await t.queue.whenIdle();
      const finished = lines.map((line) => JSON.parse(line)).filter((line) =>
        line.msg === "analysis finished"
      );
      assertEquals(finished.length, files.length);
      for (const line of finished) {
        const phases = ["read_ms", "load_ms", "aggregate_ms", "report_ms", "save_ms"];
        for (const field of ["duration_ms", ...phases]) {
          assertEquals(Number.isInteger(line[field]) && line[field] >= 0, true, field);
        }
        // The phases up to the result make its duration (each rounded on its own).
        const sum = line.read_ms + line.load_ms + line.aggregate_ms + line.report_ms;
        assertEquals(Math.abs(sum - line.duration_ms) <= 3, true, JSON.stringify(line));
        const status = line.experiment_id === "e2" ? "failed" : "ready";
        assertEquals(line.status, status);
      }
      // The large file's aggregation takes measurable time on any machine.
      assertEquals(finished.find((line) => line.experiment_id === "e0").aggregate_ms > 0, true);
    } finally {
      await t.close();
    }
  }
});
