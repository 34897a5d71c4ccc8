/**
 * Aggregates a stored delivery for its analysis. A direct upload was validated while it streamed;
 * a two-step delivery was not, so the upload validator runs beside the reader over the same
 * chunks and its verdict is the delivery's: the same `ValidationError` (code, message, line) as
 * a direct upload of the same bytes would have got.
 *
 * The checks (and the caller's hashing, `onChunk`) run on the reading thread, the first of the
 * aggregation's two, not on a third one: on two processors a third busy thread made a two-step
 * delivery slower and its cycle's peak higher (docs/performance.md, "Analysis").
 *
 * The body is the stored object's stream (see `chunksOf`). With `waited`, the time spent awaiting
 * its chunks (the storage's part of the run) is added to `waited.ms`; the rest of the call's time
 * is the aggregation's (and the validator's).
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
    | "expectedUsers"
    | "dimensions"
    | "wideDays"
  > {
  /** The bytes passed the upload checks as they arrived (a direct upload); default false. */
  validated?: boolean;
  /** Receives, in `ms`, the milliseconds spent awaiting the body's chunks (added to it). */
  waited?: { ms: number };
  /**
   * Receives, in `ms`, the milliseconds spent in the upload checks and in `onChunk` (the caller's
   * hashing), apart from the aggregation (added to it).
   */
  checked?: { ms: number };
}

/** Bytes read at once from a byte stream (see `chunksOf`). */
const READ_BYTES = 256 * 1024;

/** A reader of the body: a byte stream's reads its bytes into the caller's buffer. */
type BodyReader = ReadableStreamBYOBReader | ReadableStreamDefaultReader<Uint8Array>;

/**
 * A BYOB reader when `body` may be a byte stream longer than one read, otherwise its chunks. A body
 * of `READ_BYTES` or less comes whole in one chunk (the local driver's small objects are read
 * whole), and asking such a stream for a BYOB reader throws: some 10–20 µs of the reading thread
 * an analysis in a burst of tiny uploads (a profile, 2026-12-03).
 */
function readerOf(body: ReadableStream<Uint8Array>, sizeBytes: number | undefined): BodyReader {
  if (sizeBytes !== undefined && sizeBytes <= READ_BYTES) return body.getReader();
  try {
    return body.getReader({ mode: "byob" });
  } catch {
    return body.getReader(); // not a byte stream (an S3 body, bytes in memory)
  }
}

/**
 * The chunks of `reader` from here on, the time awaiting each added to `waited.ms`. A byte
 * stream (a file of the local driver) is read `READ_BYTES` at a time into one buffer, the same
 * for every read: the readers are done with a chunk when they ask for the next one (they copy
 * what they keep), so a 200 MB file leaves no 200 MB of chunks behind for the collector. A loop
 * that ends early leaves the body open, so that another loop can read on.
 */
async function* chunksOf(
  reader: BodyReader,
  waited: { ms: number } | undefined,
): AsyncGenerator<Uint8Array> {
  let buffer = new ArrayBuffer(reader instanceof ReadableStreamBYOBReader ? READ_BYTES : 0);
  for (;;) {
    const t0 = performance.now();
    const { done, value } = reader instanceof ReadableStreamBYOBReader
      ? await reader.read(new Uint8Array(buffer))
      : await reader.read();
    if (waited !== undefined) waited.ms += performance.now() - t0;
    if (done || value === undefined) return;
    buffer = value.buffer as ArrayBuffer; // a byte stream's read hands the buffer back
    yield value;
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
  const { validated = false, waited, checked, ...aggregateOptions } = options;
  const reader = readerOf(body, aggregateOptions.sizeBytes);
  const timed = <T>(fn: () => T): T => {
    if (checked === undefined) return fn();
    const t0 = performance.now();
    try {
      return fn();
    } finally {
      checked.ms += performance.now() - t0;
    }
  };
  const onChunk = aggregateOptions.onChunk;
  try {
    if (validated) {
      return await aggregateCsv(chunksOf(reader, waited), {
        ...aggregateOptions,
        onChunk: onChunk && ((chunk) => timed(() => onChunk(chunk))),
      });
    }
    const validator = new DatasetValidator();
    try {
      const aggregate = await aggregateCsv(chunksOf(reader, waited), {
        ...aggregateOptions,
        onChunk: (chunk) =>
          timed(() => {
            validator.push(chunk);
            onChunk?.(chunk);
          }),
      });
      timed(() => validator.finish());
      return aggregate;
    } catch (error) {
      if (!(error instanceof ValidationError)) {
        // The reader stopped first: the validator reads on (the body is still open).
        for await (const chunk of chunksOf(reader, waited)) timed(() => validator.push(chunk));
        timed(() => validator.finish());
      }
      throw error;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}
