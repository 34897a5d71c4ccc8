/**
 * `aggregateCsv` on two threads. This one reads the chunks, splits rows and reads their cells into
 * batches (`RowReader`); a worker adds the batches to its `UserTally`, the part that waits on
 * memory. Batches travel as transferred buffers and come back for reuse; at most `MAX_IN_FLIGHT`
 * are at the worker, which holds back reading when it lags. At the end the worker sends its
 * tally's state and this thread summarizes it.
 *
 * The worker keeps every user: the reading, with a two-step delivery's checks and hash beside it,
 * is the longer half of the work on two processors; with an eighth of the users kept on this thread
 * the aggregation alone took some 10 % longer. On a machine where fresh memory is slow to touch the
 * worker is the longer half, and this thread waits for it: it logs the metric values of each batch
 * that comes back (each row's record written by the worker, see `logBatch`), which the worker's
 * tally leaves to it. A second worker, each keeping half of the users, was slower: three busy
 * threads on two processors starve this one (docs/performance.md, "Analysis").
 *
 * Until the worker reports that it is up, the batches wait here; if it cannot start (e.g. a
 * compiled binary built without the worker module), is not up within `START_TIMEOUT_MS`, or the
 * input ends first, they are added here. The answer is the same either way, and the same as
 * `CsvAggregator`'s. Each run starts its worker and ends it.
 */
import type { Aggregate, AggregateOptions } from "./aggregate_types.ts";
import { CsvRowSplitter } from "./_csv_rows.ts";
import { batchBuffers, newBatch, type RowBatch } from "./_row_batch.ts";
import { type BatchSink, type MetricKind, RowReader } from "./_row_reader.ts";
import { summarize, type SummaryOptions, summaryOptions } from "./_summary.ts";
import {
  DaysOutOfRange,
  logBatch,
  type RecordLayout,
  recordLayout,
  stateBuffers,
  type TallyState,
  UserTally,
} from "./_user_tally.ts";
import { giveBack } from "./_memory.ts";
import { ValueLog } from "./_value_log.ts";
import type { WorkerReply, WorkerRequest } from "./_user_worker.ts";

/** Rows per batch (sent to the worker at once). */
const BATCH_ROWS = 16384;
/** Batches at the worker before reading waits for one to come back. */
const MAX_IN_FLIGHT = 4;
/** Batches kept while the worker starts before reading waits for it. */
const MAX_WAITING = 8;
/** A worker not up after this long is given up for reading on this thread. */
const START_TIMEOUT_MS = 5000;

/** Fewer bytes than any row of a dataset takes (an id, a variant, a date, a metric, separators). */
const MIN_ROW_BYTES = 16;

/**
 * The users the input is expected to hold (`options.expectedUsers`), at most as many as it can
 * hold rows when its size is known: a small delivery after a large one sizes no large tables.
 */
function expectedUsers(options: AggregateOptions): number {
  const users = options.expectedUsers ?? 0;
  const size = options.sizeBytes;
  return size === undefined ? users : Math.min(users, Math.floor(size / MIN_ROW_BYTES));
}

const WORKER_URL = new URL("./_user_worker.ts", import.meta.url);

/**
 * Aggregates `chunks` as `aggregateCsv` does; without a worker when `options.worker` is false.
 * For tests: `workerUrl` replaces the worker module, and `onMode` hears when the run turns
 * "threaded" (the worker is up) or "local".
 */
export async function aggregateThreaded(
  chunks: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>,
  options: AggregateOptions = {},
  workerUrl: URL = WORKER_URL,
  onMode: (mode: "threaded" | "local") => void = () => {},
): Promise<Aggregate> {
  const run = new ThreadedRun(
    options,
    summaryOptions(options),
    options.worker === false ? null : workerUrl,
    onMode,
  );
  try {
    for await (const chunk of chunks) {
      options.onChunk?.(chunk);
      run.push(chunk);
      await run.settle();
    }
    return await run.finish();
  } finally {
    run.close();
  }
}

