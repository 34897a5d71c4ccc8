/**
 * The upload validation pipeline: `DatasetValidator` checks an upload chunk by chunk,
 * `validationStream` wraps it as a pass-through `TransformStream`.
 *
 * @module
 */
export {
  DatasetValidator,
  type DatasetValidatorOptions,
  type ValidationSummary,
} from "./dataset_validator.ts";
export { type ValidationStream, validationStream } from "./validation_stream.ts";
export { ValidationError } from "./validation_error.ts";
export type { MetricColumn } from "./column_checks.ts";
