/**
 * DuckDB as the benchmarks' peer, measured warm (docs/performance.md, "Analysis"): one long-lived
 * `@duckdb/node-api` instance under Node with 2 threads, the query run once and discarded (the
 * instance's creation, its first sniffing of the file and the loading of the extension), then
 * each measurement is one more run of it on the same instance; a benchmark reports the median of
 * at least five. The discarded first run, from the instance's creation to its rows, is the cold
 * figure, which a benchmark may print beside the warm one, never as the ratio.
 *
 * The package is installed by `npm` into a temporary directory (npm's cache makes later installs
 * quick), and Node runs a small script there that answers one JSON line per query.
 */

/** The npm package and version DuckDB runs from. */
export const DUCKDB_PACKAGE = "@duckdb/node-api@1.5.5-r.5";

/** Per variant: users, converted users and revenue, to check both sides agree. */
export type Totals = Record<string, { users: number; converted: number; revenue: number }>;

/**
 * The baseline the analysis and insight benchmarks time: DuckDB's per-user, then per-variant
 * aggregation of the benchmark file, by the analysis's own rules (the README's "The analysis").
 * Per user, `converted` is the maximum over the user's rows and `revenue` the sum, and a user seen
 * in two variants is left out; per variant, the users, and per metric the users with a value, the
 * sum and the sum of squares. `{path}` stands for the file (see `sqlString`). A user's rows are in
 * one variant when `min(variant) = max(variant)`: the same users as `count(DISTINCT variant) = 1`,
 * which took DuckDB 1.3 times as long (docs/performance.md, "Analysis").
 */
export const AGGREGATION_QUERY = `
  WITH per_user AS (
    SELECT user_id, min(variant) AS variant, max(converted) AS converted, sum(revenue) AS revenue
    FROM read_csv({path})
    GROUP BY user_id
    HAVING min(variant) = max(variant)
  )
  SELECT variant, count(*) AS users,
    count(converted) AS converted_users, sum(converted) AS converted_sum,
    sum(converted * converted) AS converted_squares,
    count(revenue) AS revenue_users, sum(revenue) AS revenue_sum,
    sum(revenue * revenue) AS revenue_squares
  FROM per_user GROUP BY variant ORDER BY variant`;

/** The `Totals` of `AGGREGATION_QUERY`'s rows. */
export function queryTotals(rows: Record<string, unknown>[]): Totals {
  return Object.fromEntries(rows.map((row) => [String(row.variant), {
    users: Number(row.users),
    converted: Number(row.converted_sum),
    revenue: Number(row.revenue_sum),
  }]));
}

/** `text` as an SQL string literal. */
export function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** Throws unless both sides found the same users and (to rounding) the same sums. */
export function checkAgreement(ours: Totals, duckdb: Totals): void {
  const names = Object.keys(ours);
  const same = names.length === Object.keys(duckdb).length &&
    names.every((name) => {
      const a = ours[name];
      const b = duckdb[name];
      return b !== undefined && a.users === b.users && a.converted === b.converted &&
        Math.abs(a.revenue - b.revenue) <= 1e-9 * Math.abs(b.revenue);
    });
  if (!same) {
    throw new Error(
      `The two sides disagree: ours ${JSON.stringify(ours)}, DuckDB ${JSON.stringify(duckdb)}`,
    );
  }
}

/** One query's answer: its wall time, its rows' totals, and Node's peak RSS so far. */
export interface DuckdbRun {
  seconds: number;
  totals: Totals;
  peakRssMB: number;
}

/**
 * The long-lived Node process: one instance, one connection; each line on stdin is a query, each
 * answer a JSON line. The first line out reports the instance's creation time.
 */
const NODE_SCRIPT = `
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { DuckDBInstance } from "@duckdb/node-api";
const peak = () => Number(/VmHWM:\\s+(\\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))[1]) / 1024;
const created = performance.now();
const instance = await DuckDBInstance.create(":memory:", { threads: "2" });
const connection = await instance.connect();
console.log(JSON.stringify({ createSeconds: (performance.now() - created) / 1000 }));
for await (const line of createInterface({ input: process.stdin })) {
  const start = performance.now();
  const reader = await connection.runAndReadAll(JSON.parse(line));
  const rows = reader.getRowObjectsJS().map((row) =>
    Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === "bigint" ? Number(v) : v])));
  console.log(JSON.stringify({ seconds: (performance.now() - start) / 1000, rows, peakRssMB: peak() }));
}
`;

/** A warm DuckDB (see the module), ready for `run`s of `AGGREGATION_QUERY` on its file. */
export class WarmDuckdb {
  readonly #process: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #lines: AsyncIterator<string>;
  readonly #query: string;
  readonly #dir: string;
  /** The discarded first run, from the instance's creation to its rows: the cold figure. */
  coldSeconds = NaN;
  /** How DuckDB runs, for the benchmark's table. */
  readonly how = `warm, under Node, ${DUCKDB_PACKAGE}, 2 threads`;

  private constructor(process: Deno.ChildProcess, dir: string, path: string) {
    this.#process = process;
    this.#dir = dir;
    this.#writer = process.stdin.getWriter();
    this.#lines = lines(process.stdout);
    this.#query = AGGREGATION_QUERY.replace("{path}", sqlString(path));
  }

  /**
   * Installs DuckDB, starts the instance and runs the query on `path` once (discarded); answers
   * the warm DuckDB, or why there is none.
   */
  static async start(path: string): Promise<WarmDuckdb | { why: string }> {
    const dir = await Deno.makeTempDir({ prefix: "abn-bench-duckdb-" });
    try {
      await Deno.writeTextFile(`${dir}/package.json`, '{ "type": "module", "private": true }');
      await Deno.writeTextFile(`${dir}/warm.mjs`, NODE_SCRIPT);
      const install = await new Deno.Command("npm", {
        args: ["install", "--silent", "--prefer-offline", DUCKDB_PACKAGE],
        cwd: dir,
        stdout: "null",
        stderr: "piped",
      }).output();
      if (!install.success) throw new Error(new TextDecoder().decode(install.stderr).trim());
      const process = new Deno.Command("node", {
        args: ["warm.mjs"],
        cwd: dir,
        stdin: "piped",
        stdout: "piped",
        stderr: "inherit",
      }).spawn();
      const duckdb = new WarmDuckdb(process, dir, path);
      const { createSeconds } = JSON.parse(await duckdb.#next());
      const first = await duckdb.run();
      duckdb.coldSeconds = createSeconds + first.seconds;
      return duckdb;
    } catch (error) {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      return { why: `DuckDB could not run under Node: ${error}` };
    }
  }

  /** One more run of the query on the warm instance. */
  async run(): Promise<DuckdbRun> {
    await this.#writer.write(new TextEncoder().encode(JSON.stringify(this.#query) + "\n"));
    const { seconds, rows, peakRssMB } = JSON.parse(await this.#next());
    return { seconds, totals: queryTotals(rows), peakRssMB };
  }

  /** Ends the Node process and removes its directory. */
  async stop(): Promise<void> {
    await this.#writer.close().catch(() => {});
    await this.#process.status;
    await Deno.remove(this.#dir, { recursive: true }).catch(() => {});
  }

  async #next(): Promise<string> {
    const { done, value } = await this.#lines.next();
    if (done) throw new Error("DuckDB's process ended");
    return value;
  }
}

/** The lines of `stream`. */
async function* lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  let text = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    text += chunk;
    const parts = text.split("\n");
    text = parts.pop()!;
    yield* parts.filter((line) => line.trim() !== "");
  }
}
