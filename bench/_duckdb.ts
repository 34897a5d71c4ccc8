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
