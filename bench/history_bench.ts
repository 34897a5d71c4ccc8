/**
 * The history endpoint with a year of nightly snapshots: the service in this process on a fresh
 * data directory (SQLite, local storage), 365 snapshots of one experiment made from real
 * analyses (two metrics, two variants, changes), then `GET /datasets/ID/history/` over HTTP on
 * 127.0.0.1, one request at a time. Target: under 20 ms.
 *
 *   deno run -A bench/history_bench.ts [--requests=N]
 */
import { loadConfig } from "../src/config.ts";
import { createService } from "../src/wiring.ts";
import { aggregateCsv } from "../src/analysis/aggregate/aggregate.ts";
import { buildReport } from "../src/analysis/report.ts";
import { snapshotFigures } from "../src/analysis/history/snapshot.ts";
import { generateCsv } from "./generate_csv.ts";
import { freePort, median } from "./_util.ts";

export interface HistoryBenchResult {
  snapshots: number;
  bytes: number;
  jsonMs: { median: number; p95: number; max: number };
  csvMs: { median: number; p95: number; max: number };
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

export async function benchHistory(snapshots = 365, requests = 200): Promise<HistoryBenchResult> {
  const dataDir = await Deno.makeTempDir({ prefix: "abn-history-bench-" });
  const port = freePort();
  const service = await createService(
    loadConfig({ ABN_DATA_DIR: dataDir, ABN_PORT: String(port), ABN_HOST: "127.0.0.1" }),
    { log: () => {} },
  );
  const controller = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port, signal: controller.signal, onListen: () => {} },
    service.handler,
  );
  try {
    const org = await service.db.orgs.create("bench");
    const { api_key } = await service.db.keys.create(org.id);
    // A few real analyses to take figures from (one per week of growth).
    const figures: string[] = [];
    for (let week = 1; week <= 4; week++) {
      const aggregate = await aggregateCsv(generateCsv({ rows: 5_000 * week, seed: week }));
      const report = buildReport(aggregate, {}, {
        changes: {
          previous_etag: "0123456789abcdef0123456789abcdef",
          previous_delivered_at: "2026-01-01T02:00:00.000Z",
          rows_added: 5000,
          users_added: 1200,
          users_switched_variant: 0,
          users_vanished: 0,
          restated_dates: [],
          provisional_date: null,
        },
      });
      figures.push(JSON.stringify(snapshotFigures(report, aggregate.rows)));
    }
    for (let day = 0; day < snapshots; day++) {
      const at = new Date(Date.UTC(2025, 0, 1 + day, 2)).toISOString();
      await service.db.history.record(org.id, "yearly", {
        sha256: day.toString(16).padStart(64, "0"),
        etag: day.toString(16).padStart(32, "0"),
        delivered_at: at,
        analysed_at: at,
        figures: figures[day % figures.length],
      }, 1000);
    }
    const url = `http://127.0.0.1:${port}/api/v1/datasets/yearly/history/`;
    const time = async (query: string) => {
      const ms: number[] = [];
      let bytes = 0;
      for (let i = 0; i < requests + 10; i++) {
        const t0 = performance.now();
        const res = await fetch(url + query, { headers: { authorization: `Bearer ${api_key}` } });
        const body = await res.text();
        const elapsed = performance.now() - t0;
        if (res.status !== 200) throw new Error(`history answered ${res.status}: ${body}`);
        bytes = body.length;
        if (i >= 10) ms.push(elapsed); // the first ones warm up
      }
      return { ms, bytes };
    };
    const json = await time("");
    const count = JSON.parse(
      await (await fetch(url, { headers: { authorization: `Bearer ${api_key}` } })).text(),
    ).snapshots.length;
    if (count !== snapshots) throw new Error(`expected ${snapshots} snapshots, got ${count}`);
    const csv = await time("?format=csv");
    const stats = (ms: number[]) => ({
      median: median(ms),
      p95: percentile(ms, 0.95),
      max: Math.max(...ms),
    });
    return { snapshots, bytes: json.bytes, jsonMs: stats(json.ms), csvMs: stats(csv.ms) };
  } finally {
    controller.abort();
    await server.finished;
    await service.close();
    await Deno.remove(dataDir, { recursive: true });
  }
}

if (import.meta.main) {
  const requests = Number(Deno.args.find((a) => a.startsWith("--requests="))?.slice(11) ?? 200);
  const r = await benchHistory(365, requests);
  const f = (x: number) => x.toFixed(2);
  console.log(`history of ${r.snapshots} snapshots (${(r.bytes / 1024).toFixed(0)} KiB of JSON)`);
  console.log(
    `  JSON: median ${f(r.jsonMs.median)} ms, p95 ${f(r.jsonMs.p95)} ms, max ${
      f(r.jsonMs.max)
    } ms (target < 20 ms)`,
  );
  console.log(
    `  CSV:  median ${f(r.csvMs.median)} ms, p95 ${f(r.csvMs.p95)} ms, max ${f(r.csvMs.max)} ms`,
  );
}
