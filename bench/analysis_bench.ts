/**
 * Compares the aggregation of a stored dataset (`aggregateCsv`) with DuckDB doing the same
 * per-user, then per-variant aggregation from the same CSV file: per user max(converted) and
 * sum(revenue) over users in one variant only, then per variant the count, sum and sum of squares.
 * Ours also builds the daily cumulative series (it is part of the same pass); DuckDB's query
 * leaves it out. Ours reads the file in 1 MiB chunks and aggregates on two threads (see
 * `aggregateCsv`), each run in a child process of its own; DuckDB runs warm (`WarmDuckdb`: one
 * instance under Node with 2 threads, its first run discarded). The sides take turns, five runs
 * each; the answer is the median wall time and the median peak RSS (`VmHWM`), both including the
 * runtime itself.
 *
 *   deno run -A bench/analysis_bench.ts [FILE]   (default /tmp/bench.csv, generated when missing)
 */
import { aggregateCsv } from "../src/analysis/aggregate/aggregate.ts";
import { ensureCsv } from "./generate_csv.ts";
import { median, readChunks } from "./_util.ts";
import { checkAgreement, type Totals, WarmDuckdb } from "./_duckdb.ts";

const RUNS = 5;

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

/** Runs a child (at most ten minutes) and answers the JSON of its last line of output. */
async function child<T>(command: string, args: string[]): Promise<T> {
  const output = await new Deno.Command("timeout", {
    args: ["600", command, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout).trim();
  if (!output.success) {
    const error = new TextDecoder().decode(output.stderr).trim().split("\n").slice(-3).join(" ");
    throw new Error(`${command} ${args.join(" ")} failed: ${error}`);
  }
  return JSON.parse(text.slice(text.lastIndexOf("\n") + 1));
}

/** Runs both sides `RUNS` times on `path` and answers the medians. */
export async function benchAnalysis(path: string): Promise<AnalysisBenchResult> {
  const self = new URL(import.meta.url).pathname;
  const ours = () => child<ChildResult>(Deno.execPath(), ["run", "-A", self, "--child=ours", path]);
  const duckdb = await WarmDuckdb.start(path);
  const oursRuns: ChildResult[] = [];
  const duckdbRuns: ChildResult[] = [];
  try {
    for (let i = 0; i < RUNS; i++) {
      oursRuns.push(await ours());
      if (duckdb instanceof WarmDuckdb) {
        const { seconds, totals, peakRssMB } = await duckdb.run();
        duckdbRuns.push({ seconds, peakRssMB, variants: totals });
      }
    }
  } finally {
    if (duckdb instanceof WarmDuckdb) await duckdb.stop();
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
    duckdbRunner: duckdb instanceof WarmDuckdb ? duckdb.how : duckdb.why,
  };
}

if (import.meta.main) {
  const childMode = Deno.args.find((arg) => arg.startsWith("--child="))?.slice(8);
  const path = Deno.args.find((arg) => !arg.startsWith("--")) ?? "/tmp/bench.csv";
  if (childMode === "ours") {
    console.log(JSON.stringify(await runOurs(path)));
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