class ThreadedRun {
  readonly #kinds: Readonly<Record<string, MetricKind>>;
  readonly #options: SummaryOptions;
  readonly #onHeader: AggregateOptions["onHeader"];
  readonly #reader: RowReader;
  readonly #splitter: CsvRowSplitter;
  readonly #onMode: (mode: "threaded" | "local") => void;
  readonly #dimensions: boolean;
  /** 16-bit day fields (see `RecordLayout`): unless `options.wideDays`. */
  readonly #narrowDays: boolean;
  /** The expected size of the user records (see `UserTable`), 0 when unknown. */
  readonly #reserve: number;
  /** The expected number of users (see `UserTable`), 0 when unknown. */
  readonly #expected: number;
  #worker: Worker | null = null;
  #mode: "starting" | "threaded" | "local" = "starting";
  #startTimer: ReturnType<typeof setTimeout> | undefined;
  #forcedConversion: Uint8Array | null = null;
  /** The records' layout, once the header is read (the worker's tally has the same). */
  #layout: RecordLayout | null = null;
  /** The tally on this thread, when there is no worker. */
  #tally: UserTally | null = null;
  /** The batches read while the worker starts. */
  readonly #waiting: RowBatch[] = [];
  /** Batches back from the worker, to fill again. */
  readonly #spare: RowBatch[] = [];
  #inFlight = 0;
  /**
   * The value logs of the batches the worker added, logged here as they come back (the worker's
   * tally keeps none: this thread waits for the worker otherwise); null until the worker starts.
   */
  #logs: (ValueLog | null)[] | null = null;
  #workerState: TallyState | null = null;
  #failure: Error | null = null;
  #wake: (() => void) | null = null;

