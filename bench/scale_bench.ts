/**
 * Cost with many stored datasets (`ABN_BENCH_ONLY=scale`). For each driver (local on tmpfs, and
 * S3 on s3rver, whose 3.7.1 release answers 500 to any listing that needs a second page, so it
 * gets 1,000 datasets instead of 10,000):
 *
 * 1. a burst of tiny direct uploads (60 bytes, 16 connections, wrk, new experiment ids) that
 *    stores the datasets: uploads per second, p50/p99, and the time from the last 201 until every
 *    delivery is analysed;
 * 2. idle CPU of the service over 60 s, starting 30 s after the last request (the timers' scan
 *    runs in it; reconciliation and clean-up do not);
 * 3. the scan's duration over the 90 quiet seconds (`abn_timer_run_duration_seconds{job="scan"}`,
 *    no open grant) and `GET /datasets/?limit=1000` latency (p50 of 50 sequential requests);
 * 4. start-up to `/healthz` 200 with the datasets stored (a restart), and to the end of the
 *    start-up reconciliation.
 *
 * `postgres` runs the same on PostgreSQL (a throwaway cluster, as the tests start it; local
 * storage on tmpfs): the burst's analyses there have their own floor (30 s after the last 201).
 *
 * Then the same burst on disk (`ABN_BENCH_DISK_DIR`, default a folder under the system's temp
 * directory) beside the raw fsync rate of that disk (16 writers creating, writing 60 bytes and
 * fdatasyncing files). Needs `wrk`.
 *
 *   deno run -A bench/scale_bench.ts [local|postgres|s3|disk ...]
 */
import {
  benchKey,
  cpuSeconds,
  freePort,
  median,
  printTable,
  serveArgs,
  SERVICE_MAIN,
  serviceEnv,
  ThreadClock,
} from "./_util.ts";
import { startS3rver } from "../tests/_s3rver.ts";
import { startCluster } from "../tests/_postgres.ts";

const MAIN = SERVICE_MAIN;
const BODY = "user_id,variant,date,m\nu1,A,2026-01-01,1\nu2,B,2026-01-01,0\n";

/** wrk stops each thread after its share of `limit` answers. */
const WRK_SCRIPT = `
local threads = 0
function setup(thread)
  thread:set("tid", threads)
  threads = threads + 1
end
function init(args)
  key = args[1]
  prefix = args[2]
  share = tonumber(args[3])
  sent = 0
  answered = 0
end
request = function()
  sent = sent + 1
  return wrk.format("POST", "/api/v1/datasets/upload/?experiment_id=" .. prefix .. tid .. "-" .. sent,
    {["Authorization"] = "Bearer " .. key, ["Content-Type"] = "text/csv"}, ${JSON.stringify(BODY)})
end
response = function(status, headers, body)
  answered = answered + 1
  if answered >= share then wrk.thread:stop() end
end
`;

interface Service {
  pid: number;
  url: string;
  apiKey: string;
  env: Record<string, string>;
  stop(signal?: Deno.Signal): Promise<void>;
}

/** Starts `main.ts serve` (output to /dev/null) and answers once /healthz is 200. */
export async function serve(
  env: Record<string, string>,
  apiKey: string,
): Promise<Service & { startupMs: number }> {
  const port = String(freePort());
  // The burst's 16 connections are one organization's: they fit in its share of upload slots.
  const full = {
    ABN_MAX_CONCURRENT_UPLOADS_PER_ORG: "16",
    ...env,
    ...serviceEnv(),
    ABN_PORT: port,
  };
  const started = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: serveArgs(MAIN),
    env: full,
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    try {
      const res = await fetch(`${url}/healthz`);
      await res.body?.cancel();
      if (res.ok) break;
    } catch { /* not yet */ }
    if (performance.now() - started > 60_000) throw new Error("the service did not start");
    await new Promise((r) => setTimeout(r, 10));
  }
  return {
    pid: child.pid,
    url,
    apiKey,
    env: full,
    startupMs: performance.now() - started,
    async stop(signal: Deno.Signal = "SIGTERM") {
      try {
        child.kill(signal);
      } catch { /* gone */ }
      await child.status;
    },
  };
}

