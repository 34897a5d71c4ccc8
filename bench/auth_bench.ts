/**
 * What scoped keys and the audit trail cost on the hot paths, against another version of the
 * service (`--baseline PATH/main.ts`), in alternating turns: each turn starts the service fresh
 * (local driver, data directory on tmpfs where there is one) and measures
 *
 * 1. `POST /datasets/initiate/` at 50 connections for `--seconds` (wrk): requests per second, p99
 *    and the server's CPU time per request;
 * 2. a burst of `--uploads` tiny direct uploads (60 bytes, 16 connections, new experiment ids):
 *    uploads per second until all are stored, p99.
 *
 * Turns alternate baseline and ours (`sync` before each; A B, B A, A B, …), `--runs` of each; the
 * table gives the medians, the ranges and the ratios ours ÷ baseline. Needs `wrk`.
 *
 *   deno run -A bench/auth_bench.ts --baseline ../base/main.ts [--runs 5] [--seconds 10]
 *                                   [--uploads 2000]
 */
import { benchKey, median, printTable, SERVICE_MAIN } from "./_util.ts";
import { wrk } from "./initiate_bench.ts";
import { burst, serve } from "./scale_bench.ts";

interface Turn {
  initiateRps: number;
  initiateP99ms: number;
  initiateCpuUs: number;
  uploadRps: number;
  uploadP99ms: number;
  errors: number;
}

function option(name: string, fallback: string): string {
  const at = Deno.args.indexOf(`--${name}`);
  return at >= 0 && Deno.args[at + 1] !== undefined ? Deno.args[at + 1] : fallback;
}

/** One turn on `SERVICE_MAIN` (this process's `ABN_BENCH_MAIN`). */
async function turn(seconds: number, uploads: number): Promise<Turn> {
  const tmpfs = (await Deno.stat("/dev/shm").catch(() => null))?.isDirectory
    ? "/dev/shm"
    : undefined;
  const dataDir = await Deno.makeTempDir({ dir: tmpfs, prefix: "abn-bench-auth-" });
  try {
    const env = { ABN_DATA_DIR: dataDir };
    const { apiKey } = await benchKey(env);
    const svc = await serve(env, apiKey);
    try {
      const script = `${dataDir}/initiate.lua`;
      await Deno.writeTextFile(
        script,
        `wrk.method = "POST"
wrk.body = '{"experiment_id": "bench-exp"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer ${apiKey}"
`,
      );
      const i = await wrk(svc.pid, `${svc.url}/api/v1/datasets/initiate/`, seconds, script);
      const b = await burst(svc, uploads, "t");
      return {
        initiateRps: i.rps,
        initiateP99ms: i.p99ms,
        initiateCpuUs: i.cpuUs,
        uploadRps: b.rps,
        uploadP99ms: b.p99ms,
        errors: i.errors + b.errors,
      };
    } finally {
      await svc.stop();
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
}

/** Runs one turn in a child process on `main`; answers its figures. */
async function child(main: string, seconds: number, uploads: number): Promise<Turn> {
  await new Deno.Command("sync").output();
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL(import.meta.url).pathname,
      "--turn",
      "--seconds",
      String(seconds),
      "--uploads",
      String(uploads),
    ],
    env: { ABN_BENCH_MAIN: main },
    stdout: "piped",
    stderr: "inherit",
  }).output();
  if (!out.success) throw new Error(`the turn on ${main} failed`);
  const lines = new TextDecoder().decode(out.stdout).trim().split("\n");
  return JSON.parse(lines[lines.length - 1]);
}

function summary(values: number[], digits: number): string {
  const sorted = [...values].sort((a, b) => a - b);
  return `${median(values).toFixed(digits)} (${sorted[0].toFixed(digits)}–${
    sorted[sorted.length - 1].toFixed(digits)
  })`;
}

if (import.meta.main) {
  const seconds = Number(option("seconds", "10"));
  const uploads = Number(option("uploads", "2000"));
  if (Deno.args.includes("--turn")) {
    console.log(JSON.stringify(await turn(seconds, uploads)));
  } else {
    const baseline = option("baseline", "");
    if (baseline === "") throw new Error("give --baseline PATH/main.ts");
    const ours = SERVICE_MAIN;
    const runs = Number(option("runs", "5"));
    const turns = { baseline: [] as Turn[], ours: [] as Turn[] };
    for (let run = 0; run < runs; run++) {
      // A B, then B A: a side that always ran second would carry whatever the first left behind.
      if (run % 2 === 0) {
        turns.baseline.push(await child(baseline, seconds, uploads));
        turns.ours.push(await child(ours, seconds, uploads));
      } else {
        turns.ours.push(await child(ours, seconds, uploads));
        turns.baseline.push(await child(baseline, seconds, uploads));
      }
      console.error(
        `turn ${run + 1} of ${runs}:`,
        JSON.stringify(turns.baseline.at(-1)),
        JSON.stringify(turns.ours.at(-1)),
      );
    }
    const rows = ([
      ["initiate, local, 50 connections: req/s", "initiateRps", 0],
      ["… p99, ms", "initiateP99ms", 2],
      ["… server CPU per request, µs", "initiateCpuUs", 1],
      [`${uploads} tiny uploads, 16 connections: uploads/s`, "uploadRps", 0],
      ["… p99, ms", "uploadP99ms", 2],
    ] as const).map(([what, field, digits]) => {
      const b = turns.baseline.map((t) => t[field]);
      const o = turns.ours.map((t) => t[field]);
      const ratios = o.map((x, i) => x / b[i]);
      return {
        what,
        baseline: summary(b, digits),
        ours: summary(o, digits),
        "ratio of medians": (median(o) / median(b)).toFixed(3),
        "ratios per pair": summary(ratios, 3),
      };
    });
    printTable(`Scoped keys and the audit trail: ours ÷ baseline, ${runs} alternating turns`, rows);
    const errors = [...turns.baseline, ...turns.ours].reduce((sum, t) => sum + t.errors, 0);
    if (errors > 0) console.log(`errors (non-2xx or socket): ${errors}`);
  }
}
