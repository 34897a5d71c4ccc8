/**
 * Reads a stored CSV dataset in one streaming pass into per-user, then per-variant aggregates
 * (see `aggregate_types.ts`), keeping per-user state in typed arrays rather than objects so that
 * a file with a million users and more reads at the speed of the bytes.
 *
 * The input is expected to have passed the upload checks (or to be checked in the same pass by
 * the caller); input they would refuse makes `push` or `finish` throw an `Error`.
 */
import type { Aggregate } from "./aggregate_types.ts";
import { CsvRowSplitter } from "./_csv_rows.ts";
import { summarize } from "./_summary.ts";
import { type MetricKind, Tally } from "./_tally.ts";

export interface AggregateOptions {
  /** Metric kinds that replace the detected ones, by column name; default none. */
  metricKinds?: Readonly<Record<string, MetricKind>>;
  /**
   * Called with each chunk before it is read, e.g. the caller's validator; when it throws,
   * `aggregateCsv` stops with that error. Default none.
   */
  onChunk?: (chunk: Uint8Array) => void;
}

/**
 * Aggregates CSV bytes pushed chunk by chunk. Metric columns are those whose non-empty cells are
 * all numbers (others are dimensions and dropped); per user, conversion = max and numeric = sum
 * over the user's rows; users seen in two variants are left out of everything and counted.
 */
export class CsvAggregator {
  readonly #tally: Tally;
  readonly #splitter: CsvRowSplitter;
  readonly #kinds: Readonly<Record<string, MetricKind>>;

  constructor(options: Pick<AggregateOptions, "metricKinds"> = {}) {
    this.#kinds = options.metricKinds ?? {};
    this.#tally = new Tally(this.#kinds);
    this.#splitter = new CsvRowSplitter(this.#tally);
  }

  /** Reads `chunk`; only a row left incomplete at its end is copied, so `chunk` may be reused. */
  push(chunk: Uint8Array): void {
    this.#splitter.push(chunk);
  }

  /** Reads the last row and answers the aggregate. */
  finish(): Aggregate {
    this.#splitter.finish();
    this.#tally.flush();
    return summarize(this.#tally, this.#kinds);
  }
}

/** Aggregates a whole CSV stream with a `CsvAggregator`. */
export async function aggregateCsv(
  chunks: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>,
  options: AggregateOptions = {},
): Promise<Aggregate> {
  const aggregator = new CsvAggregator(options);
  const onChunk = options.onChunk;
  for await (const chunk of chunks) {
    onChunk?.(chunk);
    aggregator.push(chunk);
  }
  return aggregator.finish();
}
