import {
  DatasetValidator,
  type DatasetValidatorOptions,
  type ValidationSummary,
} from "./dataset_validator.ts";

/** A pass-through stage and the summary it resolves when the input ended valid. */
export interface ValidationStream {
  stream: TransformStream<Uint8Array, Uint8Array>;
  /** Resolves at flush; rejects with the `ValidationError` that errored the stream. */
  summary: Promise<ValidationSummary>;
}

/**
 * Validates bytes on their way through: each chunk is checked before it is passed on, so the
 * chunk holding the first problem is never forwarded; the stream errors with the
 * `ValidationError` instead. `summary` never causes an unhandled rejection by itself.
 */
export function validationStream(options: DatasetValidatorOptions = {}): ValidationStream {
  const validator = new DatasetValidator(options);
  const { promise, resolve, reject } = Promise.withResolvers<ValidationSummary>();
  promise.catch(() => {});
  const stream = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      try {
        validator.push(chunk);
      } catch (error) {
        reject(error);
        throw error;
      }
      controller.enqueue(chunk);
    },
    flush() {
      try {
        resolve(validator.finish());
      } catch (error) {
        reject(error);
        throw error;
      }
    },
    cancel(reason) {
      reject(reason);
    },
  });
  return { stream, summary: promise };
}
