/**
 * Direct upload throughput and memory: (a) a baseline server that only streams the body to a
 * file, (b) our direct upload to the local driver; same ~200 MB file, same curl client, medians.
 * Then the service's peak RSS during one 200 MB upload and during 8 concurrent 25 MB uploads.
 *
 *   deno run -A bench/upload_bench.ts [FILE]
 */
import { writeCsv } from "./generate_csv.ts";
import {
  curl,
  freePort,
  median,
  printTable,
  SERVICE_MAIN,
  spawnService,
  startChild,
} from "./_util.ts";

const MAIN = SERVICE_MAIN;

/** The steps a stored upload's request log line times (`src/upload/upload.ts`). */
export const UPLOAD_STEPS = ["receive_ms", "commit_ms", "record_ms"] as const;

async function startService(dataDir: string, onLine?: (line: string) => void) {
  const env = { ABN_DATA_DIR: dataDir };
  const run = async (args: string[]) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", MAIN, ...args],
      env,
      stdout: "piped",
    }).output();
    return JSON.parse(new TextDecoder().decode(out.stdout));
  };
  const { org_id } = await run(["admin", "org", "create", "bench", "--json"]);
  const { api_key } = await run(["admin", "key", "create", org_id, "--json"]);
  const child = await spawnService(env, '"msg":"listening"', onLine);
  return { child, apiKey: api_key as string };
}

