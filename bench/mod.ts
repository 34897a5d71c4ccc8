/**
 * `deno task bench`: every benchmark on one ~200 MB generated dataset, printed as tables with
 * ratios against the baselines the targets name. Machines are shared: compare ratios, not MB/s.
 *
 *   deno task bench [FILE]        (FILE: an existing dataset; otherwise one is generated)
 *   ABN_BENCH_ONLY=upload,initiate deno task bench   (a subset)
 *   ABN_BENCH_ONLY=scale deno task bench             (many stored datasets, tiny uploads)
 *   ABN_BENCH_ONLY=scale-out deno task bench         (PostgreSQL and two instances; needs
 *                                                     Debian's `postgresql`)
 *   ABN_BENCH_ONLY=insight deno task bench           (201 → analysis ready, and a two-step
 *                                                     delivery's event → ready, against DuckDB;
 *                                                     ABN_BENCH_RUNS=N turns, default 5)
 *   ABN_BENCH_ONLY=parts deno task bench             (the aggregation's parts timed apart:
 *                                                     what bounds the time to insight; not in
 *                                                     the default set, it holds ~700 MB)
 *   ABN_BENCH_ONLY=webhooks deno task bench          (10,000 tiny uploads with a "*" webhook
 *                                                     endpoint against none, in turns: the
 *                                                     upload rate and the events' arrival;
 *                                                     ABN_BENCH_RUNS=N turns, default 5)
 *   deno run -A bench/memory_map.ts [FILE] [N] [two-step]
 *                                                    (standalone: what each delivery's cycle
 *                                                     holds at its peak, by kind of mapping)
 *   deno run -A bench/auth_bench.ts --baseline PATH/main.ts
 *                                                    (standalone: initiate and tiny uploads
 *                                                     against another version, in turns)
 */
import { writeCsv } from "./generate_csv.ts";
import { printTable } from "./_util.ts";
import { benchValidator } from "./validator_bench.ts";
import { benchUpload, uploadSteps } from "./upload_bench.ts";
import { benchInitiate } from "./initiate_bench.ts";
import { benchAnalysis } from "./analysis_bench.ts";
import { benchScaleOut } from "./scale_out_bench.ts";
import { benchScale } from "./scale_bench.ts";
import { benchDimensions } from "./dimensions_bench.ts";
import { benchHistory } from "./history_bench.ts";
import { benchInsight, insightRows } from "./insight_bench.ts";
import { benchParts, partsRows } from "./parts_bench.ts";
import { pythonClientRows } from "./python_client_bench.ts";
import { benchWebhooks } from "./webhooks_bench.ts";
import { median } from "./_util.ts";

const only = (Deno.env.get("ABN_BENCH_ONLY") ??
  "validator,upload,initiate,analysis,insight,dimensions,history,scale,scale-out").split(",");
