/**
 * Aggregates a stored delivery for its analysis. A direct upload was validated while it streamed;
 * a two-step delivery was not, so the upload validator runs beside the reader over the same
 * chunks and its verdict is the delivery's: the same `ValidationError` (code, message, line) as
 * a direct upload of the same bytes would have got.
 *
 * With `waited`, the time spent awaiting the body's chunks (the storage's part of the run) is
 * added to `waited.ms`; the rest of the call's time is the aggregation's (and the validator's).
 */
import { DatasetValidator, ValidationError } from "../pipeline/mod.ts";
import { aggregateCsv, type AggregateOptions } from "./aggregate/aggregate.ts";
import type { Aggregate } from "./aggregate/aggregate_types.ts";

/** Options of `aggregateDelivery`. */
export interface AggregateDeliveryOptions extends
  Pick<
    AggregateOptions,
    | "metricKinds"
    | "covariates"
    | "winsorize"
    | "onHeader"
    | "worker"
    | "onChunk"
    | "keyMetric"
    | "userSummary"
    | "sizeBytes"
  > {
  /** The bytes passed the upload checks as they arrived (a direct upload); default false. */
  validated?: boolean;
  /** Receives, in `ms`, the milliseconds spent awaiting the body's chunks (added to it). */
  waited?: { ms: number };
}

/**
 * Yields the chunks of `chunks`, adding the time spent awaiting each one to `waited.ms`. Ending
 * early (a `break` or a throw in the consumer) ends `chunks` the same way.
 */
export async function* timedChunks<T>(
  chunks: AsyncIterable<T>,
  waited: { ms: number },
): AsyncGenerator<T> {
  const iterator = chunks[Symbol.asyncIterator]();
  /** Whether `chunks` ended (or failed) by itself: then it needs no `return`. */
  let ended = false;
  try {
    for (;;) {
      const t0 = performance.now();
      let next: IteratorResult<T>;
      try {
        next = await iterator.next();
      } catch (error) {
        ended = true;
        throw error;
      } finally {
        waited.ms += performance.now() - t0;
      }
      if (next.done) {
        ended = true;
        return;
      }
      yield next.value;
    }
  } finally {
    if (!ended) await iterator.return?.();
  }
}

/**
 * Aggregates `body`. Unless `validated`, a `DatasetValidator` sees every chunk before the reader
 * (two threads where a worker can start, see `aggregateCsv`) and a refusal is its
 * `ValidationError`. When the reader stops first (it leaves some checks to the validator, whose
 * row checks may also end later), the validator reads the rest of the body so that it answers
 * for the whole file; only if it accepts the file is the reader's own error thrown.
 */
export async function aggregateDelivery(
  body: ReadableStream<Uint8Array>,
  options: AggregateDeliveryOptions = {},
): Promise<Aggregate> {
  const { validated = false, waited, ...aggregateOptions } = options;
  const timed = (chunks: AsyncIterable<Uint8Array>) =>
    waited === undefined ? chunks : timedChunks(chunks, waited);
  if (validated) return await aggregateCsv(timed(body), aggregateOptions);
  const validator = new DatasetValidator();
  try {
    // Without cancelling on a stop, so that the validator can read on.
    const chunks = timed(body.values({ preventCancel: true }));
    const onChunk = aggregateOptions.onChunk;
    const aggregate = await aggregateCsv(chunks, {
      ...aggregateOptions,
      onChunk: (chunk) => {
        validator.push(chunk);
        onChunk?.(chunk);
      },
    });
    validator.finish();
    return aggregate;
  } catch (error) {
    if (!(error instanceof ValidationError)) {
      for await (const chunk of timed(body)) validator.push(chunk);
      validator.finish();
    }
    throw error;
  } finally {
    await body.cancel().catch(() => {});
  }
}
