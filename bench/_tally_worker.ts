/**
 * The worker of `parts_bench.ts`: keeps the batches it is sent, then, on `go`, adds them to a
 * fresh `UserTally` as the aggregation's worker does (no value logs) and answers the time that
 * took and the users found.
 */
import { UserTally } from "../src/analysis/aggregate/_user_tally.ts";
import type { RowBatch } from "../src/analysis/aggregate/_row_batch.ts";

export type TallyRequest =
  | { type: "batches"; batches: RowBatch[] }
  | {
    type: "go";
    forcedConversion: Uint8Array;
    reserveBytes: number;
    expectedUsers: number;
  };

export interface TallyReply {
  ms: number;
  users: number;
}

const worker = self as unknown as Worker;
let batches: RowBatch[] = [];

worker.onmessage = (event: MessageEvent<TallyRequest>) => {
  const request = event.data;
  if (request.type === "batches") {
    batches = batches.concat(request.batches);
    return;
  }
  const start = performance.now();
  const { forcedConversion, reserveBytes, expectedUsers } = request;
  // As the aggregation's worker: narrow days, no dimension bytes, no value logs.
  const tally = new UserTally(
    forcedConversion,
    false,
    reserveBytes,
    expectedUsers,
    true,
    false,
  );
  for (const batch of batches) tally.add(batch);
  const ms = performance.now() - start;
  const users = tally.state().users;
  batches = [];
  worker.postMessage({ ms, users } satisfies TallyReply);
};
worker.postMessage("up");
