/**
 * Aggregates a stored delivery for its analysis. A direct upload was validated while it streamed;
 * a two-step delivery was not, so the upload validator runs beside the reader over the same
 * chunks and its verdict is the delivery's: the same `ValidationError` (code, message, line) as
 * a direct upload of the same bytes would have got.
 *
 * With `validatorThread`, the checks and the SHA-256 of the bytes (answered in `sha256`) run on
 * that thread, as an upload's do (`OffThreadValidator`), beside the reader's two threads: each
 * chunk is copied into a buffer the validator hands back. The verdict is the same. The reading
 * thread is the slower one, and it no longer checks and hashes: a two-step delivery of 193 MB was
 * ready in 1.97 s against 2.13-2.15 s (README, session H).
 *
 * The body is read by `BodyChunks` (a stored file into two reused buffers, reading ahead). With
 * `waited`, the time spent awaiting its chunks (the storage's part of the run) is added to
 * `waited.ms`; the rest of the call's time is the aggregation's (and the validator's).
 */
import { DatasetValidator, ValidationError } from "../pipeline/mod.ts";
import { OffThreadValidator, type ValidatorThread } from "../ingest/off_thread_validator.ts";
import { aggregateCsv, type AggregateOptions } from "./aggregate/aggregate.ts";
import { BodyChunks, READ_BYTES } from "./body_chunks.ts";
import { releaseBuffers } from "../buffers.ts";
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
    | "tallyWorkers"
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
  /** Where an unvalidated delivery is checked and hashed (see above); default this thread. */
  validatorThread?: ValidatorThread;
  /** Receives the SHA-256 (hex) of the bytes when `validatorThread` checked them. */
  sha256?: { hex: string | null };
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
  const { validated = false, waited, checked, validatorThread, sha256, ...aggregateOptions } =
    options;
  const source = new BodyChunks(body, waited);
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
      return await aggregateCsv(source.chunks(), {
        ...aggregateOptions,
        onChunk: onChunk && ((chunk) => timed(() => onChunk(chunk))),
      });
    }
    if (validatorThread !== undefined) {
      const { aggregate, hex } = await checkedOffThread(
        source,
        validatorThread,
        aggregateOptions,
        timed,
      );
      if (sha256 !== undefined) sha256.hex = hex;
      return aggregate;
    }
    const validator = new DatasetValidator();
    try {
      const aggregate = await aggregateCsv(source.chunks(), {
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
        for await (const chunk of source.chunks()) timed(() => validator.push(chunk));
        timed(() => validator.finish());
      }
      throw error;
    }
  } finally {
    await source.cancel();
  }
}

/** Chunks at the validator thread before reading the rest of a body (the reader stopped) waits. */
const MAX_AHEAD = 8;

/**
 * `aggregateDelivery` of an unvalidated body with the checks and the hash on `thread`: each chunk
 * is copied into a buffer that the validator hands back once read. A refusal is the validator's
 * error: when the reader stops first, the rest of the body still goes to the validator, and the
 * reader's own error is thrown only if the validator accepts the whole file.
 */
async function checkedOffThread(
  source: BodyChunks,
  thread: ValidatorThread,
  options: AggregateOptions,
  timed: <T>(fn: () => T) => T,
): Promise<{ aggregate: Aggregate; hex: string }> {
  const spare: ArrayBuffer[] = [];
  /** Chunks at the validator, and a wait for one to come back (or for its error). */
  let out = 0;
  let wake: (() => void) | null = null;
  const turn = () => {
    wake?.();
    wake = null;
  };
  const validator = new OffThreadValidator(thread, (buffer) => {
    out--;
    spare.push(buffer);
    turn();
  }, turn);
  const onChunk = options.onChunk;
  const send = (chunk: Uint8Array) =>
    timed(() => {
      let buffer = spare.pop();
      if (buffer === undefined || buffer.byteLength < chunk.length) {
        buffer = new ArrayBuffer(Math.max(chunk.length, READ_BYTES));
      }
      const copy = new Uint8Array(buffer, 0, chunk.length);
      copy.set(chunk);
      validator.push(copy); // throws the validator's first error, if it has one by now
      out++;
    });
  try {
    let aggregate: Aggregate;
    try {
      aggregate = await aggregateCsv(source.chunks(), {
        ...options,
        onChunk: (chunk) => {
          send(chunk);
          onChunk?.(chunk);
        },
      });
    } catch (error) {
      if (!(error instanceof ValidationError)) {
        // The reader stopped first: the validator reads on (the body is still open), a few
        // chunks ahead at most, so that its error, once found, stops the reading.
        for await (const chunk of source.chunks()) {
          send(chunk);
          while (out > MAX_AHEAD) await new Promise<void>((resolve) => wake = resolve);
        }
        await validator.finish();
      }
      throw error;
    }
    const { sha256 } = await validator.finish();
    return { aggregate, hex: sha256 };
  } finally {
    validator.abort();
    releaseBuffers(...spare); // the buffers back from it; those still out go with the session
  }
}