  constructor(
    options: AggregateOptions,
    summary: SummaryOptions,
    workerUrl: URL | null,
    onMode: (mode: "threaded" | "local") => void,
  ) {
    this.#kinds = options.metricKinds ?? {};
    this.#options = summary;
    this.#onHeader = options.onHeader;
    this.#onMode = onMode;
    this.#dimensions = options.dimensions ?? true;
    this.#narrowDays = !(options.wideDays ?? false);
    // The user records take at most about the input's size (ids and a few numbers per user,
    // against rows of them): reserved at once, written only as needed.
    this.#reserve = options.sizeBytes ?? 0;
    this.#expected = expectedUsers(options);
    this.#reader = new RowReader(this.#kinds, BATCH_ROWS, (forced, header) => {
      this.#onHeader?.(header);
      return this.#open(forced);
    }, this.#dimensions);
    this.#splitter = new CsvRowSplitter(this.#reader);
    if (workerUrl === null) {
      this.#goLocal();
      return;
    }
    try {
      const worker = new Worker(workerUrl.href, { type: "module" });
      worker.onmessage = (event: MessageEvent<WorkerReply>) => this.#receive(event.data);
      worker.onerror = (event) => {
        event.preventDefault();
        this.#fail(new Error(`The aggregation worker failed: ${event.message}`));
      };
      worker.onmessageerror = () =>
        this.#fail(new Error("The aggregation worker sent a bad message"));
      this.#worker = worker;
      this.#startTimer = setTimeout(() => {
        if (this.#mode === "starting") this.#goLocal();
        this.#wakeUp();
      }, START_TIMEOUT_MS);
    } catch {
      this.#goLocal();
    }
  }

  push(chunk: Uint8Array): void {
    this.#splitter.push(chunk);
  }

  /** Waits while the worker has too much to do (or has not started and too much waits). */
  async settle(): Promise<void> {
    for (;;) {
      if (this.#failure) throw this.#failure;
      const busy = this.#mode === "threaded"
        ? this.#inFlight > MAX_IN_FLIGHT
        : this.#mode === "starting" && this.#waiting.length > MAX_WAITING;
      if (!busy) return;
      await this.#nextEvent();
    }
  }

  async finish(): Promise<Aggregate> {
    this.#splitter.finish();
    this.#reader.end();
    if (this.#mode === "starting") this.#goLocal();
    if (this.#mode === "threaded") {
      this.#worker!.postMessage({ type: "finish" } satisfies WorkerRequest);
      while (this.#workerState === null) {
        if (this.#failure) throw this.#failure;
        await this.#nextEvent();
      }
    }
    const state = this.#workerState ?? this.#tally!.state();
    if (this.#workerState !== null) {
      state.logs = this.#logs!.map((log) => log?.entries() ?? null);
    }
    // Every batch is back (the worker answers its state after the last one), and the worker is
    // done: they go before the summary, which is where a large run's memory peaks; the records
    // and the value logs go once it is made (see `giveBack`).
    this.#endWorker();
    this.#dropBatches();
    const aggregate = summarize(this.#reader, this.#layout!, state, this.#kinds, this.#options);
    giveBack(...stateBuffers(state));
    return aggregate;
  }

  /** Ends the worker and frees the batches: the run is over, whichever way it ended. */
  close(): void {
    this.#endWorker();
    this.#dropBatches();
  }

  #dropBatches(): void {
    this.#reader.release();
    for (const batch of this.#spare.splice(0)) giveBack(...batchBuffers(batch));
    for (const batch of this.#waiting.splice(0)) giveBack(...batchBuffers(batch));
  }

  #endWorker(): void {
    clearTimeout(this.#startTimer);
    this.#worker?.terminate();
    this.#worker = null;
  }

  /** The header is read: where the batches go from now on. */
  #open(forcedConversion: Uint8Array): BatchSink {
    this.#forcedConversion = forcedConversion;
    this.#layout = recordLayout(forcedConversion, this.#dimensions, this.#narrowDays);
    if (this.#mode === "local") this.#tally = this.#newTally(forcedConversion);
    if (this.#mode === "threaded") this.#start(forcedConversion);
    return (batch: RowBatch) => {
      if (this.#mode === "local") {
        this.#tally!.add(batch);
        return batch;
      }
      if (this.#mode === "starting") this.#waiting.push(batch);
      else this.#send(batch);
      return this.#spare.pop() ?? newBatch(BATCH_ROWS, forcedConversion.length, this.#dimensions);
    };
  }

  /** A tally on this thread, sized as expected. */
  #newTally(forcedConversion: Uint8Array): UserTally {
    return new UserTally(
      forcedConversion,
      this.#dimensions,
      this.#reserve,
      this.#expected,
      this.#narrowDays,
    );
  }

  #start(forcedConversion: Uint8Array): void {
    this.#logs = Array.from(forcedConversion, () => new ValueLog());
    this.#worker!.postMessage(
      {
        type: "start",
        forcedConversion,
        dimensions: this.#dimensions,
        reserveBytes: this.#reserve,
        expectedUsers: this.#expected,
        narrowDays: this.#narrowDays,
        logValues: false,
      } satisfies WorkerRequest,
    );
  }

  #send(batch: RowBatch): void {
    this.#inFlight++;
    this.#worker!.postMessage(
      { type: "batch", batch } satisfies WorkerRequest,
      batchBuffers(batch),
    );
  }

  #receive(reply: WorkerReply): void {
    if (reply.type === "ready" && this.#mode === "starting") {
      clearTimeout(this.#startTimer);
      this.#mode = "threaded";
      this.#onMode("threaded");
      if (this.#forcedConversion) this.#start(this.#forcedConversion);
      for (const batch of this.#waiting.splice(0)) this.#send(batch);
    } else if (reply.type === "batch") {
      this.#inFlight--;
      logBatch(this.#logs!, reply.batch);
      this.#spare.push(reply.batch);
    } else if (reply.type === "state") {
      this.#workerState = reply.state;
    } else if (reply.type === "failed") {
      // The worker's `DaysOutOfRange` is the run's, to be aggregated again with wide days.
      const days = reply.message === DaysOutOfRange.MESSAGE;
      this.#fail(days ? new DaysOutOfRange() : new Error(reply.message));
    }
    this.#wakeUp();
  }

  /** A worker that fails to start is replaced by this thread; a failure later is the run's. */
  #fail(error: Error): void {
    if (this.#mode === "starting") this.#goLocal();
    else if (this.#mode === "threaded") this.#failure ??= error;
    this.#wakeUp();
  }

  /** Gives up the worker: the rows are added on this thread from now on. */
  #goLocal(): void {
    this.#endWorker();
    this.#mode = "local";
    this.#onMode("local");
    if (this.#forcedConversion) {
      const tally = this.#tally = this.#newTally(this.#forcedConversion);
      for (const batch of this.#waiting.splice(0)) tally.add(batch);
    }
  }

  #nextEvent(): Promise<void> {
    return new Promise((resolve) => this.#wake = resolve);
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }
}
