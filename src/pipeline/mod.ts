/**
 * The upload validation pipeline: `DatasetValidator` checks an upload chunk by chunk as it
 * streams (`src/upload/checks.ts` runs it as a stream stage of the upload). The checks are those
 * of docs/api.md ("What a direct upload checks"); the CSV rules (delimiter, header, quoting,
 * blank lines, cells, limits) are those of `src/csv/`, shared with the analysis reader. What is
 * the pipeline's own:
 *
 * - Signatures are looked for in the first 265 bytes (tar's `ustar\0` or `ustar  \0` sits at
 *   offset 257). Archives and compressed streams answer `archive_detected` naming the format;
 *   UTF-16/32 byte order marks and NUL bytes answer `binary_content`; bad UTF-8 `invalid_utf8`,
 *   naming the byte where the sequence starts. Signature errors carry no line.
 * - A row's errors name the line the row starts on; a cell's errors the line the cell ends on;
 *   an unclosed quote the line where it opened.
 * - The line limit applies to a whole row, line end excluded (a quoted newline does not reset
 *   it); it is refused as soon as it is exceeded, at the latest at the end of the chunk.
 * - A row with the wrong field count is reported as such even if a cell in it also failed.
 * - The `CsvError`s of the CSV rules are answered as `ValidationError`s (a `ServiceError`) of the
 *   same code, message and line.
 *
 * @module
 */
export {
  DatasetValidator,
  type DatasetValidatorOptions,
  type ValidationSummary,
} from "./dataset_validator.ts";
export { ValidationError } from "./validation_error.ts";
export type { MetricColumn } from "./column_checks.ts";
