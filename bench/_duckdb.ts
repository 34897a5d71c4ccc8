/**
 * Running DuckDB as a benchmark's baseline: in a child process of the benchmark's own module
 * (`--child=duckdb`, where DuckDB loads through `npm:@duckdb/node-api` under Deno), or, if that
 * cannot load, under Node from a temporary directory where `npm install @duckdb/node-api` ran
 * (the benchmark gives that script). Each child prints its measurement as JSON on its last line.
 */

/** The npm package DuckDB runs from under Deno. */
export const DUCKDB = "npm:@duckdb/node-api@1.5.5-r.5";

/** Per variant: users, converted users and revenue, to check both sides agree. */
export type Totals = Record<string, { users: number; converted: number; revenue: number }>;

/**
 * The baseline the analysis and insight benchmarks time: DuckDB's per-user, then per-variant
 * aggregation of the benchmark file, by the analysis's own rules (the README's "The analysis").
 * Per user, `converted` is the maximum over the user's rows and `revenue` the sum, and a user seen
 * in two variants is left out; per variant, the users, and per metric the users with a value, the
 * sum and the sum of squares. `{path}` stands for the file (see `sqlString`). A user's rows are in
 * one variant when `min(variant) = max(variant)`: the same users as `count(DISTINCT variant) = 1`,
 * which took DuckDB 1.3 times as long here (docs/performance.md, session AB).
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

/** Runs a child (at most ten minutes) and answers the JSON of its last line of output. */
export async function child<T>(command: string, args: string[], cwd?: string): Promise<T> {
  const output = await new Deno.Command("timeout", {
    args: ["600", command, ...args],
    cwd,
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

/**
 * A way to run one DuckDB measurement of `path` (tried once here), or why there is none:
 * `module` (the benchmark's `import.meta.url`) run with `--child=duckdb`, else `nodeScript`
 * under Node.
 */
export async function duckdbRunner<T>(
  module: string,
  path: string,
  nodeScript: string,
): Promise<{ run: () => Promise<T>; how: string } | { why: string }> {
  const self = new URL(module).pathname;
  const underDeno = () => child<T>(Deno.execPath(), ["run", "-A", self, "--child=duckdb", path]);
  try {
    await underDeno();
    return { run: underDeno, how: `under Deno ${Deno.version.deno}, ${DUCKDB}` };
  } catch (denoError) {
    try {
      const dir = await Deno.makeTempDir({ prefix: "abn-bench-duckdb-" });
      await Deno.writeTextFile(`${dir}/package.json`, '{ "type": "module", "private": true }');
      await Deno.writeTextFile(`${dir}/bench.mjs`, nodeScript);
      const install = await new Deno.Command("npm", {
        args: ["install", "--silent", "@duckdb/node-api"],
        cwd: dir,
        stdout: "null",
        stderr: "piped",
      }).output();
      if (!install.success) throw new Error(new TextDecoder().decode(install.stderr));
      const underNode = () => child<T>("node", ["bench.mjs", path], dir);
      await underNode();
      return { run: underNode, how: `under Node, @duckdb/node-api (under Deno: ${denoError})` };
    } catch (nodeError) {
      return { why: `DuckDB could not run: under Deno ${denoError}; under Node ${nodeError}` };
    }
  }
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

/**
 * Runs `query` (its `{path}` replaced by `path` as an SQL string) in a fresh in-memory DuckDB
 * under Deno, with `threads` threads (default: DuckDB's choice, the machine's cores); answers the
 * rows and the seconds from the instance's creation to the rows.
 */
export async function queryDuckdb(
  query: string,
  path: string,
  threads?: number,
): Promise<{ rows: Record<string, unknown>[]; seconds: number }> {
  const { DuckDBInstance } = await import(DUCKDB);
  const start = performance.now();
  const instance = await DuckDBInstance.create(
    ":memory:",
    threads === undefined ? undefined : { threads: String(threads) },
  );
  const connection = await instance.connect();
  const reader = await connection.runAndReadAll(query.replace("{path}", sqlString(path)));
  const rows = reader.getRowObjectsJS() as Record<string, unknown>[];
  const seconds = (performance.now() - start) / 1000;
  connection.closeSync();
  instance.closeSync();
  return { rows, seconds };
}
