/**
 * Time to insight: how long after the 201 of a direct upload the analysis is `ready`, against
 * DuckDB doing the same per-user, then per-variant aggregation of the same file, and the memory
 * the service keeps once an analysis is done.
 *
 * The real service runs (`main.ts serve`, local driver, its data on tmpfs when there is one) and
 * receives the file `runs` times under one experiment id with `POST /api/v1/datasets/upload/`; from
 * each 201 the analysis is polled every 50 ms until `ready` (the upload's own time, and the upload's
 * start → `ready`, are printed beside it: work moved before the 201 shortens only the first
 * figure). Every delivery appends one row to the
 * file that changes no figure (a row of the first user, a 0 written with i decimals), so that each
 * delivery is new content compared with the one before, as in a nightly delivery. DuckDB runs
 * `AGGREGATION_QUERY` (per user, then per variant, users in two variants left out, sums and sums
 * of squares) warm: one instance under Node, its first run discarded, one run a turn
 * (`WarmDuckdb`, docs/performance.md, "Analysis"); the cold first run is printed beside it.
 * Each turn also times a two-step delivery: the
 * same bytes written straight into the service's storage (as a PUT to the bucket would), then
 * announced by `POST /api/v1/storage-events/`, timed from the event to `ready` (validated and
 * hashed beside the reading, as for bytes the service did not receive itself), and a direct upload
 * sent at `ABN_BENCH_PACED_MBPS` (default 100 MB/s, a client on a 1 Gbit/s network; 0 leaves it
 * out), timed from its 201 to `ready` and from its first byte. The service's runs and DuckDB's
 * take turns (which goes first alternates),
 * each after `sync`; the ratio is given of the medians and, per turn, of the two runs of a turn.
 * The service's resident set (`VmRSS`, and of it `RssAnon`: what is not pages of the program's
 * file) is read before the first upload and after each delivery once its analysis is ready and
 * the service idled 2 s; the settled figure, 30 s after the last delivery, is read against the
 * same 30 s after a 40 MiB delivery of another experiment made before the first (steady state:
 * the program's pages that a delivery reads in, and the heaps' working size, are in both), and
 * against the start. Each upload comes on a connection of its own, closed after the answer, as
 * from the upload client or curl (the runtime keeps some 17 MB of buffers with a connection that
 * received a large body while it stays open). The phases of each
 * run come from the service's `analysis finished` log line, and its processor time by thread
 * (`ThreadClock`: the main thread, the workers, V8's helpers) from `/proc`, read at each poll from
 * the 201 (the event; a paced upload's first byte) to `ready`: which thread was the longer one,
 * and how many of the processors the run kept busy. Last, the benchmark times a first write
 * to 64 MB just allocated against a second one (`firstTouch`): a machine that charges microseconds
 * a page for it spends a good part of an analysis there (docs/performance.md, "Memory").
 *
 *   deno run -A bench/insight_bench.ts [FILE] [--runs=N]   (FILE default /tmp/bench.csv)
 */
import { ensureCsv } from "./generate_csv.ts";
import { LocalStore } from "../src/storage/local_store.ts";
import { UrlSigner } from "../src/crypto/url_signer.ts";
import {
  benchKey,
  freePort,
  median,
  resetPeak,
  serveArgs,
  SERVICE_MAIN,
  serviceEnv,
  ThreadClock,
  type ThreadSeconds,
} from "./_util.ts";
import { checkAgreement, type Totals, WarmDuckdb } from "./_duckdb.ts";
import { pacedUpload } from "../tests/_paced_upload.ts";

const MAIN = SERVICE_MAIN;
const POLL_MS = 50;
const IDLE_MS = 2000;
/**
 * After the last delivery, how long the service idles before its settled RSS is read: the
 * runtime gives back the pages of its grown JavaScript heap some 10–20 s into an idle spell.
 */
const SETTLE_MS = 30_000;
/**
 * The rate of the paced turn's upload, bytes a second (`ABN_BENCH_PACED_MBPS`, MB a second; 0
 * leaves the turn out): about what a client on a 1 Gbit/s network sends.
 */
