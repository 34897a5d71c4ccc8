/**
 * `aggregateCsv` off the calling thread: the rows are read in a worker (`_reading_worker.ts`),
 * which adds half of them with a tally worker of its own, so the calling thread (the service's,
 * which answers requests meanwhile) only passes the chunks on, calls `onChunk` on each, and
 * hears the header and the aggregate. Each chunk is copied into one of `SLOTS` pieces of shared
 * memory, which come back in turn once read; reading the input waits while all are out.
 *
 * The workers never detach a buffer, which keeps V8's typed-array code on its fast path there
 * (see `keepBuffersAttached`); this thread's streams detach theirs, so the rows are not read
 * here. If the worker cannot start (e.g. a compiled binary built without its module) or is not up
 * within `START_TIMEOUT_MS`, the run goes on here (`aggregateThreaded`) with the chunks it was
 * sent: the same answer either way.
 *
 * With `options.tallyWorkers`, a worker kept from the run before is taken, and at a clean end
 * kept again (with its tally worker and their memory) for the next run; otherwise it ends.
 */
import type { Aggregate, AggregateOptions } from "./aggregate_types.ts";
import { aggregateThreaded } from "./_aggregate_threaded.ts";
import type { WorkerConnect } from "./_user_worker.ts";
import { WorkerPair } from "./tally_workers.ts";
import type { ReadingOptions, ReadingReply, ReadingRequest } from "./_reading_worker.ts";
import { csvError } from "../../csv/csv_error.ts";

/** Chunks out at the worker at most. */
const SLOTS = 6;
/** Bytes of a slot at least (a larger chunk gets a slot of its size). */
const SLOT_BYTES = 256 * 1024;
/** A worker not up after this long is given up for reading on this thread. */
const START_TIMEOUT_MS = 5000;

const WORKER_URL = new URL("./_reading_worker.ts", import.meta.url);
const TALLY_WORKER_URL = new URL("./_user_worker.ts", import.meta.url);

/**
 * Aggregates `chunks` as `aggregateCsv` does, reading the rows in a worker. For tests: `workerUrl`
 * replaces the worker module, and `onMode` hears "worker" once the worker took the run, or
 * "here" when the run goes on on this thread.
 */
export async function aggregateOffThread(
  chunks: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>,
  options: AggregateOptions = {},
  workerUrl: URL = WORKER_URL,
  onMode: (mode: "worker" | "here") => void = () => {},
): Promise<Aggregate> {
  const run = new OffThreadRun(options, workerUrl, onMode);
  const iterator = chunks[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await iterator.next();
      if (next.done) break;
      options.onChunk?.(next.value);
      if (!await run.push(next.value)) {
        // The worker did not start: the rest is read here, after what it was sent.
        const chunks = rest(run.unread(), next.value, iterator, options.onChunk);
        return await aggregateThreaded(chunks, { ...options, onChunk: undefined });
      }
    }
    const result = await run.finish();
    if (result !== null) return result;
    const chunks = rest(run.unread(), null, iterator, options.onChunk);
    return await aggregateThreaded(chunks, { ...options, onChunk: undefined });
  } finally {
    run.close();
    await iterator.return?.();
  }
}

/**
 * The chunks `sent` (copies), then `current`, then what `iterator` still gives (through `onChunk`,
 * which the others went through already).
 */
async function* rest(
  sent: Uint8Array[],
  current: Uint8Array | null,
  iterator: AsyncIterator<Uint8Array>,
  onChunk: ((chunk: Uint8Array) => void) | undefined,
): AsyncGenerator<Uint8Array> {
  yield* sent;
  if (current === null) return;
  yield current;
  for (;;) {
    const next = await iterator.next();
    if (next.done) return;
    onChunk?.(next.value);
    yield next.value;
  }
}

class OffThreadRun {
  readonly #options: AggregateOptions;
  readonly #onMode: (mode: "worker" | "here") => void;
  #worker: Worker | null = null;
  #pair: WorkerPair | null = null;
  #up = false;
  /** Whether the reading worker added lane 1 itself (its tally worker did not start in time). */
  #alone = false;
  #startTimer: ReturnType<typeof setTimeout> | undefined;
  /** Chunks sent and not yet read (their slots), oldest first. */
  readonly #out: { buffer: SharedArrayBuffer; length: number }[] = [];
  /** Slots free to copy the next chunk into. */
  readonly #free: SharedArrayBuffer[] = [];
  #result: Aggregate | null = null;
  #failure: unknown = null;
  /** True once the worker is given up (it did not start). */
  #gone = false;
  #wake: (() => void) | null = null;