async function metrics(url: string): Promise<string> {
  return await (await fetch(`${url}/metrics`)).text();
}

function metric(text: string, name: string, labels = ""): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$/.exec(line);
    if (m && m[1] === name && (m[2] ?? "").includes(labels)) sum += Number(m[3]);
  }
  return sum;
}

interface Burst {
  rps: number;
  p50ms: number;
  p99ms: number;
  errors: number;
  stored: number;
  /** From the end of the burst until every stored delivery was analysed. */
  analysedAfterS: number;
  /**
   * Processor time of the service's own thread during the burst, a stored upload: the thread
   * that bounds a burst on tmpfs (docs/performance.md, "Uploads").
   */
  requestThreadUs: number;
}

/**
 * `count` tiny uploads at 16 connections (wrk; each thread stops after its share, and wrk is
 * interrupted, which makes it print its figures, once the service has stored them all); then
 * waits until all are analysed.
 */
export async function burst(svc: Service, count: number, prefix: string): Promise<Burst> {
  const script = await Deno.makeTempFile({ suffix: ".lua" });
  await Deno.writeTextFile(script, WRK_SCRIPT);
  const start = await metrics(svc.url);
  const analysedBefore = metric(start, "abn_analysis_runs_total");
  const storedBefore = metric(start, "abn_uploads_stored_total");
  const stored = async () =>
    metric(await metrics(svc.url), "abn_uploads_stored_total") - storedBefore;
  const clock = new ThreadClock(svc.pid);
  await clock.start();
  const began = performance.now();
  const wrk = new Deno.Command("wrk", {
    args: [
      "-t2",
      "-c16",
      "-d600s",
      "--latency",
      "-s",
      script,
      svc.url,
      "--",
      svc.apiKey,
      prefix,
      String(count / 2),
    ],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  while (await stored() < count) await new Promise((r) => setTimeout(r, 20));
  const ended = performance.now();
  await clock.sample();
  wrk.kill("SIGINT");
  const text = new TextDecoder().decode((await wrk.output()).stdout);
  await Deno.remove(script);
  const ms = (m: RegExpExecArray | null) =>
    m ? Number(m[1]) * (m[2] === "us" ? 0.001 : m[2] === "s" ? 1000 : 1) : NaN;
  const total = await stored();
  for (;;) {
    const runs = metric(await metrics(svc.url), "abn_analysis_runs_total") - analysedBefore;
    if (runs >= total) break;
    if (performance.now() - ended > 300_000) throw new Error(`analyses stuck at ${runs}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(text)?.[1] ?? 0);
  return {
    rps: count / ((ended - began) / 1000),
    p50ms: ms(/50%\s+([\d.]+)(us|ms|s)/.exec(text)),
    p99ms: ms(/99%\s+([\d.]+)(us|ms|s)/.exec(text)),
    errors: non2xx,
    stored: total,
    analysedAfterS: (performance.now() - ended) / 1000,
    requestThreadUs: clock.used().main * 1e6 / total,
  };
}

async function listP50(svc: Service, runs = 50): Promise<{ p50ms: number; items: number }> {
  const times: number[] = [];
  let items = 0;
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    const res = await fetch(`${svc.url}/api/v1/datasets/?limit=1000`, {
      headers: { authorization: `Bearer ${svc.apiKey}` },
    });
    items = (await res.json()).datasets.length;
    times.push(performance.now() - t);
  }
  return { p50ms: median(times), items };
}

export interface ScaleResult {
  driver: string;
  stored: number;
  burst: Burst;
  idleCpuPercent: number;
  listP50ms: number;
  listItems: number;
  scanMeanMs: number;
  scanMaxBucketMs: string;
  startupMs: number;
  reconcileMs: number;
}

/** The upper bound of the highest histogram bucket a scan fell into between two scrapes. */
function scanMaxBucket(text: string, before: string): string {
  const buckets = (t: string) =>
    [...t.matchAll(/^abn_timer_run_duration_seconds_bucket\{job="scan",le="([^"]+)"\} (\d+)$/gm)]
      .map((m) => [m[1], Number(m[2])] as const);
  const earlier = new Map(buckets(before));
  let previous = 0;
  let answer = "—";
  for (const [le, count] of buckets(text)) {
    const inWindow = count - (earlier.get(le) ?? 0);
    if (inWindow > previous) answer = le === "+Inf" ? "> 60 s" : `≤ ${Number(le) * 1000} ms`;
    previous = inWindow;
  }
  return answer;
}

/** One driver: burst, idle window, list, scan, restart. */
export async function scaleRun(
  driver: "local" | "postgres" | "s3",
  count: number,
  dataDir: string,
  extraEnv: Record<string, string>,
  idleSeconds = 60,
): Promise<ScaleResult> {
  const env = { ABN_DATA_DIR: dataDir, ...extraEnv };
  const { apiKey: api_key } = await benchKey(env);
  let svc = await serve(env, api_key);
  let result: ScaleResult;
  try {
    const b = await burst(svc, count, "h");
    // The idle window starts 30 s after the last request (the scrape just before it included).
    await new Promise((r) => setTimeout(r, 30_000));
    const before = await metrics(svc.url);
    await new Promise((r) => setTimeout(r, 30_000));
    const c0 = await cpuSeconds(svc.pid);
    await new Promise((r) => setTimeout(r, idleSeconds * 1000));
    const idleCpuPercent = (await cpuSeconds(svc.pid) - c0) / idleSeconds * 100;
    const m = await metrics(svc.url);
    const list = await listP50(svc);
    // The scans of the quiet minutes (no open grant, nothing pending).
    const scanStat = (text: string, what: string) =>
      metric(text, `abn_timer_run_duration_seconds_${what}`, 'job="scan"');
    const scans = scanStat(m, "count") - scanStat(before, "count");
    const scanSum = scanStat(m, "sum") - scanStat(before, "sum");
    await svc.stop();
    // Restart with everything stored.
    svc = await serve(env, api_key);
    const restarted = performance.now() - svc.startupMs;
    for (;;) {
      const text = await metrics(svc.url);
      if (metric(text, "abn_timer_runs_total", 'job="reconcile",outcome="ok"') >= 1) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const reconcileMs = performance.now() - restarted;
    result = {
      driver,
      stored: b.stored,
      burst: b,
      idleCpuPercent,
      listP50ms: list.p50ms,
      listItems: list.items,
      scanMeanMs: scans > 0 ? scanSum / scans * 1000 : NaN,
      scanMaxBucketMs: scanMaxBucket(m, before),
      startupMs: svc.startupMs,
      reconcileMs,
    };
  } finally {
    await svc.stop();
  }
  return result;
}

/** fdatasyncs per second of 16 writers each creating, writing 60 bytes to and syncing files. */
export async function fsyncRate(dir: string, seconds = 5): Promise<number> {
  const bytes = new TextEncoder().encode(BODY);
  let done = 0;
  const until = performance.now() + seconds * 1000;
  await Promise.all(Array.from({ length: 16 }, async (_, w) => {
    for (let i = 0; performance.now() < until; i++) {
      const path = `${dir}/fsync-${w}-${i}`;
      const file = await Deno.open(path, { write: true, createNew: true });
      await file.write(bytes);
      await file.syncData();
      file.close();
      await Deno.remove(path);
      done++;
    }
  }));
  return done / seconds;
}

/** A burst on disk (no idle window), beside the disk's raw fsync rate. */
async function diskRun(count: number, base: string) {
  const dataDir = await Deno.makeTempDir({ dir: base, prefix: "abn-bench-disk-" });
  try {
    const fsyncs = await fsyncRate(dataDir);
    const env = { ABN_DATA_DIR: dataDir };
    const { apiKey: api_key } = await benchKey(env);
    const svc = await serve(env, api_key);
    try {
      return { fsyncs, burst: await burst(svc, count, "d") };
    } finally {
      await svc.stop();
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
}

export async function benchScale(parts = ["local", "postgres", "s3", "disk"]) {
  const rows: Record<string, string | number>[] = [];
  const tmpfs = (await Deno.stat("/dev/shm").catch(() => null))?.isDirectory
    ? "/dev/shm"
    : undefined;
  const burstRow = (
    name: string,
    b: Burst,
    target = "≥ 2,000/s, p99 < 50 ms; analysed ≤ 10 s after",
  ) => ({
    benchmark: name,
    measured: `${b.rps.toFixed(0)} uploads/s, p50 ${b.p50ms.toFixed(1)} ms, p99 ${
      b.p99ms.toFixed(1)
    } ms, ${b.errors} errors; request thread ${
      b.requestThreadUs.toFixed(0)
    } µs an upload; all ${b.stored} analysed ${b.analysedAfterS.toFixed(1)} s after`,
    target,
  });
  const scaleRows = (r: ScaleResult) => [
    {
      benchmark: `idle CPU, ${r.stored} datasets, ${r.driver}`,
      measured: `${
        r.idleCpuPercent.toFixed(2)
      } % of a core (60 s, from 30 s after the last request)`,
      target: "≤ 1 %",
    },
    {
      benchmark: `GET /datasets/?limit=1000, ${r.driver}`,
      measured: `p50 ${r.listP50ms.toFixed(1)} ms (${r.listItems} rows)`,
      target: "p50 < 50 ms",
    },
    {
      benchmark: `scan with no open grant, ${r.driver}`,
      measured: `mean ${r.scanMeanMs.toFixed(2)} ms, slowest ${r.scanMaxBucketMs}`,
      target: "< 10 ms",
    },
    {
      benchmark: `start-up to /healthz 200, ${r.driver}`,
      measured: `${r.startupMs.toFixed(0)} ms (start-up reconciliation done after ${
        r.reconcileMs.toFixed(0)
      } ms)`,
      target: "< 2 s",
    },
  ];
  if (parts.includes("local")) {
    const dir = await Deno.makeTempDir({ dir: tmpfs, prefix: "abn-bench-scale-" });
    try {
      const r = await scaleRun("local", 10_000, dir, {});
      rows.push(burstRow("tiny uploads, local, tmpfs, 10,000", r.burst), ...scaleRows(r));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  }
  if (parts.includes("postgres")) {
    const cluster = await startCluster();
    const dir = await Deno.makeTempDir({ dir: tmpfs, prefix: "abn-bench-scale-pg-" });
    try {
      const database = await cluster.database();
      const r = await scaleRun("postgres", 10_000, dir, { ABN_DATABASE_URL: database.url });
      rows.push(
        burstRow(
          "tiny uploads, PostgreSQL, local storage on tmpfs, 10,000",
          r.burst,
          "≥ 0.5 × SQLite's uploads/s; analysed ≤ 30 s after",
        ),
        ...scaleRows(r),
      );
    } finally {
      await cluster.destroy();
      await Deno.remove(dir, { recursive: true });
    }
  }
  if (parts.includes("s3")) {
    const s3 = await startS3rver();
    const dir = await Deno.makeTempDir({ dir: tmpfs, prefix: "abn-bench-scale-s3-" });
    try {
      const r = await scaleRun("s3", 1_000, dir, {
        ABN_STORAGE: "s3",
        ABN_S3_ENDPOINT: s3.endpoint,
        ABN_S3_BUCKET: s3.bucket,
        ABN_S3_REGION: s3.region,
        ABN_S3_ACCESS_KEY_ID: s3.accessKeyId,
        ABN_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
      });
      rows.push(burstRow("tiny uploads, S3 (s3rver), 1,000", r.burst), ...scaleRows(r));
    } finally {
      await s3.stop();
      await Deno.remove(dir, { recursive: true });
    }
  }
  if (parts.includes("disk")) {
    const base = Deno.env.get("ABN_BENCH_DISK_DIR") || undefined;
    const d = await diskRun(10_000, base ?? Deno.env.get("TMPDIR") ?? "/tmp");
    rows.push(burstRow(`tiny uploads, local, disk, 10,000`, d.burst), {
      benchmark: "raw fsync rate of that disk (16 writers)",
      measured: `${d.fsyncs.toFixed(0)} create+write+fdatasync per second`,
      target: "—",
    });
  }
  return rows;
}

if (import.meta.main) {
  const parts = Deno.args.length > 0 ? Deno.args : ["local", "postgres", "s3", "disk"];
  printTable("Cost with many stored datasets", await benchScale(parts));
}
