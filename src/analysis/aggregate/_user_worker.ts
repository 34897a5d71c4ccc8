/**
 * The worker side of `aggregateThreaded`: keeps a `UserTally` for lane 1, adds each batch it is
 * sent to it and sends the batch back for reuse, and at the end sends the tally's state.
 */
import { batchBuffers, type RowBatch } from "./_row_batch.ts";
import { stateBuffers, type TallyState, UserTally } from "./_user_tally.ts";

/** What the reading thread sends, in this order: start, batches, finish. */
export type WorkerRequest =
  | {
    type: "start";
    forcedConversion: Uint8Array;
    dimensions: boolean;
    reserveBytes: number;
    expectedUsers: number;
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
      const { forcedConversion, dimensions, reserveBytes, expectedUsers } = request;
      tally = new UserTally(forcedConversion, dimensions, reserveBytes, expectedUsers);
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
