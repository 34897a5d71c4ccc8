/**
 * The worker side of `aggregateThreaded`: keeps a `UserTally` of every user, adds each batch it is
 * sent to it and sends the batch back for reuse (each row's record written in it, from which the
 * reading thread logs the values when the tally does not, see `logBatch`), and at the end sends
 * the tally's state.
 *
 * A worker kept for the next run (see `TallyWorkers`) may also keep its table's memory (`finish`
 * says whether): the slots stay here at the end, and the records come back from the reading
 * thread once it summarized them (`recycle`). The next `start` zeroes what the last table wrote
 * and builds on it, so that a run that follows another one touches no fresh pages for its
 * largest table. Otherwise the slots are freed at the end.
 */
import { batchBuffers, type RowBatch } from "./_row_batch.ts";
import { stateBuffers, type TallyState, UserTally } from "./_user_tally.ts";
import type { TableSpare } from "./_user_table.ts";
import { releaseBuffers } from "../../buffers.ts";

/** What the reading thread sends: start, batches, finish, and to a kept worker, recycle. */
export type WorkerRequest =
  | {
    type: "start";
    forcedConversion: Uint8Array;
    dimensions: boolean;
    reserveBytes: number;
    expectedUsers: number;
    /** 16-bit day fields (see `RecordLayout`). */
    narrowDays: boolean;
    /** Whether the tally logs the values itself (else the reading thread does, see `logBatch`). */
    logValues: boolean;
  }
  | { type: "batch"; batch: RowBatch }
  | {
    type: "finish";
    /** Keep the table's slots for the next run (its records come back with `recycle`). */
    keep: boolean;
  }
  | {
    type: "recycle";
    /** The arena of the state this worker sent, done with. */
    arena: ArrayBuffer;
    /** Its bytes written (the rest is still zero). */
    used: number;
  };

/** What the worker answers: ready once loaded, each batch back, then its tally's state. */
export type WorkerReply =
  | { type: "ready" }
  | { type: "batch"; batch: RowBatch }
  | { type: "state"; state: TallyState }
  | { type: "failed"; message: string };

interface WorkerScope {
  onmessage: ((event: MessageEvent<WorkerRequest>) => void) | null;
  postMessage(message: WorkerReply, transfer?: Transferable[]): void;
}

const scope = globalThis as unknown as WorkerScope;
let tally: UserTally | null = null;
/** The last table's memory, kept for the next one. */
let spareArena: { arena: ArrayBuffer; used: number } | null = null;
let spareSlots: Int32Array<ArrayBuffer> | null = null;

/** The kept memory, zeroed, for a new table (and no longer kept here). */
function takeSpare(): TableSpare {
  const spare: TableSpare = {};
  if (spareArena !== null) {
    new Uint8Array(spareArena.arena, 0, spareArena.used).fill(0);
    spare.arena = spareArena.arena;
  }
  if (spareSlots !== null) spare.slots = spareSlots.fill(0);
  spareArena = null;
  spareSlots = null;
  return spare;
}

scope.onmessage = ({ data: request }) => {
  try {
    if (request.type === "start") {
      const { forcedConversion, dimensions, reserveBytes, expectedUsers, narrowDays, logValues } =
        request;
      const spare = takeSpare();
      tally = new UserTally(
        forcedConversion,
        dimensions,
        reserveBytes,
        expectedUsers,
        spare,
        narrowDays,
        logValues,
      );
    } else if (request.type === "batch") {
      tally!.add(request.batch);
      scope.postMessage({ type: "batch", batch: request.batch }, batchBuffers(request.batch));
    } else if (request.type === "finish") {
      const state = tally!.state();
      releaseBuffers(spareSlots);
      spareSlots = tally!.takeSlots();
      if (!request.keep) {
        releaseBuffers(spareSlots);
        spareSlots = null;
      }
      tally = null;
      scope.postMessage({ type: "state", state }, stateBuffers(state));
    } else {
      releaseBuffers(spareArena?.arena);
      spareArena = { arena: request.arena, used: request.used };
    }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    scope.postMessage({ type: "failed", message });
  }
};
scope.postMessage({ type: "ready" });
