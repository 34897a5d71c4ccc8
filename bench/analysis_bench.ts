/**
 * Compares the aggregation of a stored dataset (`aggregateCsv`) with DuckDB doing the same
 * per-user, then per-variant aggregation from the same CSV file: per user max(converted) and
 * sum(revenue) over users in one variant only, then per variant the count, sum and sum of squares.
 * Ours also builds the daily cumulative series (it is part of the same pass); DuckDB's query
 * leaves it out. Ours reads the file in 1 MiB chunks into two reused buffers (one read ahead)
 * and aggregates on two threads (see `aggregateCsv`); DuckDB uses its default thread count (the
 * machine's cores).
 *
 * Each side runs in a child process of its own, three times, alternating; the answer is the median
 * wall time and the median peak RSS (`VmHWM`, read by the child at its end), both including the
 * runtime itself. DuckDB runs under Deno through `npm:@duckdb/node-api`; if that cannot load,
 * under Node from a temporary directory where `npm install @duckdb/node-api` ran.
 *
 *   deno run -A bench/analysis_bench.ts [FILE]   (default /tmp/bench.csv, generated when missing)
 */
import { aggregateCsv } from "../src/analysis/aggregate/aggregate.ts";
import { ensureCsv } from "./generate_csv.ts";
import { readChunks } from "./_util.ts";
import {
  AGGREGATION_QUERY,
  checkAgreement,
  child,
  duckdbRunner,
  queryDuckdb,
  queryTotals,
  type Totals,
} from "./_duckdb.ts";

const RUNS = 3;

export interface AnalysisBenchResult {
  oursSeconds: number;
  oursPeakRssMB: number;
  duckdbSeconds: number | null;
  duckdbPeakRssMB: number | null;
  /** ours / DuckDB wall time. */
  ratio: number | null;
  /** How DuckDB ran, or why it did not. */
  duckdbRunner: string;
}

/** What one child measured, with per-variant totals to check both sides agree. */
interface ChildResult {
  seconds: number;
  peakRssMB: number;
  variants: Totals;
}

function peakRssMB(): number {
  const status = Deno.readTextFileSync("/proc/self/status");
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? NaN) / 1024;
}

async function runOurs(path: string): Promise<ChildResult> {
  const start = performance.now();
  const aggregate = await aggregateCsv(readChunks(path));
  const seconds = (performance.now() - start) / 1000;
  const variants = Object.fromEntries(aggregate.variants.map((name) => [name, {
    users: aggregate.users[name],
    converted: aggregate.stats.converted?.[name]?.sum ?? NaN,
    revenue: aggregate.stats.revenue?.[name]?.sum ?? NaN,
  }]));
  return { seconds, peakRssMB: peakRssMB(), variants };
}

async function runDuckdbUnderDeno(path: string): Promise<ChildResult> {
  const { rows, seconds } = await queryDuckdb(AGGREGATION_QUERY, path);
  return { seconds, peakRssMB: peakRssMB(), variants: queryTotals(rows) };
}

/** The same measurement as `runDuckdbUnderDeno`, as a Node script. */
const NODE_SCRIPT = `
import { readFileSync } from "node:fs";
import { DuckDBInstance } from "@duckdb/node-api";
const path = process.argv[2];
const start = performance.now();
const instance = await DuckDBInstance.create(":memory:");
const connection = await instance.connect();
const reader = await connection.runAndReadAll(${JSON.stringify(AGGREGATION_QUERY)}.replace("{path}",
  "'" + path.replaceAll("'", "''") + "'"));
const rows = reader.getRowObjectsJS();
const seconds = (performance.now() - start) / 1000;
const status = readFileSync("/proc/self/status", "utf8");
const peakRssMB = Number(/VmHWM:\\s+(\\d+) kB/.exec(status)[1]) / 1024;
const variants = Object.fromEntries(rows.map((row) => [String(row.variant), {
  users: Number(row.users), converted: Number(row.converted_sum), revenue: Number(row.revenue_sum),
}]));
console.log(JSON.stringify({ seconds, peakRssMB, variants }));
`;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Runs both sides `RUNS` times on `path` and answers the medians. */
export async function benchAnalysis(path: string): Promise<AnalysisBenchResult> {
  const self = new URL(import.meta.url).pathname;
  const ours = () => child<ChildResult>(Deno.execPath(), ["run", "-A", self, "--child=ours", path]);
  const duckdb = await duckdbRunner<ChildResult>(import.meta.url, path, NODE_SCRIPT);
  const oursRuns: ChildResult[] = [];
  const duckdbRuns: ChildResult[] = [];
  for (let i = 0; i < RUNS; i++) {
    oursRuns.push(await ours());
    if ("run" in duckdb) duckdbRuns.push(await duckdb.run());
  }
  if (duckdbRuns.length > 0) checkAgreement(oursRuns[0].variants, duckdbRuns[0].variants);
  const oursSeconds = median(oursRuns.map((run) => run.seconds));
  const duckdbSeconds = duckdbRuns.length > 0 ? median(duckdbRuns.map((run) => run.seconds)) : null;
  return {
    oursSeconds,
    oursPeakRssMB: median(oursRuns.map((run) => run.peakRssMB)),
    duckdbSeconds,
    duckdbPeakRssMB: duckdbRuns.length > 0 ? median(duckdbRuns.map((run) => run.peakRssMB)) : null,
    ratio: duckdbSeconds === null ? null : oursSeconds / duckdbSeconds,
    duckdbRunner: "how" in duckdb ? duckdb.how : duckdb.why,
  };
}

if (import.meta.main) {
  const childMode = Deno.args.find((arg) => arg.startsWith("--child="))?.slice(8);
  const path = Deno.args.find((arg) => !arg.startsWith("--")) ?? "/tmp/bench.csv";
  if (childMode === "ours") {
    console.log(JSON.stringify(await runOurs(path)));
  } else if (childMode === "duckdb") {
    console.log(JSON.stringify(await runDuckdbUnderDeno(path)));
  } else {
    await ensureCsv(path);
    const result = await benchAnalysis(path);
    const size = (await Deno.stat(path)).size / 1048576;
    console.log(`analysis of ${path} (${size.toFixed(0)} MiB), median of ${RUNS} runs`);
    console.log(
      `  ours:   ${result.oursSeconds.toFixed(2)} s, peak RSS ${
        result.oursPeakRssMB.toFixed(0)
      } MB`,
    );
    if (result.duckdbSeconds !== null) {
      console.log(
        `  DuckDB: ${result.duckdbSeconds.toFixed(2)} s, peak RSS ${
          result.duckdbPeakRssMB!.toFixed(0)
        } MB (${result.duckdbRunner})`,
      );
      console.log(`  ratio:  ${result.ratio!.toFixed(2)} (ours / DuckDB, target <= 1.0)`);
    } else {
      console.log(`  DuckDB: not measured: ${result.duckdbRunner}`);
    }
  }
}