const PACED_BYTES_PER_SECOND = Number(Deno.env.get("ABN_BENCH_PACED_MBPS") ?? 100) * 1e6;
/**
 * The warm-up delivery's length, bytes (the file's first lines): long enough to take a large
 * delivery's paths, an analysis on the aggregation's worker (from 1 MiB) among them.
 */
const WARM_BYTES = 40 * 1024 * 1024;
/** Longest wait for one analysis before the benchmark gives up. */
const READY_TIMEOUT_MS = 120_000;

export interface InsightRun {
  /** From the 201 to the first poll answering `ready`. */
  seconds: number;
  /** The upload itself, from the request to its 201 (the client is on the same machine). */
  uploadSeconds: number;
  /** The run's `analysis finished` line: duration_ms and the phases. */
  phases: Record<string, number>;
  /** The service's VmRSS once the analysis was ready and it idled 2 s, MB. */
  idleRssMB: number;
  /** Its RssAnon then, MB. */
  idleAnonMB: number;
  /** The service's processor time from the 201 to `ready`, by thread. */
  threads: ThreadSeconds;
}

/** A direct upload sent at `PACED_BYTES_PER_SECOND`. */
export interface PacedRun {
  /** The body's length. */
  bytes: number;
  /** From the body's first byte to the 201. */
  uploadSeconds: number;
  /** From the 201 to the first poll answering `ready`. */
  seconds: number;
  /** The service's processor time from the body's first byte to `ready`, by thread. */
  threads: ThreadSeconds;
}

export interface InsightBenchResult {
  ours: InsightRun[];
  /**
   * Two-step deliveries: seconds from the storage event that announced an object written
   * straight into storage (not validated on the way in) until its analysis is ready.
   */
  twoStepSeconds: number[];
  /** Their `analysis finished` lines' duration_ms and phases. */
  twoStepPhases: Record<string, number>[];
  /** The service's processor time from the event to `ready`, by thread. */
  twoStepThreads: ThreadSeconds[];
  /** Paced uploads (`PACED_BYTES_PER_SECOND`; none at 0). */
  paced: PacedRun[];
  pacedBytesPerSecond: number;
  /** Warm DuckDB's runs, one a turn. */
  duckdbSeconds: number[];
  /** Its discarded first run, from the instance's creation: the cold figure. */
  duckdbColdSeconds: number;
  /** How DuckDB ran, or why it did not. */
  duckdbRunner: string;
  /** The service's VmRSS before the first upload, MB. */
  rssBeforeMB: number;
  /** Its RssAnon then, MB. */
  anonBeforeMB: number;
  /**
   * Its VmRSS and RssAnon settled after a small delivery of its own (`WARM_BYTES`, analysed on the
   * aggregation's worker like a large one) and before the first of the large ones, MB: a service
   * that has run the code paths of a delivery once (the program's pages read in, the heaps grown
   * to their working size), against which the settled figure is steady state.
   */
  warmRssMB: number;
  warmAnonMB: number;
  /** Its peak (VmHWM) at the end, MB. */
  peakRssMB: number;
  /**
   * Its peak over each delivery's cycle (upload and analysis), per kind of delivery, MB: empty
   * where the peak cannot be reset (`resetPeak`).
   */
  cyclePeaksMB: { direct: number[]; twoStep: number[]; paced: number[] };
  /** Its VmRSS and RssAnon after idling `SETTLE_MS` after the last delivery, MB. */
  settledRssMB: number;
  settledAnonMB: number;
  rows: number;
  users: number;
  /** The machine's first write to memory just allocated, and the same write again (`firstTouch`). */
  touch: { freshMs: number; againMs: number; mb: number };
}

/**
 * Times a write to each 4 KiB page of `mb` MB just allocated, then the same write again (median
 * of three): what the machine charges for memory's first touch (docs/performance.md, "Memory").
 * A virtual machine may charge several microseconds a page.
 */
