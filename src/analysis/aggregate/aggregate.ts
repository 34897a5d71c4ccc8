/**
 * Reads a stored CSV dataset in one streaming pass into per-user, then per-variant aggregates
 * (see `aggregate_types.ts`), keeping per-user state in typed arrays rather than objects so that
 * a file with a million users and more reads at the speed of the bytes.
 *
 * Metric columns are those whose non-empty cells are all numbers (others are dimensions and
 * dropped); per user, conversion = max and numeric = sum over the user's rows; users seen in two
 * variants are left out of everything and counted. Rows and cells are read by the CSV rules of
 * `src/csv/`, the upload checks' own. The input is expected to have passed the upload checks (or
 * to be checked in the same pass by the caller, see `analysis/aggregate_delivery.ts`); input that
 * breaks a rule the reading meets throws that rule's `CsvError`.
 */
import type { Aggregate, AggregateOptions } from "./aggregate_types.ts";
import { aggregateThreaded } from "./_aggregate_threaded.ts";
import { CsvRowSplitter } from "./_csv_rows.ts";
import type { RowBatch } from "./_row_batch.ts";
import { type MetricKind, RowReader } from "./_row_reader.ts";
import { summarize, type SummaryOptions, summaryOptions } from "./_summary.ts";
import { stateBuffers, UserTally } from "./_user_tally.ts";
import { giveBack } from "./_memory.ts";

export type { AggregateOptions };
export { datesFitNarrowDays, DaysOutOfRange } from "./_user_tally.ts";

/** Inputs up to this length are aggregated on the calling thread (see `sizeBytes`). */
export const SMALL_INPUT_BYTES = 1024 * 1024;

/** Rows read before their users are looked up (together, see `UserTable.warm`). */
const BATCH_ROWS = 256;

/**
 * Aggregates CSV bytes pushed chunk by chunk, synchronously on the calling thread (so that a
 * caller can feed the same chunks to a validator in the same loop).
 */
export class CsvAggregator {
  readonly #kinds: Readonly<Record<string, MetricKind>>;
  readonly #options: SummaryOptions;
  readonly #reader: RowReader;
  readonly #splitter: CsvRowSplitter;
  /** Every user, once the header is read (as the worker keeps them on two threads). */
  #tally: UserTally | null = null;

  constructor(options: Omit<AggregateOptions, "onChunk" | "worker"> = {}) {
    this.#kinds = options.metricKinds ?? {};
    this.#options = summaryOptions(options);
    const onHeader = options.onHeader;
    const dimensions = options.dimensions ?? true;
    this.#reader = new RowReader(
      this.#kinds,
      BATCH_ROWS,
      (forcedConversion, header) => {
        onHeader?.(header);
        const tally = this.#tally = new UserTally(forcedConversion, dimensions);
        return (batch: RowBatch) => {
          tally.add(batch);
          return batch;
        };
      },
      dimensions,
    );
    this.#splitter = new CsvRowSplitter(this.#reader);
  }

  /** Reads `chunk`; only a row left incomplete at its end is copied, so `chunk` may be reused. */
  push(chunk: Uint8Array): void {
    this.#splitter.push(chunk);
  }

  /** Reads the last row and answers the aggregate. */
  finish(): Aggregate {
    this.#splitter.finish();
    this.#reader.end();
    const tally = this.#tally!;
    const state = tally.state();
    const aggregate = summarize(this.#reader, tally.layout, state, this.#kinds, this.#options);
    // Done with: the records and the value logs go now (see `giveBack`).
    this.#reader.release();
    giveBack(...stateBuffers(state));
    return aggregate;
  }
}

/**
 * Aggregates a whole CSV stream, on two threads when a worker can start (and `worker` is not
 * false): this one reads the cells, the worker keeps the users.
 * Otherwise (a small input, a worker that cannot start, an input that ends before the worker is
 * up) all on the calling thread; the answer is the same either way.
 */
export async function aggregateCsv(
  chunks: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>,
  options: AggregateOptions = {},
): Promise<Aggregate> {
  if (options.sizeBytes === undefined || options.sizeBytes > SMALL_INPUT_BYTES) {
    return await aggregateThreaded(chunks, options);
  }
  const aggregator = new CsvAggregator(options);
  for await (const chunk of chunks) {
    options.onChunk?.(chunk);
    aggregator.push(chunk);
  }
  return aggregator.finish();
}
