/**
 * The aggregation's parts, timed apart, against warm DuckDB's time: the reading alone (rows split
 * and their cells read into batches), the user tally alone from rows read before it (on one
 * thread, as the aggregation's worker does it, and split by the ids' hash across two), the
 * logging of the metric values and the summary. Two sums of them bound what a pipeline can reach
 * on this machine (docs/performance.md, "Analysis"): today's, which reads the rows after the 201
 * on one thread while a worker tallies them, at best takes the longer of its two threads' work
 * then the summary; one that read every row before the 201 would still have the tally (on both
 * threads) and the summary to do after it.
 *
 * Each tally starts 3 s after the one before, as a service's analysis does after its last one
 * (fresh memory costs this kind of machine microseconds a page at its first touch:
 * docs/performance.md, "Memory"). The rows read before are held in memory: some 72 bytes a row,
 * twice over (whole and split), about 700 MB for the benchmark's file. DuckDB runs
 * `AGGREGATION_QUERY` warm (`WarmDuckdb`) between the rounds.
 *
 *   deno run -A bench/parts_bench.ts [FILE] [--runs=N]   (FILE default /tmp/bench.csv)
 */
import { RowReader } from "../src/analysis/aggregate/_row_reader.ts";
import { CsvRowSplitter } from "../src/analysis/aggregate/_csv_rows.ts";
import { batchBuffers, newBatch, type RowBatch } from "../src/analysis/aggregate/_row_batch.ts";
import { logBatch, UserTally } from "../src/analysis/aggregate/_user_tally.ts";
import { ValueLog } from "../src/analysis/aggregate/_value_log.ts";
import { summarize, summaryOptions } from "../src/analysis/aggregate/_summary.ts";
import { ensureCsv } from "./generate_csv.ts";
import { median } from "./_util.ts";
import { spread } from "./insight_bench.ts";
import { WarmDuckdb } from "./_duckdb.ts";
import type { TallyReply, TallyRequest } from "./_tally_worker.ts";

/** Rows per batch, as the aggregation reads them. */
const BATCH_ROWS = 16384;
/** Reads handed to the reader at once, as the analysis reads the stored file. */
const CHUNK_BYTES = 256 * 1024;
/** The pause before each timed tally (see above). */
const FRESH_MS = 3000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface PartsBenchResult {
  /** Per round, in seconds. */
  readSeconds: number[];
  tallyOneSeconds: number[];
  tallyTwoSeconds: number[];
  logSeconds: number[];
  summarySeconds: number[];
  duckdbSeconds: number[];
  users: number;
  rows: number;
  /** How DuckDB ran, or why it did not. */
  duckdbRunner: string;
}

/** The file's rows read into batches: `sink` takes each full one and answers the next to fill. */
function readRows(
  bytes: Uint8Array,
  sink: (batch: RowBatch, forced: Uint8Array) => RowBatch,
): { reader: RowReader; forced: Uint8Array } {
  let forced: Uint8Array = new Uint8Array(0);
  const reader = new RowReader({}, BATCH_ROWS, (f) => {
    forced = f;
    return (batch) => sink(batch, f);
  }, false);
  const splitter = new CsvRowSplitter(reader);
  for (let at = 0; at < bytes.length; at += CHUNK_BYTES) {
    splitter.push(bytes.subarray(at, Math.min(bytes.length, at + CHUNK_BYTES)));
  }
  splitter.finish();
  reader.end();
  return { reader, forced };
}

/** Appends row `r` of `from` to `to` (a batch with room for it). */
function copyRow(from: RowBatch, r: number, to: RowBatch, metrics: number): void {
  const i = to.size++;
  const words = (from.idLength[r] + 3) >> 2;
  const start = i === 0 ? 0 : to.idStart[i - 1] + ((to.idLength[i - 1] + 3) >> 2);
  to.ids.set(from.ids.subarray(from.idStart[r], from.idStart[r] + words), start);
  to.idStart[i] = start;
  to.idLength[i] = from.idLength[r];
  to.hash[i] = from.hash[r];
  to.variant[i] = from.variant[r];
  to.day[i] = from.day[r];
  for (let k = 0; k < metrics; k++) to.values[i * metrics + k] = from.values[r * metrics + k];
  to.candidate.set(from.candidate);
}

