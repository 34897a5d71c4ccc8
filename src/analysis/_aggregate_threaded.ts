/**
 * `aggregateCsv` on two threads: this one reads the chunks, splits rows and reads their cells
 * into batches (`RowReader`); a worker adds the batches to their users (`UserTally`, the part
 * that waits on memory) and summarizes. Batches travel as transferred buffers and come back for
 * reuse; at most `MAX_IN_FLIGHT` are at the worker, which holds back reading when it lags.
 *
 * Until the worker reports that it is up, batches wait here; if it cannot start (e.g. a compiled
 * binary built without the worker module), is not up within `START_TIMEOUT_MS`, or the input ends
 * first, everything runs on this thread instead, with the same result.
 */
import type { Aggregate } from "./aggregate_types.ts";
import type { AggregateOptions } from "./aggregate.ts";
import { CsvRowSplitter } from "./_csv_rows.ts";
import { batchBuffers, newBatch, type RowBatch } from "./_row_batch.ts";
import { type BatchSink, type MetricKind, RowReader } from "./_row_reader.ts";
import { summarize } from "./_summary.ts";
import { UserTally } from "./_user_tally.ts";
import type { WorkerReply, WorkerRequest } from "./_user_worker.ts";

const BATCH_ROWS = 4096;
/** Batches at the worker before reading waits for one to come back. */
const MAX_IN_FLIGHT = 8;
/** Batches kept while the worker starts before reading waits for it. */
const MAX_WAITING = 64;
/** A worker not up after this long is given up for reading on this thread. */
const START_TIMEOUT_MS = 5000;

const WORKER_URL = new URL("./_user_worker.ts", import.meta.url);

/**
 * Aggregates `chunks` as `aggregateCsv` does. For tests: `workerUrl` replaces the worker module,
 * and `onMode` hears when the run turns "threaded" (the worker is up) or "local".
 */
export async function aggregateThreaded(
  chunks: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>,
  options: AggregateOptions = {},
  workerUrl: URL = WORKER_URL,
  onMode: (mode: "threaded" | "local") => void = () => {},
): Promise<Aggregate> {
  const run = new ThreadedRun(options.metricKinds ?? {}, workerUrl, onMode);
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
  readonly #reader: RowReader;
  readonly #splitter: CsvRowSplitter;
  #worker: Worker | null = null;
  #mode: "starting" | "threaded" | "local" = "starting";
  #forcedConversion: Uint8Array | null = null;
  #local: UserTally | null = null;
  /** Batches read while the worker starts. */
  readonly #waiting: RowBatch[] = [];
  /** Batches back from the worker, to fill again. */
  readonly #spare: RowBatch[] = [];
  #inFlight = 0;
  #result: Aggregate | null = null;
  #failure: Error | null = null;
  #wake: (() => void) | null = null;
  #startTimer: ReturnType<typeof setTimeout> | undefined;
  readonly #onMode: (mode: "threaded" | "local") => void;

  constructor(
    kinds: Readonly<Record<string, MetricKind>>,
    workerUrl: URL,
    onMode: (mode: "threaded" | "local") => void,
  ) {
    this.#kinds = kinds;
    this.#onMode = onMode;
    this.#reader = new RowReader(kinds, BATCH_ROWS, (forced) => this.#open(forced));
    this.#splitter = new CsvRowSplitter(this.#reader);
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
      this.#mode = "local";
      onMode("local");
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
    if (this.#mode === "local") return summarize(this.#reader, this.#local!, this.#kinds);
    const reader = this.#reader;
    this.#post({
      type: "finish",
      findings: {
        rows: reader.rows,
        variantNames: reader.variantNames,
        days: reader.days,
        metricNames: reader.metricNames,
        candidate: reader.candidate,
        hasValue: reader.hasValue,
        binary: reader.binary,
      },
      kinds: this.#kinds,
    });
    while (this.#result === null) {
      if (this.#failure) throw this.#failure;
      await this.#nextEvent();
    }
    return this.#result;
  }

  close(): void {
    clearTimeout(this.#startTimer);
    this.#worker?.terminate();
    this.#worker = null;
  }

  /** The header is read: where batches go from now on. */
  #open(forcedConversion: Uint8Array): BatchSink {
    this.#forcedConversion = forcedConversion;
    if (this.#mode === "local") this.#local = new UserTally(forcedConversion);
    if (this.#mode === "threaded") this.#post({ type: "start", forcedConversion });
    const metrics = forcedConversion.length;
    return (batch) => {
      if (this.#mode === "local") {
        this.#local!.add(batch);
        return batch;
      }
      if (this.#mode === "starting") this.#waiting.push(batch);
      else this.#send(batch);
      return this.#spare.pop() ?? newBatch(BATCH_ROWS, metrics);
    };
  }

  #post(request: WorkerRequest): void {
    this.#worker!.postMessage(request);
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
      if (this.#forcedConversion) {
        this.#post({ type: "start", forcedConversion: this.#forcedConversion });
      }
      for (const batch of this.#waiting.splice(0)) this.#send(batch);
    } else if (reply.type === "batch") {
      this.#inFlight--;
      this.#spare.push(reply.batch);
    } else if (reply.type === "result") {
      this.#result = reply.aggregate;
    } else if (reply.type === "failed") {
      this.#fail(new Error(reply.message));
    }
    this.#wakeUp();
  }

  /** A worker that fails to start is replaced by this thread; a failure later is the run's. */
  #fail(error: Error): void {
    if (this.#mode === "starting") this.#goLocal();
    else if (this.#mode === "threaded") this.#failure ??= error;
    this.#wakeUp();
  }

  #goLocal(): void {
    this.close();
    this.#mode = "local";
    this.#onMode("local");
    if (this.#forcedConversion) {
      const local = this.#local = new UserTally(this.#forcedConversion);
      for (const batch of this.#waiting.splice(0)) local.add(batch);
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
