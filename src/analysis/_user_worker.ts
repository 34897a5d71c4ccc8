/**
 * The worker side of `aggregateThreaded`: keeps a `UserTally`, adds each batch it is sent to it
 * and sends the batch back for reuse, and at the end answers the summarized `Aggregate`.
 */
import type { Aggregate } from "./aggregate_types.ts";
import { batchBuffers, type RowBatch } from "./_row_batch.ts";
import type { MetricKind, ReaderFindings } from "./_row_reader.ts";
import { summarize } from "./_summary.ts";
import { UserTally } from "./_user_tally.ts";

/** What the reading thread sends, in this order: start, batches, finish. */
export type WorkerRequest =
  | { type: "start"; forcedConversion: Uint8Array }
  | { type: "batch"; batch: RowBatch }
  | { type: "finish"; findings: ReaderFindings; kinds: Readonly<Record<string, MetricKind>> };

/** What the worker answers: ready once loaded, each batch back, then the result. */
export type WorkerReply =
  | { type: "ready" }
  | { type: "batch"; batch: RowBatch }
  | { type: "result"; aggregate: Aggregate }
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
      tally = new UserTally(request.forcedConversion);
    } else if (request.type === "batch") {
      tally!.add(request.batch);
      scope.postMessage({ type: "batch", batch: request.batch }, batchBuffers(request.batch));
    } else {
      const aggregate = summarize(request.findings, tally!, request.kinds);
      tally = null;
      scope.postMessage({ type: "result", aggregate });
    }
  } catch (error) {
    scope.postMessage({
      type: "failed",
      message: error instanceof Error ? error.message : String(error),
    });
  }
};
scope.postMessage({ type: "ready" });