/** The rows of `batches` in two lists of batches, by the top bit of each id's hash. */
function splitByHash(batches: RowBatch[], metrics: number): RowBatch[][] {
  const lists: RowBatch[][] = [[], []];
  const current = [newBatch(BATCH_ROWS, metrics, false), newBatch(BATCH_ROWS, metrics, false)];
  for (const batch of batches) {
    for (let r = 0; r < batch.size; r++) {
      const part = batch.hash[r] >>> 31;
      if (current[part].size === BATCH_ROWS) {
        lists[part].push(current[part]);
        current[part] = newBatch(BATCH_ROWS, metrics, false);
      }
      copyRow(batch, r, current[part], metrics);
    }
  }
  current.forEach((batch, part) => lists[part].push(batch));
  return lists;
}

/** Each list of batches tallied by a worker of its own, at once: the wall time and the users. */
async function tallyInWorkers(
  lists: RowBatch[][],
  forcedConversion: Uint8Array,
  sizeBytes: number,
  users: number,
): Promise<{ seconds: number; users: number }> {
  const url = new URL("./_tally_worker.ts", import.meta.url).href;
  const workers = lists.map(() => new Worker(url, { type: "module" }));
  try {
    await Promise.all(workers.map((w) => new Promise((up) => w.onmessage = up)));
    workers.forEach((worker, i) => {
      const request: TallyRequest = { type: "batches", batches: lists[i] };
      worker.postMessage(request, lists[i].flatMap(batchBuffers));
    });
    await sleep(FRESH_MS);
    const replies = workers.map((worker) =>
      new Promise<TallyReply>((done) => worker.onmessage = (event) => done(event.data))
    );
    const start = performance.now();
    for (const worker of workers) {
      const request: TallyRequest = {
        type: "go",
        forcedConversion,
        reserveBytes: Math.ceil(sizeBytes / lists.length),
        expectedUsers: Math.ceil(users / lists.length),
      };
      worker.postMessage(request);
    }
    const answers = await Promise.all(replies);
    const seconds = (performance.now() - start) / 1000;
    return { seconds, users: answers.reduce((sum, answer) => sum + answer.users, 0) };
  } finally {
    for (const worker of workers) worker.terminate();
  }
}

/** One round: every part timed once (see the module's comment). */
async function round(bytes: Uint8Array, expectedUsers: number) {
  // The reading alone, into one batch used again, as the aggregation's reading thread does.
  let start = performance.now();
  readRows(bytes, (batch) => {
    batch.size = 0;
    return batch;
  });
  const readSeconds = (performance.now() - start) / 1000;

  const batches: RowBatch[] = [];
  const { reader, forced } = readRows(bytes, (batch, f) => {
    batches.push(batch);
    return newBatch(BATCH_ROWS, f.length, false);
  });
  const metrics = forced.length;
  const lists = splitByHash(batches, metrics);

  // The logging and the summary, from a tally on this thread (not timed).
  const tally = new UserTally(forced, false, bytes.length, expectedUsers, true, false);
  for (const batch of batches) tally.add(batch);
  await sleep(FRESH_MS);
  start = performance.now();
  const logs = Array.from(forced, () => new ValueLog());
  for (const batch of batches) logBatch(logs, batch);
  const logSeconds = (performance.now() - start) / 1000;
  const state = tally.state();
  state.logs = logs.map((log) => log?.entries() ?? null);
  start = performance.now();
  const aggregate = summarize(
    reader,
    tally.layout,
    state,
    {},
    summaryOptions({ userSummary: true }),
  );
  const summarySeconds = (performance.now() - start) / 1000;
  const users = state.users;

  const one = await tallyInWorkers([batches], forced, bytes.length, users);
  const two = await tallyInWorkers(lists, forced, bytes.length, users);
  if (one.users !== users || two.users !== users) {
    throw new Error(`The tallies disagree: ${users}, ${one.users} and ${two.users} users`);
  }
  return {
    readSeconds,
    tallyOneSeconds: one.seconds,
    tallyTwoSeconds: two.seconds,
    logSeconds,
    summarySeconds,
    users,
    rows: aggregate.rows,
  };
}