  constructor(
    options: AggregateOptions,
    workerUrl: URL,
    onMode: (mode: "worker" | "here") => void,
  ) {
    this.#options = options;
    this.#onMode = onMode;
    const kept = options.tallyWorkers?.take(WorkerPair) ?? null;
    try {
      let port: MessagePort | undefined;
      if (kept === null) {
        // Both started here: a worker started by a worker took half a second to come up.
        const reading = new Worker(workerUrl.href, { type: "module" });
        let tally: Worker;
        try {
          tally = new Worker(TALLY_WORKER_URL.href, { type: "module" });
        } catch (error) {
          reading.terminate();
          throw error;
        }
        const channel = new MessageChannel();
        port = channel.port1;
        const connect: WorkerConnect = { type: "connect", port: channel.port2 };
        tally.postMessage(connect, [channel.port2]);
        this.#pair = new WorkerPair(reading, tally);
      } else this.#pair = kept;
      const pair = this.#pair;
      const worker = pair.reading;
      worker.onmessage = (event: MessageEvent<ReadingReply>) => this.#receive(event.data);
      pair.onerror = (event) => {
        event.preventDefault();
        this.#fail(new Error(`The aggregation worker failed: ${event.message}`));
      };
      worker.onmessageerror = () =>
        this.#fail(new Error("The aggregation worker sent a bad message"));
      this.#worker = worker;
      const { onChunk: _chunk, onHeader: _header, tallyWorkers: _kept, ...rest } = options;
      const start: ReadingRequest = { type: "start", options: rest satisfies ReadingOptions, port };
      worker.postMessage(start, port === undefined ? [] : [port]);
      if (kept !== null) this.#started();
      else {
        this.#startTimer = setTimeout(() => {
          if (!this.#up) this.#giveUp();
        }, START_TIMEOUT_MS);
      }
    } catch {
      this.#giveUp();
    }
  }

  /** Sends a copy of `chunk`; false when the worker is given up (the run goes on elsewhere). */
  async push(chunk: Uint8Array): Promise<boolean> {
    while (this.#out.length >= SLOTS && !this.#gone) {
      this.#check();
      await this.#nextEvent();
    }
    this.#check();
    if (this.#gone) return false;
    let buffer = this.#free.pop();
    if (buffer === undefined || buffer.byteLength < chunk.length) {
      buffer = new SharedArrayBuffer(Math.max(SLOT_BYTES, chunk.length));
    }
    new Uint8Array(buffer, 0, chunk.length).set(chunk);
    this.#out.push({ buffer, length: chunk.length });
    this.#worker!.postMessage(
      { type: "chunk", buffer, length: chunk.length } satisfies ReadingRequest,
    );
    return true;
  }

  /** The aggregate, or null when the worker is given up (the run goes on elsewhere). */
  async finish(): Promise<Aggregate | null> {
    this.#check();
    if (this.#gone) return null;
    this.#worker!.postMessage({ type: "finish" } satisfies ReadingRequest);
    while (this.#result === null && !this.#gone) {
      this.#check();
      await this.#nextEvent();
    }
    this.#check();
    if (this.#gone) return null;
    const tallyWorkers = this.#options.tallyWorkers;
    if (tallyWorkers !== undefined && !this.#alone) {
      tallyWorkers.keep(this.#pair!);
      this.#worker = null;
      this.#pair = null;
    }
    return this.#result;
  }

  /** Copies of the chunks sent and not read (for the run to go on here). */
  unread(): Uint8Array[] {
    return this.#out.splice(0).map(({ buffer, length }) => new Uint8Array(buffer, 0, length));
  }

  close(): void {
    clearTimeout(this.#startTimer);
    this.#pair?.terminate();
    this.#pair = null;
    this.#worker = null;
  }

  /** Throws the run's failure, if any. */
  #check(): void {
    if (this.#failure !== null) throw this.#failure;
  }

  #started(): void {
    clearTimeout(this.#startTimer);
    this.#up = true;
    this.#onMode("worker");
  }

  #receive(reply: ReadingReply): void {
    if (this.#gone) return;
    if (reply.type === "ready") this.#started();
    else if (reply.type === "header") this.#options.onHeader?.(reply.header);
    else if (reply.type === "mode") this.#alone = reply.mode === "local";
    else if (reply.type === "chunk") {
      const slot = this.#out.shift();
      if (slot !== undefined) this.#free.push(slot.buffer);
    } else if (reply.type === "done") this.#result = reply.aggregate;
    else if (reply.type === "csvError") this.#failure ??= csvError(reply.error);
    else if (reply.type === "failed") this.#failure ??= new Error(reply.message);
    this.#wakeUp();
  }

  /** A worker that fails to start is given up; a failure later is the run's. */
  #fail(error: Error): void {
    if (!this.#up) this.#giveUp();
    else this.#failure ??= error;
    this.#wakeUp();
  }

  #giveUp(): void {
    this.close();
    this.#gone = true;
    this.#onMode("here");
    this.#wakeUp();
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