/** Samples the process's resident set every 20 ms while `work` runs; answers the peak in MB. */
async function sampleRss<T>(pid: number, work: Promise<T>): Promise<{ value: T; peakMB: number }> {
  let peak = 0;
  let done = false;
  const sampler = (async () => {
    while (!done) {
      try {
        const status = await Deno.readTextFile(`/proc/${pid}/status`);
        const kb = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
        peak = Math.max(peak, kb / 1024);
      } catch { /* not on Linux */ }
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const value = await work;
  done = true;
  await sampler;
  return { value, peakMB: peak };
}

/** Waits until the dataset's analysis is no longer pending (so runs do not overlap with it). */
async function analysisSettled(base: string, apiKey: string, id: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const res = await fetch(`${base}/api/v1/datasets/${id}/analysis/`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    const body = await res.json();
    if (body.status !== "pending") return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function timeUpload(url: string, file: string, headers: string[]): Promise<number> {
  const out = await curl([
    "-sS",
    "-o",
    "/dev/null",
    "-w",
    "%{http_code} %{time_total}",
    "-X",
    "POST",
    "--data-binary",
    `@${file}`,
    "-H",
    "Content-Type: text/csv",
    ...headers.flatMap((h) => ["-H", h]),
    url,
  ]);
  const [code, seconds] = out.trim().split(" ");
  if (code !== "201") throw new Error(`upload answered ${code}`);
  return Number(seconds);
}

/**
 * Lets the disk finish what the previous run left (dirty pages, the replaced file's blocks), so
 * each timed upload starts from the same state.
 */
async function settleDisk(): Promise<void> {
  try {
    await new Deno.Command("sync").output();
  } catch { /* no sync(1) */ }
  await new Promise((r) => setTimeout(r, 1000));
}

export async function benchUpload(path?: string, runs = 5) {
  // ABN_BENCH_DIR puts both servers' data elsewhere (e.g. tmpfs to time the CPU path alone).
  const work = await Deno.makeTempDir({
    prefix: "abn-bench-upload-",
    dir: Deno.env.get("ABN_BENCH_DIR") || undefined,
  });
  const file = path ?? `${work}/bench.csv`;
  if (!path) await writeCsv(file, { rows: 4_700_000 });
  const size = (await Deno.stat(file)).size;
  const mb = size / 1e6;

  const rawPort = freePort();
  await Deno.mkdir(`${work}/raw`);
  const raw = await startChild(
    [
      "run",
      "-A",
      new URL("./_raw_upload_server.ts", import.meta.url).pathname,
      String(rawPort),
      `${work}/raw`,
    ],
    {},
    "ready",
    rawPort,
  );
  /** The stored uploads' request log lines, parsed. */
  const stored: Record<string, number>[] = [];
  const svc = await startService(`${work}/svc`, (line) => {
    if (line.includes('"receive_ms"')) stored.push(JSON.parse(line));
  });
  const rawTimes: number[] = [];
  const ourTimes: number[] = [];
  let rssSingle = 0;
  try {
    for (let i = 0; i < runs; i++) {
      await settleDisk();
      rawTimes.push(await timeUpload(`${raw.url}/`, file, []));
      await settleDisk();
      const run = await sampleRss(
        svc.child.pid,
        timeUpload(
          `${svc.child.url}/api/v1/datasets/upload/?experiment_id=bench`,
          file,
          [`Authorization: Bearer ${svc.apiKey}`],
        ),
      );
      ourTimes.push(run.value);
      // Peak of the first run: later runs start with the previous analysis's memory not yet
      // returned to the system.
      if (i === 0) rssSingle = run.peakMB;
      // The analysis each delivery starts runs after the 201: let it finish before the next run.
      await analysisSettled(svc.child.url, svc.apiKey, "bench");
    }
  } finally {
    await raw.stop();
  }
  await svc.child.stop();

  // 8 concurrent 25 MB uploads on a fresh service.
  const small = `${work}/small.csv`;
  await writeCsv(small, { rows: 600_000, seed: 2 });
  const svc2 = await startService(`${work}/svc2`);
  const t0 = performance.now();
  const concurrent = await sampleRss(
    svc2.child.pid,
    Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        timeUpload(
          `${svc2.child.url}/api/v1/datasets/upload/?experiment_id=c${i}`,
          small,
          [`Authorization: Bearer ${svc2.apiKey}`],
        )),
    ),
  );
  const concurrentSeconds = (performance.now() - t0) / 1000;
  const rssConcurrent = concurrent.peakMB;
  await svc2.child.stop();
  await Deno.remove(work, { recursive: true });

  if (Deno.env.get("ABN_BENCH_VERBOSE")) console.error({ rawTimes, ourTimes });
  const rawMBs = mb / median(rawTimes);
  const ourMBs = mb / median(ourTimes);
  return {
    fileMB: mb,
    rawMBs,
    ourMBs,
    ratio: ourMBs / rawMBs,
    rssSingleMB: rssSingle,
    rssConcurrentMB: rssConcurrent,
    concurrentSeconds,
    /** Per step of the timed uploads' log lines: the median, in ms (shares of `duration_ms`). */
    steps: Object.fromEntries(
      [...UPLOAD_STEPS, "duration_ms"].map((step) => [
        step,
        median(stored.map((line) => line[step])),
      ]),
    ),
  };
}

/** The medians of an upload's steps, each with its share of the request's whole time. */
export function uploadSteps(steps: Record<string, number>): string {
  const whole = steps.duration_ms;
  return `duration ${whole.toFixed(0)}, ` +
    UPLOAD_STEPS.map((step) =>
      `${step.replace("_ms", "")} ${steps[step].toFixed(0)} (${
        (100 * steps[step] / whole).toFixed(0)
      } %)`
    ).join(", ");
}

if (import.meta.main) {
  const r = await benchUpload(Deno.args[0]);
  printTable("Direct upload (local driver) vs raw body-to-file", [
    { what: "file", value: `${r.fileMB.toFixed(1)} MB` },
    { what: "baseline: body → file + fsync", value: `${r.rawMBs.toFixed(0)} MB/s` },
    { what: "ours: validate + store", value: `${r.ourMBs.toFixed(0)} MB/s` },
    { what: "ratio (target ≥ 0.7)", value: r.ratio.toFixed(2) },
    { what: "ours, its steps (request log line), ms", value: uploadSteps(r.steps) },
    { what: "peak RSS, 200 MB upload (target < 150)", value: `${r.rssSingleMB?.toFixed(0)} MB` },
    {
      what: "peak RSS, 8 × 25 MB concurrent (target < 300)",
      value: `${r.rssConcurrentMB?.toFixed(0)} MB`,
    },
  ]);
}
