/**
 * Aggregates a stored delivery for its analysis. A direct upload was validated while it streamed;
 * a two-step delivery was not, so the upload validator runs beside the reader over the same
 * chunks and its verdict is the delivery's: the same `ValidationError` (code, message, line) as
 * a direct upload of the same bytes would have got.
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
  const { validated = false, ...aggregateOptions } = options;
  if (validated) return await aggregateCsv(body, aggregateOptions);
  const validator = new DatasetValidator();
  try {
    // Without cancelling on a stop, so that the validator can read on.
    const chunks = body.values({ preventCancel: true });
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
      for await (const chunk of body) validator.push(chunk);
      validator.finish();
    }
    throw error;
  } finally {
    await body.cancel().catch(() => {});
  }
}
