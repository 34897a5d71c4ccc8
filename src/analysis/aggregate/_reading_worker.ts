/**
 * The reading side of `aggregateOffThread`, in a worker of its own: the calling thread copies each
 * chunk into shared memory and sends it here; this thread splits and reads the rows and adds lane
 * 0's users, with its own worker for lane 1's (`aggregateThreaded`), and sends the aggregate
 * back. Neither this worker nor its tally worker ever detaches a buffer (`keepBuffersAttached`),
 * so their loops run at full speed; their memory is given back when they end.
 *
 * The tally worker is the calling thread's too (a worker started by a worker took half a second
 * to start): the two talk through a port it hands over with the first run, and are kept, or
 * ended, together.
 */
import type { Aggregate, AggregateOptions } from "./aggregate_types.ts";
import { aggregateThreaded, type TallyPeer } from "./_aggregate_threaded.ts";
import type { UserHashes } from "./_user_hashes.ts";
import type { Header } from "../../csv/header.ts";
import { CsvError, type CsvErrorData, csvErrorData } from "../../csv/csv_error.ts";
import { keepBuffersAttached } from "../../buffers.ts";

/** The options a run takes across threads (the callbacks and the kept workers stay behind). */
export type ReadingOptions = Omit<
  AggregateOptions,
  "onChunk" | "onHeader" | "tallyWorkers"
>;

/** What the calling thread sends: a run's start, its chunks (in order), its end. */
export type ReadingRequest =
  /** With the port of the tally worker, in the first run (the same port serves the next ones). */
  | { type: "start"; options: ReadingOptions; port?: MessagePort }
  | { type: "chunk"; buffer: SharedArrayBuffer; length: number }
  | { type: "finish" };

/** What this worker answers. */
export type ReadingReply =
  | { type: "ready" }
  | { type: "mode"; mode: "threaded" | "local" }
  | { type: "header"; header: Header }
  /** The oldest chunk sent is read: its memory may take another. */
  | { type: "chunk" }
  | { type: "done"; aggregate: Aggregate }
  | { type: "csvError"; error: CsvErrorData }
  | { type: "failed"; message: string };

interface WorkerScope {
  onmessage: ((event: MessageEvent<ReadingRequest>) => void) | null;
  postMessage(message: ReadingReply): void;
}

const scope = globalThis as unknown as WorkerScope;
keepBuffersAttached();
/** The tally worker, reached through a port (the calling thread started it). */
let peer: TallyPeer | null = null;

/** The chunks of the run under way, as they arrive. */
let queue: { chunks: Uint8Array[]; ended: boolean; wake: (() => void) | null } | null = null;

/** The run's chunks; each is acknowledged once the next is asked for (it is read by then). */
async function* chunks(): AsyncGenerator<Uint8Array> {
  const run = queue!;
  let first = true;
  for (;;) {
    if (!first) scope.postMessage({ type: "chunk" });
    first = false;
    while (run.chunks.length === 0 && !run.ended) {
      await new Promise<void>((resolve) => run.wake = resolve);
    }
    const chunk = run.chunks.shift();
    if (chunk === undefined) return;
    yield chunk;
  }
}

/** The user summary in memory of its own, not shared (the calling thread frees it when done). */
function unshared(users: UserHashes): UserHashes {
  const n = users.hi.length;
  const buffer = new ArrayBuffer(12 * n);
  const copy = {
    hi: new Uint32Array(buffer, 0, n),
    lo: new Uint32Array(buffer, 4 * n, n),
    variant: new Int32Array(buffer, 8 * n, n),
  };
  copy.hi.set(users.hi);
  copy.lo.set(users.lo);
  copy.variant.set(users.variant);
  return copy;
}

async function run(options: ReadingOptions): Promise<void> {
  try {
    const aggregate = await aggregateThreaded(
      chunks(),
      {
        ...options,
        onHeader: (header) => scope.postMessage({ type: "header", header }),
      },
      undefined,
      (mode) => scope.postMessage({ type: "mode", mode }),
      peer,
    );
    const users = aggregate.userSummary;
    const result = users ? { ...aggregate, userSummary: unshared(users) } : aggregate;
    scope.postMessage({ type: "done", aggregate: result });
  } catch (error) {
    if (error instanceof CsvError) {
      scope.postMessage({ type: "csvError", error: csvErrorData(error) });
    } else {
      const message = error instanceof Error ? error.message : String(error);
      scope.postMessage({ type: "failed", message });
    }
  } finally {
    queue = null;
  }
}

scope.onmessage = ({ data: request }) => {
  if (request.type === "start") {
    if (request.port !== undefined) peer = { port: request.port, up: false };
    queue = { chunks: [], ended: false, wake: null };
    run(request.options);
    return;
  }
  const current = queue;
  if (current === null) return; // the run ended early (an error): the rest is not read
  if (request.type === "chunk") {
    current.chunks.push(new Uint8Array(request.buffer, 0, request.length));
  } else current.ended = true;
  const wake = current.wake;
  current.wake = null;
  wake?.();
};
scope.postMessage({ type: "ready" });
