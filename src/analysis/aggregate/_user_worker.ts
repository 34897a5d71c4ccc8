/**
 * The worker side of `aggregateThreaded`: keeps a `UserTally` of every user, adds each batch it is
 * sent to it and sends the batch back for reuse (each row's record written in it, from which the
 * reading thread logs the values when the tally does not, see `logBatch`), and at the end sends
 * the tally's state. The worker ends with its run: its memory goes with it.
 */
import { batchBuffers, type RowBatch } from "./_row_batch.ts";
import { stateBuffers, type TallyState, UserTally } from "./_user_tally.ts";

/** What the reading thread sends: start, batches, then finish. */
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
  | { type: "finish" };

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

scope.onmessage = ({ data: request }) => {
  try {
    if (request.type === "start") {
      const { forcedConversion, dimensions, reserveBytes, expectedUsers, narrowDays, logValues } =
        request;
      tally = new UserTally(
        forcedConversion,
        dimensions,
        reserveBytes,
        expectedUsers,
        narrowDays,
        logValues,
      );
    } else if (request.type === "batch") {
      tally!.add(request.batch);
      scope.postMessage({ type: "batch", batch: request.batch }, batchBuffers(request.batch));
    } else {
      const state = tally!.state();
      tally = null;
      scope.postMessage({ type: "state", state }, stateBuffers(state));
    }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    scope.postMessage({ type: "failed", message });
  }
};
scope.postMessage({ type: "ready" });
