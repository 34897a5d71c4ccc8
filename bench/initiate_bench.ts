/**
 * Initiate throughput: wrk at 50 connections for 10 s against (a) a hello-world `Deno.serve` and
 * (b) `POST /api/v1/datasets/initiate/` on the local driver and on the S3 driver (s3rver), in
 * the same run, taking turns three times (medians). Needs `wrk` (Debian package).
 *
 * Each run also reads the server's CPU time (user + system, `/proc`) per request. On two cores
 * the hello-world rate is bound by wrk itself (the server spends ~11 µs a request and idles),
 * while initiate is bound by the server: the ratio of rates moves with whatever changes wrk's
 * cost against the server's (the CPU, the kernel, other load), and the CPU per request is the
 * steadier measure of the service's own work.
 *
 *   deno run -A bench/initiate_bench.ts [SECONDS]
 */
import {
  cpuSeconds,
  freePort,
  printTable,
  SERVICE_MAIN,
  spawnService,
  startChild,
} from "./_util.ts";
import { startS3rver } from "../tests/_s3rver.ts";

const MAIN = SERVICE_MAIN;

export interface WrkResult {
  rps: number;
  p99ms: number;
  errors: number;
  /** Server CPU time per request, microseconds. */
  cpuUs: number;
}

/** wrk against `url`; `pid` is the server's process, whose CPU time is read before and after. */
export async function wrk(
  pid: number,
  url: string,
  seconds: number,
  script?: string,
  connections = 50,
): Promise<WrkResult> {
  const cpu0 = await cpuSeconds(pid);
  const args = [
    "-t2",
    `-c${connections}`,
    `-d${seconds}s`,
    "--latency",
    ...(script ? ["-s", script] : []),
    url,
  ];
  const out = await new Deno.Command("wrk", { args, stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(text)?.[1] ?? NaN);
  const p99 = /99%\s+([\d.]+)(us|ms|s)/.exec(text);
  const p99ms = p99 ? Number(p99[1]) * (p99[2] === "us" ? 0.001 : p99[2] === "s" ? 1000 : 1) : NaN;
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(text)?.[1] ?? 0);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(
    text,
  );
  const errors = non2xx +
    (socketErrors ? socketErrors.slice(1).reduce((a, b) => a + Number(b), 0) : 0);
  const requests = Number(/(\d+) requests in/.exec(text)?.[1] ?? NaN);
  const cpuUs = (await cpuSeconds(pid) - cpu0) * 1e6 / requests;
  return { rps, p99ms, errors, cpuUs };
}

async function service(env: Record<string, string>) {
  const dataDir = await Deno.makeTempDir({ prefix: "abn-bench-init-" });
  const full = { ...env, ABN_DATA_DIR: dataDir };
  const run = async (args: string[]) =>
    JSON.parse(
      new TextDecoder().decode(
        (await new Deno.Command(Deno.execPath(), {
          args: ["run", "-A", MAIN, ...args],
          env: full,
          stdout: "piped",
        }).output()).stdout,
      ),
    );
  const { org_id } = await run(["admin", "org", "create", "bench", "--json"]);
  const { api_key } = await run(["admin", "key", "create", org_id, "--json"]);
  const child = await spawnService(full);
  const script = `${dataDir}/initiate.lua`;
  await Deno.writeTextFile(
    script,
    `wrk.method = "POST"
wrk.body = '{"experiment_id": "bench-exp"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer ${api_key}"
`,
  );
  return {
    pid: child.pid,
    url: `${child.url}/api/v1/datasets/initiate/`,
    script,
    async stop() {
      await child.stop();
      await Deno.remove(dataDir, { recursive: true });
    },
  };
}

function medianOf(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** The median rate and p99 of several runs, and their errors summed. */
export function combine(results: WrkResult[]): WrkResult {
  return {
    rps: medianOf(results.map((r) => r.rps)),
    p99ms: medianOf(results.map((r) => r.p99ms)),
    errors: results.reduce((sum, r) => sum + r.errors, 0),
    cpuUs: medianOf(results.map((r) => r.cpuUs)),
  };
}

/**
 * All three servers run side by side and take turns under wrk, `rounds` times: a machine whose
 * speed drifts during the benchmark shifts every series alike. Medians of the rounds count.
 */
export async function benchInitiate(seconds = 10, rounds = 3) {
  const helloPort = freePort();
  const hello = await startChild(
    ["run", "-A", new URL("./_hello_server.ts", import.meta.url).pathname, String(helloPort)],
    {},
    "ready",
    helloPort,
  );
  const local = await service({});
  const s3 = await startS3rver();
  const s3svc = await service({
    ABN_STORAGE: "s3",
    ABN_S3_ENDPOINT: s3.endpoint,
    ABN_S3_BUCKET: s3.bucket,
    ABN_S3_REGION: s3.region,
    ABN_S3_ACCESS_KEY_ID: s3.accessKeyId,
    ABN_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
  });
  const runs = { hello: [] as WrkResult[], local: [] as WrkResult[], s3: [] as WrkResult[] };
  try {
    for (let round = 0; round < rounds; round++) {
      runs.hello.push(await wrk(hello.pid, `${hello.url}/`, seconds));
      runs.local.push(await wrk(local.pid, local.url, seconds, local.script));
      runs.s3.push(await wrk(s3svc.pid, s3svc.url, seconds, s3svc.script));
    }
  } finally {
    await hello.stop();
    await local.stop();
    await s3svc.stop();
    await s3.stop();
  }
  return { hello: combine(runs.hello), local: combine(runs.local), s3: combine(runs.s3) };
}

if (import.meta.main) {
  const r = await benchInitiate(Number(Deno.args[0] ?? 10));
  const row = (what: string, x: WrkResult, target: string) => ({
    what,
    "req/s": x.rps.toFixed(0),
    "p99 ms": x.p99ms.toFixed(2),
    "server CPU µs/req": x.cpuUs.toFixed(1),
    errors: x.errors,
    "ratio to hello": (x.rps / r.hello.rps).toFixed(2),
    target,
  });
  printTable("Initiate at 50 connections (wrk)", [
    row("hello-world Deno.serve", r.hello, ""),
    row("initiate, local driver", r.local, "≥ 0.30, p99 < 20 ms"),
    row("initiate, S3 driver", r.s3, "≥ 0.20, p99 < 20 ms"),
  ]);
}