/** `runs` rounds on `path`, DuckDB once after each. */
export async function benchParts(path: string, runs = 3): Promise<PartsBenchResult> {
  const bytes = await Deno.readFile(path);
  const duckdb = await WarmDuckdb.start(path);
  const result: PartsBenchResult = {
    readSeconds: [],
    tallyOneSeconds: [],
    tallyTwoSeconds: [],
    logSeconds: [],
    summarySeconds: [],
    duckdbSeconds: [],
    users: 0,
    rows: 0,
    duckdbRunner: duckdb instanceof WarmDuckdb ? duckdb.how : duckdb.why,
  };
  try {
    await rounds(bytes, runs, result, duckdb instanceof WarmDuckdb ? duckdb : null);
  } finally {
    if (duckdb instanceof WarmDuckdb) await duckdb.stop();
  }
  return result;
}

/** `runs` rounds of `bytes` into `result`, `duckdb` once after each. */
async function rounds(
  bytes: Uint8Array,
  runs: number,
  result: PartsBenchResult,
  duckdb: WarmDuckdb | null,
): Promise<void> {
  for (let i = 0; i < runs; i++) {
    // The users of the round before size the tables, as the last delivery's do in the service.
    const r = await round(bytes, result.users);
    result.readSeconds.push(r.readSeconds);
    result.tallyOneSeconds.push(r.tallyOneSeconds);
    result.tallyTwoSeconds.push(r.tallyTwoSeconds);
    result.logSeconds.push(r.logSeconds);
    result.summarySeconds.push(r.summarySeconds);
    result.users = r.users;
    result.rows = r.rows;
    if (duckdb !== null) result.duckdbSeconds.push((await duckdb.run()).seconds);
  }
}

/** `values` as "median [min–max] s". */
function seconds(values: number[]): string {
  return `${spread(values)} s`;
}

/** The benchmark table's rows of a result. */
export function partsRows(r: PartsBenchResult): Record<string, string | number>[] {
  const duckdb = r.duckdbSeconds.length > 0 ? median(r.duckdbSeconds) : null;
  const baseline = duckdb === null
    ? `DuckDB: ${r.duckdbRunner}`
    : `DuckDB ${seconds(r.duckdbSeconds)}`;
  const ratio = (x: number) => duckdb === null ? "—" : (x / duckdb).toFixed(2);
  // Today's pipeline at best: the reading thread (reading, logging) and the worker (the tally)
  // wholly side by side, then the summary.
  const overlapped = r.tallyOneSeconds.map((t, i) =>
    Math.max(t, r.readSeconds[i] + r.logSeconds[i]) + r.summarySeconds[i]
  );
  const floor = r.tallyTwoSeconds.map((t, i) => t + r.summarySeconds[i]);
  const none = { baseline: "—", ratio: "—", target: "—" };
  return [
    {
      benchmark:
        `the aggregation's parts apart, ${r.rows} rows, ${r.users} users (n=${r.readSeconds.length}): the reading alone`,
      ours: seconds(r.readSeconds),
      ...none,
    },
    {
      benchmark: "… the user tally alone, from rows read before: one thread",
      ours: seconds(r.tallyOneSeconds),
      baseline,
      ratio: ratio(median(r.tallyOneSeconds)),
      target: "—",
    },
    {
      benchmark: "… the same, split by the ids' hash across two threads",
      ours: seconds(r.tallyTwoSeconds),
      baseline,
      ratio: ratio(median(r.tallyTwoSeconds)),
      target: "—",
    },
    { benchmark: "… the metric values logged", ours: seconds(r.logSeconds), ...none },
    { benchmark: "… the summary", ours: seconds(r.summarySeconds), ...none },
    {
      benchmark: "… the longer of reading + logging and the one-thread tally, + summary: today's " +
        "pipeline with its two threads wholly side by side",
      ours: seconds(overlapped),
      baseline,
      ratio: ratio(median(overlapped)),
      target: "—",
    },
    {
      benchmark: "… two-thread tally + summary: the least 201 → ready with every row read before",
      ours: seconds(floor),
      baseline,
      ratio: ratio(median(floor)),
      target: "(direct upload ≤ 1.25)",
    },
  ];
}

if (import.meta.main) {
  const path = Deno.args.find((arg) => !arg.startsWith("--")) ?? "/tmp/bench.csv";
  await ensureCsv(path);
  const runs = Number(Deno.args.find((arg) => arg.startsWith("--runs="))?.slice(7) ?? 3);
  for (const row of partsRows(await benchParts(path, runs))) {
    console.log(`${row.benchmark}: ${row.ours}; ${row.baseline}; ratio ${row.ratio}`);
  }
}