export function firstTouch(mb = 64): { freshMs: number; againMs: number; mb: number } {
  const fresh: number[] = [];
  const again: number[] = [];
  for (let k = 0; k < 3; k++) {
    const buffer = new ArrayBuffer(mb * 1024 * 1024);
    const words = new Int32Array(buffer);
    let t = performance.now();
    for (let i = 0; i < words.length; i += 1024) words[i] = 1;
    fresh.push(performance.now() - t);
    t = performance.now();
    for (let i = 0; i < words.length; i += 1024) words[i] = 2;
    again.push(performance.now() - t);
  }
  return { freshMs: median(fresh), againMs: median(again), mb };
}

async function rssMB(pid: number, field = "VmRSS"): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) / 1024;
}

async function sync(): Promise<void> {
  try {
    await new Deno.Command("sync").output();
  } catch { /* no sync(1) */ }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The service with an organization and a key; collects its `analysis finished` lines. */
async function startService(dataDir: string) {
  const eventsToken = crypto.randomUUID();
  const env = { ABN_DATA_DIR: dataDir, ABN_STORAGE_EVENTS_TOKEN: eventsToken };
  const { orgId: org_id, apiKey: api_key } = await benchKey(env);
  const port = freePort();
  const process = new Deno.Command(Deno.execPath(), {
    args: serveArgs(MAIN),
    env: { ...env, ...serviceEnv(), ABN_PORT: String(port) },
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const finished: Record<string, unknown>[] = [];
  const { promise: up, resolve: listening } = Promise.withResolvers<void>();
  const drained = (async () => {
    let text = "";
    for await (const chunk of process.stdout.pipeThrough(new TextDecoderStream())) {
      text += chunk;
      const lines = text.split("\n");
      text = lines.pop()!;
      for (const line of lines) {
        if (line.includes('"msg":"listening"')) listening();
        if (line.includes('"msg":"analysis finished"')) finished.push(JSON.parse(line));
        if (line.includes('"level":"error"')) console.error(line);
      }
    }
  })();
  await Promise.race([up, sleep(60_000).then(() => Promise.reject(new Error("not listening")))]);
  return {
    pid: process.pid,
    url: `http://127.0.0.1:${port}`,
    apiKey: api_key as string,
    orgId: org_id as string,
    eventsToken,
    finished,
    async stop() {
      try {
        process.kill("SIGKILL");
      } catch { /* gone */ }
      await process.status;
      await drained.catch(() => {});
    },
  };
}

/** Runs both sides `runs` times on `path`, alternating. */
export async function benchInsight(path: string, runs = 5): Promise<InsightBenchResult> {
  const file = await Deno.readFile(path);
  // The first data row: every delivery appends a copy of it with the revenue 0 written another way.
  const text = new TextDecoder().decode(file.subarray(0, 4096));
  const [user, variant, date] = text.split("\n")[1].split(",");
  const extra = (i: number) =>
    new TextEncoder().encode(`${user},${variant},${date},0,0.${"0".repeat(i + 1)}\n`);
  if (file[file.length - 1] !== 0x0a) throw new Error(`${path} does not end with a line feed`);

  const shm = Deno.env.get("ABN_BENCH_DIR") ||
    ((await Deno.stat("/dev/shm").then((s) => s.isDirectory, () => false)) ? "/dev/shm" : "");
  const work = await Deno.makeTempDir({ prefix: "abn-bench-insight-", dir: shm || undefined });
  const duckdb = await WarmDuckdb.start(path);
  const service = await startService(`${work}/data`);
  const auth = { authorization: `Bearer ${service.apiKey}` };
  const ours: InsightRun[] = [];
  const twoStepSeconds: number[] = [];
  const twoStepPhases: Record<string, number>[] = [];
  const twoStepThreads: ThreadSeconds[] = [];
  // Read at each poll: a worker that ends before `ready` is answered still counts.
  const clock = new ThreadClock(service.pid);
  const paced: PacedRun[] = [];
  const duckdbSeconds: number[] = [];
  let duckdbTotals: Totals | null = null;
  let oursTotals: Totals | null = null;
  let rows = 0;
  const cyclePeaksMB = { direct: [] as number[], twoStep: [] as number[], paced: [] as number[] };
  /** The whole run's peak, read before each cycle's reset. */
  let peakMB = 0;
  const peakSoFar = async () => peakMB = Math.max(peakMB, await rssMB(service.pid, "VmHWM"));
  try {
    await sleep(IDLE_MS);
    const rssBeforeMB = await rssMB(service.pid);
    const anonBeforeMB = await rssMB(service.pid, "RssAnon");
    /**
     * A direct upload of `body` to `experiment` (on a connection of its own): its ETag, and the
     * moment its 201 arrived.
     */
    const upload = async (experiment: string, body: BodyInit) => {
      const res = await fetch(
        `${service.url}/api/v1/datasets/upload/?experiment_id=${experiment}`,
        {
          method: "POST",
          headers: { ...auth, "content-type": "text/csv", connection: "close" },
          body,
        },
      );
      const at = performance.now();
      const answer = await res.json();
      if (res.status !== 201) throw new Error(`upload to ${experiment} answered ${res.status}`);
      return { etag: answer.etag as string, at };
    };
    /** Polls `experiment`'s analysis until `etag`'s is ready (timed out from `since`). */
    const waitReady = async (experiment: string, etag: string, since: number) => {
      for (;;) {
        const poll = await fetch(`${service.url}/api/v1/datasets/${experiment}/analysis/`, {
          headers: auth,
        });
        await clock.sample();
        const analysis: Record<string, unknown> = await poll.json();
        const current = (analysis.dataset as { etag: string }).etag === etag;
        if (current && analysis.status === "ready") return analysis;
        if (current && analysis.status === "failed") {
          await sleep(500); // the service's log line of the failure first
          throw new Error(String(analysis.error));
        }
        if (performance.now() - since > READY_TIMEOUT_MS) throw new Error("not ready in time");
        await sleep(POLL_MS);
      }
    };
    // A small delivery of another experiment first, settled as the last delivery will be: the
    // figure the settled one is read against in steady state.
    {
      const cut = file.lastIndexOf(0x0a, WARM_BYTES) + 1;
      const { etag } = await upload("insight-warm", file.subarray(0, cut));
      await waitReady("insight-warm", etag, performance.now());
      await sleep(SETTLE_MS);
    }
    const warmRssMB = await rssMB(service.pid);
    const warmAnonMB = await rssMB(service.pid, "RssAnon");
    const runOurs = async (i: number) => {
      await sync();
      const body = new Blob([file, extra(i)]);
      const t0 = performance.now();
      const answer = await upload("insight", body);
      const created = answer.at;
      await clock.start();
      const analysis = await waitReady("insight", answer.etag, created);
      const seconds = (performance.now() - created) / 1000;
      const threads = clock.used();
      rows = (analysis.dataset as { rows: number }).rows;
      oursTotals = totalsOf(analysis);
      await sleep(IDLE_MS);
      const line = service.finished.find((l) => l.etag === answer.etag) ?? {};
      const phases = Object.fromEntries(
        Object.entries(line).filter(([key]) => key.endsWith("_ms")),
      ) as Record<string, number>;
      ours.push({
        seconds,
        uploadSeconds: (created - t0) / 1000,
        phases,
        idleRssMB: await rssMB(service.pid),
        idleAnonMB: await rssMB(service.pid, "RssAnon"),
        threads,
      });
      if (Deno.env.get("ABN_BENCH_VERBOSE")) {
        console.error(
          `ours ${i + 1}: ${seconds.toFixed(2)} s (upload ${
            ((created - t0) / 1000).toFixed(2)
          } s), ${JSON.stringify(phases)}, idle RSS ${ours.at(-1)!.idleRssMB.toFixed(0)} MB (anon ${
            ours.at(-1)!.idleAnonMB.toFixed(0)
          })`,
        );
      }
    };
    // A two-step delivery: the bytes written straight into the service's storage (as a PUT to
    // the bucket would), then announced by a storage event; validated and hashed beside the
    // reading, as the service does for bytes it did not receive itself.
    const store = new LocalStore({
      dataDir: `${work}/data`,
      signer: new UrlSigner(new Uint8Array(32)),
      publicUrl: service.url,
    });
    await store.open();
    const runTwoStep = async (i: number) => {
      const key = `org/${service.orgId}/experiments/insight-two-step/latest.csv`;
      const writer = await store.createWriter(key);
      await writer.write(file);
      await writer.write(extra(i));
      const info = await writer.commit();
      await sync();
      await sleep(IDLE_MS);
      await clock.start();
      const t0 = performance.now();
      const event = await fetch(`${service.url}/api/v1/storage-events/`, {
        method: "POST",
        headers: { authorization: `Bearer ${service.eventsToken}` },
        body: JSON.stringify({ Records: [{ s3: { object: { key } } }] }),
      });
      if ((await event.json()).accepted !== 1) throw new Error("the event was not accepted");
      await waitReady("insight-two-step", info.etag, t0);
      twoStepSeconds.push((performance.now() - t0) / 1000);
      twoStepThreads.push(clock.used());
      await sleep(200); // the service's log line
      const line = service.finished.find((l) => l.etag === info.etag) ?? {};
      const phases = Object.fromEntries(
        Object.entries(line).filter(([k]) => k.endsWith("_ms")),
      ) as Record<string, number>;
      twoStepPhases.push(phases);
      if (Deno.env.get("ABN_BENCH_VERBOSE")) {
        console.error(
          `two-step ${i + 1}: ${twoStepSeconds.at(-1)!.toFixed(2)} s, ${JSON.stringify(phases)}`,
        );
      }
    };
    // A direct upload sent at a network's pace.
    const runPaced = async (i: number) => {
      if (PACED_BYTES_PER_SECOND <= 0) return;
      const body = new Uint8Array(await new Blob([file, extra(i)]).arrayBuffer());
      await sync();
      await clock.start();
      const answer = await pacedUpload(
        service.url,
        service.apiKey,
        "insight-paced",
        body,
        PACED_BYTES_PER_SECOND,
      );
      const created = performance.now();
      if (answer.status !== 201) throw new Error(`the paced upload answered ${answer.status}`);
      await waitReady("insight-paced", answer.json.etag as string, created);
      const seconds = (performance.now() - created) / 1000;
      const threads = clock.used();
      await sleep(IDLE_MS);
      const line = service.finished.find((l) => l.etag === answer.json.etag) ?? {};
      paced.push({ bytes: body.length, uploadSeconds: answer.seconds, seconds, threads });
      if (Deno.env.get("ABN_BENCH_VERBOSE")) {
        console.error(
          `paced ${i + 1}: upload ${answer.seconds.toFixed(2)} s, ready ${seconds.toFixed(2)} s ` +
            `after the 201, ${JSON.stringify(line)}`,
        );
      }
    };
    const runDuck = async () => {
      if (!(duckdb instanceof WarmDuckdb)) return;
      await sync();
      const result = await duckdb.run();
      duckdbSeconds.push(result.seconds);
      duckdbTotals = result.totals;
      if (Deno.env.get("ABN_BENCH_VERBOSE")) {
        console.error(`DuckDB: ${result.seconds.toFixed(2)} s`);
      }
    };
    // Each delivery's cycle, with the service's peak RSS over it, when the peak can be reset.
    const { direct, twoStep, paced: pacedPeaks } = cyclePeaksMB;
    const cycle = async (peaks: number[], run: () => Promise<void>) => {
      if (peaks === pacedPeaks && PACED_BYTES_PER_SECOND <= 0) return;
      await peakSoFar();
      const reset = await resetPeak(service.pid);
      await run();
      if (reset) peaks.push(await rssMB(service.pid, "VmHWM"));
    };
    for (let i = 0; i < runs; i++) {
      if (i % 2 === 0) {
        await cycle(direct, () => runOurs(i));
        await runDuck();
        await cycle(twoStep, () => runTwoStep(i));
        await cycle(pacedPeaks, () => runPaced(i));
      } else {
        await cycle(pacedPeaks, () => runPaced(i));
        await cycle(twoStep, () => runTwoStep(i));
        await runDuck();
        await cycle(direct, () => runOurs(i));
      }
    }
    await peakSoFar();
    if (duckdbTotals !== null) checkAgreement(oursTotals!, duckdbTotals);
    const totals = oursTotals! as Totals;
    await sleep(SETTLE_MS);
    return {
      ours,
      twoStepSeconds,
      twoStepPhases,
      twoStepThreads,
      paced,
      pacedBytesPerSecond: PACED_BYTES_PER_SECOND,
      duckdbSeconds,
      duckdbColdSeconds: duckdb instanceof WarmDuckdb ? duckdb.coldSeconds : NaN,
      duckdbRunner: duckdb instanceof WarmDuckdb ? duckdb.how : duckdb.why,
      rssBeforeMB,
      anonBeforeMB,
      warmRssMB,
      warmAnonMB,
      peakRssMB: Math.max(peakMB, await rssMB(service.pid, "VmHWM")),
      cyclePeaksMB,
      settledRssMB: await rssMB(service.pid),
      settledAnonMB: await rssMB(service.pid, "RssAnon"),
      rows,
      users: Object.values(totals).reduce((sum, t) => sum + t.users, 0),
      touch: firstTouch(),
    };
  } finally {
    await service.stop();
    if (duckdb instanceof WarmDuckdb) await duckdb.stop();
    await Deno.remove(work, { recursive: true });
  }
}

/** Users, converted users and revenue per variant, from a ready analysis. */
function totalsOf(analysis: Record<string, unknown>): Totals {
  type Variant = { name: string; users: number; mean: number | null; conversions?: number };
  const metrics = analysis.metrics as { name: string; variants: Variant[] }[];
  const metric = (name: string) => metrics.find((m) => m.name === name)!.variants;
  return Object.fromEntries(
    (analysis.variants as { name: string; users: number }[]).map(({ name, users }) => {
      const converted = metric("converted").find((v) => v.name === name)!;
      const revenue = metric("revenue").find((v) => v.name === name)!;
      return [name, {
        users,
        converted: converted.conversions ?? NaN,
        revenue: (revenue.mean ?? NaN) * revenue.users,
      }];
    }),
  );
}

/** "median [min–max]" of `values` with `digits` decimals. */
export function spread(values: number[], digits = 2): string {
  if (values.length === 0) return "—";
  const f = (x: number) => x.toFixed(digits);
  return `${f(median(values))} [${f(Math.min(...values))}–${f(Math.max(...values))}]`;
}

/** The phases of the runs' `analysis finished` lines: medians, ranges and shares of the run. */
function phasesRow(runs: Record<string, number>[]): Record<string, string> {
  const names = ["read", "load", "validate", "aggregate", "report", "save"];
  const ms = (name: string) => spread(runs.map((phases) => phases[name] ?? NaN), 0);
  // Each phase's share of the run (medians over the runs of each share).
  const share = (name: string) =>
    `${(100 * median(runs.map((phases) => phases[name] / phases.duration_ms))).toFixed(0)} %`;
  return {
    benchmark: "… its phases (analysis finished line), ms",
    ours: `duration ${ms("duration_ms")}, ${
      names.map((name) => `${name} ${ms(`${name}_ms`)}`).join(", ")
    } (shares: ${names.map((name) => `${name} ${share(`${name}_ms`)}`).join(", ")})`,
    baseline: "—",
    ratio: "—",
    target: "—",
  };
}

/**
 * The service's processor time over `seconds` of each run, by thread (see `ThreadClock`):
 * which thread was the longer one, and how many of the processors the run kept busy; and its
 * minor page faults, each mostly the first touch of a fresh page (the machine's row says what
 * one costs here).
 */
function threadsRow(
  span: string,
  runs: ThreadSeconds[],
  seconds: number[],
): Record<string, string> {
  const kinds = [
    ["main thread", "main"],
    ["workers", "workers"],
    ["V8's helpers", "v8"],
    ["other", "other"],
  ] as const;
  const total = runs.map((run) => run.main + run.workers + run.v8 + run.other);
  return {
    benchmark: `… the service's processor time ${span}, by thread, s`,
    ours: `${
      kinds.map(([label, key]) => `${label} ${spread(runs.map((run) => run[key]))}`).join(", ")
    }; in all ${spread(total)}, i.e. ${
      spread(total.map((t, i) => t / seconds[i]))
    } processors busy; minor page faults ${
      spread(runs.map((run) => run.faults / 1000), 0)
    } thousand`,
    baseline: "—",
    ratio: "—",
    target: "—",
  };
}

/**
 * The paced turn: 201 → ready against DuckDB, and upload start → ready against the body's own
 * time at that pace plus half of DuckDB's (the issue's bound for a direct upload).
 */
function pacedRows(r: InsightBenchResult): Record<string, string>[] {
  if (r.paced.length === 0) return [];
  const mbps = (r.pacedBytesPerSecond / 1e6).toFixed(0);
  const seconds = r.paced.map((run) => run.seconds);
  const whole = r.paced.map((run) => run.uploadSeconds + run.seconds);
  const duck = r.duckdbSeconds;
  const perTurn = (values: number[], bound: (d: number) => number) =>
    duck.length === values.length
      ? ` (per turn ${spread(duck.map((d, i) => values[i] / bound(d)))})`
      : "";
  // The body alone at that pace: its bytes over the rate (a raw sink keeps up with it).
  const bodySeconds = median(r.paced.map((run) => run.bytes)) / r.pacedBytesPerSecond;
  return [
    {
      benchmark: `upload at ${mbps} MB/s: 201 → ready (n=${r.paced.length})`,
      ours: `${spread(seconds)} s (upload ${spread(r.paced.map((run) => run.uploadSeconds))} s)`,
      baseline: duck.length > 0 ? `DuckDB ${spread(duck)} s` : "—",
      ratio: duck.length > 0
        ? `${(median(seconds) / median(duck)).toFixed(2)}${perTurn(seconds, (d) => d)}`
        : "—",
      target: "≤ 1.25",
    },
    {
      benchmark: `upload at ${mbps} MB/s: upload start → ready ÷ (the body's time + 0.5 × DuckDB)`,
      ours: `${spread(whole)} s`,
      baseline: duck.length > 0
        ? `${bodySeconds.toFixed(2)} s + 0.5 × ${median(duck).toFixed(2)} s`
        : "—",
      ratio: duck.length > 0
        ? (median(whole) / (bodySeconds + 0.5 * median(duck))).toFixed(2)
        : "—",
      target: "≤ 1.0",
    },
    threadsRow("from the upload's start to ready", r.paced.map((run) => run.threads), whole),
  ];
}

/** The service's peak RSS over each kind of delivery's cycle, where it could be reset. */
function peakRows(r: InsightBenchResult): Record<string, string>[] {
  const kinds = [
    ["direct upload", r.cyclePeaksMB.direct],
    ["two-step delivery", r.cyclePeaksMB.twoStep],
    [`upload at ${(r.pacedBytesPerSecond / 1e6).toFixed(0)} MB/s`, r.cyclePeaksMB.paced],
  ] as const;
  return kinds.filter(([, peaks]) => peaks.length > 0).map(([kind, peaks]) => ({
    benchmark: `service peak RSS over a cycle: ${kind} and its analysis (n=${peaks.length})`,
    ours: `${spread(peaks, 0)} MB`,
    baseline: "—",
    ratio: "—",
    target: "< 256 MB",
  }));
}

/** The table rows of `deno task bench` for this section. */
export function insightRows(r: InsightBenchResult): Record<string, string>[] {
  const oursSeconds = r.ours.map((run) => run.seconds);
  // Also per turn (each delivery against the DuckDB run of the same turn), steadier when the
  // machine's load drifts.
  const turns = r.duckdbSeconds.map((duck, i) => oursSeconds[i] / duck);
  const ratio = r.duckdbSeconds.length > 0
    ? `${(median(oursSeconds) / median(r.duckdbSeconds)).toFixed(2)} (per turn ${spread(turns)})`
    : "—";
  const twoStep = r.duckdbSeconds.length > 0 && r.twoStepSeconds.length > 0
    ? `${(median(r.twoStepSeconds) / median(r.duckdbSeconds)).toFixed(2)} (per turn ${
      spread(r.duckdbSeconds.map((duck, i) => r.twoStepSeconds[i] / duck))
    })`
    : "—";
  return [
    {
      benchmark:
        `time to insight: 201 → ready, ${r.rows} rows, ${r.users} users (n=${r.ours.length})`,
      // The upload's own time beside it: work moved before the 201 shortens the 201 → ready
      // alone, not the wait from the upload's start.
      ours: `${spread(oursSeconds)} s (upload ${
        spread(r.ours.map((run) => run.uploadSeconds))
      } s; upload start → ready ${spread(r.ours.map((run) => run.uploadSeconds + run.seconds))} s)`,
      baseline: r.duckdbSeconds.length > 0
        ? `DuckDB ${spread(r.duckdbSeconds)} s (${r.duckdbRunner}; cold first run ${
          r.duckdbColdSeconds.toFixed(2)
        } s)`
        : r.duckdbRunner,
      ratio,
      target: "≤ 1.25",
    },
    phasesRow(r.ours.map((run) => run.phases)),
    threadsRow("from the 201 to ready", r.ours.map((run) => run.threads), oursSeconds),
    {
      benchmark: `two-step delivery: storage event → ready (n=${r.twoStepSeconds.length})`,
      ours: `${spread(r.twoStepSeconds)} s`,
      baseline: r.duckdbSeconds.length > 0 ? `DuckDB ${spread(r.duckdbSeconds)} s` : "—",
      ratio: twoStep,
      target: "≤ 1.0",
    },
    phasesRow(r.twoStepPhases),
    threadsRow("from the event to ready", r.twoStepThreads, r.twoStepSeconds),
    ...pacedRows(r),
    {
      benchmark: "service RSS: before, after the 1st, after the last delivery (idle 2 s)",
      ours: `${r.rssBeforeMB.toFixed(0)} → ${r.ours[0].idleRssMB.toFixed(0)} → ${
        r.ours.at(-1)!.idleRssMB.toFixed(0)
      } MB (each: ${r.ours.map((run) => run.idleRssMB.toFixed(0)).join(", ")}; peak ${
        r.peakRssMB.toFixed(0)
      }); not file pages: ${r.anonBeforeMB.toFixed(0)} → ${r.ours[0].idleAnonMB.toFixed(0)} → ${
        r.ours.at(-1)!.idleAnonMB.toFixed(0)
      } MB`,
      baseline: "—",
      ratio: "—",
      target: "—",
    },
    ...peakRows(r),
    {
      benchmark: `service RSS settled: ${
        SETTLE_MS / 1000
      } s after the last delivery, against the same after a ${
        (WARM_BYTES / 1024 / 1024).toFixed(0)
      } MB delivery before the first (and against the start)`,
      ours: `${r.warmRssMB.toFixed(0)} → ${r.settledRssMB.toFixed(0)} MB (+${
        (r.settledRssMB - r.warmRssMB).toFixed(0)
      }); not file pages: ${r.warmAnonMB.toFixed(0)} → ${r.settledAnonMB.toFixed(0)} MB (+${
        (r.settledAnonMB - r.warmAnonMB).toFixed(0)
      }); from the start: ${r.rssBeforeMB.toFixed(0)} → ${r.settledRssMB.toFixed(0)} MB (+${
        (r.settledRssMB - r.rssBeforeMB).toFixed(0)
      }), not file pages +${(r.settledAnonMB - r.anonBeforeMB).toFixed(0)}`,
      baseline: "—",
      ratio: "—",
      target: "within 48 MB of before",
    },
    {
      benchmark: `the machine: a first write to ${r.touch.mb} MB just allocated, then again`,
      ours: `${r.touch.freshMs.toFixed(0)} ms (${
        (r.touch.freshMs * 1000 / (r.touch.mb * 256)).toFixed(1)
      } µs a page), again ${r.touch.againMs.toFixed(1)} ms`,
      baseline: "—",
      ratio: "—",
      target: "—",
    },
  ];
}

if (import.meta.main) {
  const runs = Number(Deno.args.find((arg) => arg.startsWith("--runs="))?.slice(7) ?? 5);
  const path = Deno.args.find((arg) => !arg.startsWith("--")) ?? "/tmp/bench.csv";
  await ensureCsv(path);
  const result = await benchInsight(path, runs);
  const { printTable } = await import("./_util.ts");
  printTable("Time to insight (ratio: ours ÷ warm DuckDB, medians)", insightRows(result));
  console.log(JSON.stringify(result));
}