/** The sections that read the ~200 MB dataset. */
const needsFile = ["validator", "upload", "analysis", "insight", "parts"].some((name) =>
  only.includes(name)
);
const work = await Deno.makeTempDir({ prefix: "abn-bench-" });
const file = Deno.args[0] ?? `${work}/bench.csv`;
try {
  if (!Deno.args[0] && needsFile) {
    console.log("generating a ~200 MB dataset (4.7 M rows)…");
    await writeCsv(file, { rows: 4_700_000 });
  }
  const mb = needsFile ? (await Deno.stat(file)).size / 1e6 : 0;
  const rows: Record<string, string | number>[] = [];

  if (only.includes("validator")) {
    const v = await benchValidator(file, { runs: 5 });
    rows.push({
      benchmark: "validator alone (in memory)",
      ours: `${v.mbPerSecond.toFixed(0)} MB/s`,
      baseline: `TextDecoder fatal ${v.textDecoderMbPerSecond.toFixed(0)} MB/s`,
      ratio: (v.mbPerSecond / v.textDecoderMbPerSecond).toFixed(2),
      target: "—",
    });
  }
  if (only.includes("upload")) {
    const u = await benchUpload(file);
    rows.push({
      benchmark: `direct upload, ${mb.toFixed(0)} MB, local driver`,
      ours: `${u.ourMBs.toFixed(0)} MB/s`,
      baseline: `raw body→file ${u.rawMBs.toFixed(0)} MB/s`,
      ratio: u.ratio.toFixed(2),
      target: "≥ 0.70",
    });
    rows.push({
      benchmark: "… its steps (request log line; medians), ms",
      ours: uploadSteps(u.steps),
      baseline: "—",
      ratio: "—",
      target: "—",
    });
    rows.push({
      benchmark: "peak RSS during one 200 MB upload",
      ours: `${u.rssSingleMB?.toFixed(0)} MB`,
      baseline: "—",
      ratio: "—",
      target: "< 150 MB",
    });
    rows.push({
      benchmark: "peak RSS during 8 × 25 MB concurrent uploads",
      ours: `${u.rssConcurrentMB?.toFixed(0)} MB`,
      baseline: "—",
      ratio: "—",
      target: "< 300 MB",
    });
  }
  if (only.includes("initiate")) {
    const i = await benchInitiate(10);
    for (
      const [name, r, target] of [["local", i.local, "≥ 0.30"], ["S3", i.s3, "≥ 0.20"]] as const
    ) {
      rows.push({
        benchmark: `initiate, ${name} driver, 50 connections`,
        ours: `${r.rps.toFixed(0)} req/s, p99 ${r.p99ms.toFixed(1)} ms, ${
          r.cpuUs.toFixed(0)
        } µs CPU/req`,
        baseline: `hello-world ${i.hello.rps.toFixed(0)} req/s, ${
          i.hello.cpuUs.toFixed(0)
        } µs CPU/req`,
        ratio: (r.rps / i.hello.rps).toFixed(2),
        target: `${target}, p99 < 20 ms`,
      });
    }
  }
  if (only.includes("analysis")) {
    const a = await benchAnalysis(file);
    rows.push({
      benchmark: `analysis aggregation, ${mb.toFixed(0)} MB`,
      ours: `${a.oursSeconds.toFixed(2)} s, ${a.oursPeakRssMB.toFixed(0)} MB`,
      baseline: a.duckdbSeconds === null
        ? `DuckDB: ${a.duckdbRunner}`
        : `DuckDB ${a.duckdbSeconds.toFixed(2)} s, ${a.duckdbPeakRssMB?.toFixed(0)} MB`,
      ratio: a.ratio === null ? "—" : a.ratio.toFixed(2),
      target: "≤ 1.00, memory no higher",
    });
  }
  if (only.includes("insight")) {
    rows.push(
      ...insightRows(await benchInsight(file, Number(Deno.env.get("ABN_BENCH_RUNS") ?? 5))),
    );
  }
  if (only.includes("parts")) {
    rows.push(...partsRows(await benchParts(file, Number(Deno.env.get("ABN_BENCH_RUNS") ?? 5))));
  }
  if (only.includes("python-client")) rows.push(...await pythonClientRows());
  if (only.includes("webhooks")) {
    rows.push(...await benchWebhooks(Number(Deno.env.get("ABN_BENCH_RUNS") ?? 5)));
  }
  if (only.includes("dimensions")) {
    const dimensionsFile = `${work}/bench-dimensions.csv`;
    console.log("generating a ~193 MB dataset with country and device (3.75 M rows)…");
    await writeCsv(dimensionsFile, { rows: 3_750_000, dimensions: true });
    const d = await benchDimensions(dimensionsFile, 5);
    rows.push({
      benchmark: "dimension health: analysis with country (30) and device (3)",
      ours: `${median(d.withSeconds).toFixed(2)} s`,
      baseline: `the two columns ignored ${median(d.withoutSeconds).toFixed(2)} s`,
      ratio: d.ratio.toFixed(2),
      target: "≤ 1.25",
    });
  }
  if (only.includes("history")) {
    const h = await benchHistory(365, 200);
    rows.push({
      benchmark: "GET …/history/ with 365 snapshots",
      ours: `median ${h.jsonMs.median.toFixed(1)} ms, p95 ${h.jsonMs.p95.toFixed(1)} ms`,
      baseline: "—",
      ratio: "—",
      target: "< 20 ms",
    });
  }
  if (only.includes("scale-out")) {
    const r = await benchScaleOut(10, 3);
    const fmt = (x: { rps: number; p99ms: number }) =>
      `${x.rps.toFixed(0)} req/s, p99 ${x.p99ms.toFixed(1)} ms`;
    rows.push({
      benchmark: "initiate, PostgreSQL control plane, 50 connections",
      ours: fmt(r.initiatePg),
      baseline: `hello-world ${r.hello.rps.toFixed(0)} req/s`,
      ratio: (r.initiatePg.rps / r.hello.rps).toFixed(2),
      target: "≥ 0.15, p99 < 20 ms",
    });
    rows.push({
      benchmark: "tiny direct uploads, PostgreSQL ÷ SQLite, 16 connections",
      ours: fmt(r.tinyPg),
      baseline: `SQLite ${fmt(r.tinySqlite)}`,
      ratio: (r.tinyPg.rps / r.tinySqlite.rps).toFixed(2),
      target: "≥ 0.50",
    });
    rows.push({
      benchmark: "25 MB uploads per minute, two instances ÷ one (s3rver)",
      ours: `${r.big.two.toFixed(1)}/min`,
      baseline: `one instance ${r.big.one.toFixed(1)}/min`,
      ratio: `${median(r.big.ratios).toFixed(2)} [${Math.min(...r.big.ratios).toFixed(2)}–${
        Math.max(...r.big.ratios).toFixed(2)
      }]`,
      target: `≥ 0.90, none lost (lost ${r.big.lost}, failed ${r.big.failed})`,
    });
  }
  printTable(
    "Benchmarks (ratio: our rate ÷ baseline rate; for the analysis and time to insight, our time ÷ DuckDB time)",
    rows,
  );
  if (only.includes("scale")) {
    printTable("Cost with many stored datasets (scale)", await benchScale());
  }
} finally {
  await Deno.remove(work, { recursive: true });
}
