/**
 * What dimension health costs: the whole analysis (aggregation with the user summary the history
 * needs, then the report) of a ~193 MB file that carries `country` (30 values) and `device` (3
 * values), with the dimensions read against the same analysis with those two columns ignored
 * (`dimensions: false`, what the service did before). Target: at most 25 % more time.
 *
 * Each side runs in a child process of its own, taking turns, `runs` times each; the answer is
 * the median wall time of each side, their ranges, and the ratio of the medians.
 *
 *   deno run -A bench/dimensions_bench.ts [FILE] [--runs=N]
 *   (default /tmp/bench-dimensions.csv, generated when missing: 3.75 M rows)
 */
import { aggregateCsv } from "../src/analysis/aggregate/aggregate.ts";
import { buildReport } from "../src/analysis/report.ts";
import { ensureCsv } from "./generate_csv.ts";
import { median, readChunks } from "./_util.ts";

export interface DimensionsBenchResult {
  runs: number;
  withSeconds: number[];
  withoutSeconds: number[];
  /** Median with ÷ median without. */
  ratio: number;
}

interface ChildResult {
  seconds: number;
  dimensions: number;
}

async function runChild(path: string, dimensions: boolean): Promise<ChildResult> {
  const start = performance.now();
  const aggregate = await aggregateCsv(readChunks(path), { dimensions, userSummary: true });
  const report = buildReport(aggregate);
  const seconds = (performance.now() - start) / 1000;
  return { seconds, dimensions: report.dimensions.length };
}

async function child(path: string, side: "with" | "without"): Promise<ChildResult> {
  const self = new URL(import.meta.url).pathname;
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", self, `--child=${side}`, path],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout).trim();
  if (!output.success) throw new Error(new TextDecoder().decode(output.stderr));
  return JSON.parse(text.slice(text.lastIndexOf("\n") + 1));
}

/** Runs both sides in turns, `runs` times each. */
export async function benchDimensions(path: string, runs = 5): Promise<DimensionsBenchResult> {
  const withSeconds: number[] = [];
  const withoutSeconds: number[] = [];
  for (let i = 0; i < runs; i++) {
    // Alternate which side goes first, so neither always follows the other.
    for (const side of i % 2 === 0 ? ["without", "with"] as const : ["with", "without"] as const) {
      const result = await child(path, side);
      if (side === "with" && result.dimensions !== 2) {
        throw new Error(`expected 2 dimensions, got ${result.dimensions}`);
      }
      (side === "with" ? withSeconds : withoutSeconds).push(result.seconds);
    }
  }
  return { runs, withSeconds, withoutSeconds, ratio: median(withSeconds) / median(withoutSeconds) };
}

if (import.meta.main) {
  const side = Deno.args.find((arg) => arg.startsWith("--child="))?.slice(8);
  const path = Deno.args.find((arg) => !arg.startsWith("--")) ?? "/tmp/bench-dimensions.csv";
  if (side === "with" || side === "without") {
    console.log(JSON.stringify(await runChild(path, side === "with")));
  } else {
    const runs = Number(Deno.args.find((arg) => arg.startsWith("--runs="))?.slice(7) ?? 5);
    await ensureCsv(path, { rows: 3_750_000, dimensions: true });
    const r = await benchDimensions(path, runs);
    const range = (xs: number[]) =>
      `median ${median(xs).toFixed(2)} s (${Math.min(...xs).toFixed(2)}–${
        Math.max(...xs).toFixed(2)
      })`;
    console.log(`dimension health on ${path}, ${runs} runs each, in turns`);
    console.log(`  with country and device: ${range(r.withSeconds)}`);
    console.log(`  the two columns ignored: ${range(r.withoutSeconds)}`);
    console.log(`  ratio: ${r.ratio.toFixed(3)} (target ≤ 1.25)`);
    console.log(`  runs: with ${r.withSeconds.map((s) => s.toFixed(2)).join(", ")}`);
    console.log(`        without ${r.withoutSeconds.map((s) => s.toFixed(2)).join(", ")}`);
  }
}
