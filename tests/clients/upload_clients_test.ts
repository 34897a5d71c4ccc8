/**
 * The two upload clients, `main.ts upload` (Deno) and `abn-upload` (Python), against one list of
 * cases (`cases.json`): the same command line under the same server condition must give each the
 * case's exit status, output and stored result. The Python half needs the client's virtual
 * environment (`_python.ts`); without it, it is skipped with one line naming what to install.
 */
import { assert, assertEquals } from "../_assert.ts";
import type { DriverServer } from "../_drivers.ts";
import { startDriverServer } from "../_drivers.ts";
import { freePort } from "../_server.ts";
import type { Fault } from "./_fault_proxy.ts";
import { startFaultProxy } from "./_fault_proxy.ts";
import { abnUpload, PYTHON_SETUP, REPO_ROOT } from "./_python.ts";

type Client = "deno" | "python";

interface Case {
  name: string;
  args: string[];
  env?: Record<string, string>;
  server?: Fault | "down";
  drivers?: ("local" | "s3")[];
  clients?: Client[];
  exit: number;
  json?: unknown;
  stdout?: string[];
  stderr?: string[];
  stdout_empty?: boolean;
  stored?: "valid" | "invalid" | null;
  requests?: Record<string, number>;
}

const { cases } = JSON.parse(
  await Deno.readTextFile(new URL("./cases.json", import.meta.url)),
) as { cases: Case[] };

const PYTHON_CLIENT = abnUpload();
if (PYTHON_CLIENT === null) console.log(`abn-upload cases skipped: ${PYTHON_SETUP}`);

const VALID = await Deno.readFile(new URL("../testdata/small.csv", import.meta.url));
const INVALID = new TextEncoder().encode("user_id,variant,date,converted\nu1,A,2026-01-01\n");
/** The server's limit in these cases; `{oversize}` is above it. */
const LIMIT = 1024 * 1024;

function oversizeCsv(): Uint8Array {
  const lines = ["user_id,variant,date,converted"];
  for (let i = 0; lines.length * 20 < LIMIT * 1.5; i++) {
    lines.push(`u${i},${i % 2 ? "B" : "A"},2026-01-01,1`);
  }
  return new TextEncoder().encode(lines.join("\n") + "\n");
}

const MATCHERS: Record<string, (v: unknown) => boolean> = {
  "<integer>": (v) => Number.isInteger(v),
  "<number>": (v) => typeof v === "number",
  "<string>": (v) => typeof v === "string" && v !== "",
  "<boolean>": (v) => typeof v === "boolean",
  "<sha256>": (v) => typeof v === "string" && /^[0-9a-f]{64}$/.test(v),
  "<uuid>": (v) =>
    typeof v === "string" &&
    /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(v),
};

/** What in `actual` differs from the case's `expected` shape, one line each. */
function differences(
  actual: unknown,
  expected: unknown,
  fill: (s: string) => string,
  at = "$",
): string[] {
  if (typeof expected === "string") {
    const matcher = MATCHERS[expected];
    const ok = matcher
      ? matcher(actual)
      : expected.startsWith("~")
      ? typeof actual === "string" && new RegExp(fill(expected.slice(1))).test(actual)
      : actual === fill(expected);
    return ok ? [] : [`${at}: ${JSON.stringify(actual)} is not ${JSON.stringify(fill(expected))}`];
  }
  if (expected === null || typeof expected !== "object") {
    return actual === expected ? [] : [`${at}: ${JSON.stringify(actual)} is not ${expected}`];
  }
  if (typeof actual !== "object" || actual === null || Array.isArray(actual)) {
    return [`${at}: ${JSON.stringify(actual)} is not an object`];
  }
  const want = expected as Record<string, unknown>;
  const got = actual as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(want), ...Object.keys(got)])];
  return keys.flatMap((key) =>
    !(key in want)
      ? [`${at}.${key}: not expected`]
      : !(key in got)
      ? [`${at}.${key}: missing`]
      : differences(got[key], want[key], fill, `${at}.${key}`)
  );
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function runClient(client: Client, args: string[], env: Record<string, string>) {
  const [program, prefix] = client === "deno"
    ? [Deno.execPath(), ["run", "-A", `${REPO_ROOT}main.ts`, "upload"]]
    : [PYTHON_CLIENT!, []];
  // The parent's ABN_* settings never reach the clients: only what the case gives.
  const kept = ["PATH", "HOME", "DENO_DIR", "TMPDIR", "LANG"].flatMap((name) => {
    const value = Deno.env.get(name);
    return value === undefined ? [] : [[name, value]];
  });
  const out = await new Deno.Command(program, {
    args: [...prefix, ...args],
    clearEnv: true,
    env: { ...Object.fromEntries(kept), ...env },
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(120_000),
  }).output();
  const d = new TextDecoder();
  return { code: out.code, stdout: d.decode(out.stdout), stderr: d.decode(out.stderr) } as Run;
}

interface Files {
  valid: string;
  invalid: string;
  oversize: string;
  missing: string;
  dir: string;
}

async function runCase(server: DriverServer, files: Files, c: Case, client: Client, id: string) {
  const fault = c.server ?? "service";
  const proxy = fault === "down" ? null : startFaultProxy(server.url, fault);
  const url = proxy?.url ?? `http://127.0.0.1:${freePort()}`;
  const values: Record<string, string> = { ...files, id, url, key: server.apiKey };
  const fill = (s: string) => s.replace(/\{(\w+)\}/g, (whole, name) => values[name] ?? whole);
  let run: Run;
  try {
    const env = Object.fromEntries(
      Object.entries(c.env ?? { ABN_API_KEY: "{key}" }).map(([k, v]) => [k, fill(v)]),
    );
    run = await runClient(client, c.args.map(fill), { ABN_UPLOAD_RETRY_BASE_MS: "1", ...env });
  } finally {
    await proxy?.close();
  }
  const shown = `exit ${run.code}\n--- stdout\n${run.stdout}--- stderr\n${run.stderr}`;
  assertEquals(run.code, c.exit, shown);
  assert(!`${run.stdout}${run.stderr}`.includes(server.apiKey), `the key in the output:\n${shown}`);
  if (c.json !== undefined) {
    let answer: unknown;
    try {
      answer = JSON.parse(run.stdout);
    } catch {
      throw new Error(`standard output is not one JSON value:\n${shown}`);
    }
    assertEquals(differences(answer, c.json, fill), [], shown);
  }
  for (const pattern of c.stdout ?? []) {
    assert(new RegExp(fill(pattern), "m").test(run.stdout), `stdout lacks /${pattern}/:\n${shown}`);
  }
  for (const pattern of c.stderr ?? []) {
    assert(new RegExp(fill(pattern), "m").test(run.stderr), `stderr lacks /${pattern}/:\n${shown}`);
  }
  if (c.stdout_empty) assertEquals(run.stdout, "", shown);
  if (c.stored !== undefined) {
    const want = c.stored === null ? null : c.stored === "valid" ? VALID : INVALID;
    assertEquals(await server.stored(server.orgId, id), want, `stored for ${id}\n${shown}`);
  }
  if (c.requests !== undefined) {
    assertEquals(Object.fromEntries(proxy?.seen ?? []), c.requests, shown);
  }
}

for (const driver of ["local", "s3"] as const) {
  const selected = cases.filter((c) => (c.drivers ?? ["local"]).includes(driver));
  Deno.test(`main.ts upload and abn-upload answer every shared case alike (${driver})`, async (t) => {
    const server = await startDriverServer(driver, { ABN_MAX_UPLOAD_BYTES: String(LIMIT) });
    const dir = await Deno.makeTempDir({ prefix: "abn-client-cases-" });
    const files: Files = {
      valid: `${dir}/valid.csv`,
      invalid: `${dir}/invalid.csv`,
      oversize: `${dir}/oversize.csv`,
      missing: `${dir}/missing.csv`,
      dir,
    };
    await Deno.writeFile(files.valid, VALID);
    await Deno.writeFile(files.invalid, INVALID);
    await Deno.writeFile(files.oversize, oversizeCsv());
    try {
      for (const [n, c] of selected.entries()) {
        for (const client of c.clients ?? ["deno", "python"] as Client[]) {
          await t.step({
            name: `${client}: ${c.name}`,
            ignore: client === "python" && PYTHON_CLIENT === null,
            fn: () => runCase(server, files, c, client, `case${n}-${client}`),
          });
        }
      }
    } finally {
      await server.close();
      await Deno.remove(dir, { recursive: true });
    }
  });
}
