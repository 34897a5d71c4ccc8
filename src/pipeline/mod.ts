/**
 * The upload validation pipeline: `DatasetValidator` checks an upload chunk by chunk as it
 * streams, `validationStream` wraps it as a pass-through `TransformStream`. The checks follow
 * DESIGN.md ("What a direct upload checks"); where that page leaves a choice, these rules hold:
 *
 * - Signatures are looked for in the first 262 bytes (tar's `ustar` sits at offset 257). Archives
 *   and compressed streams answer `archive_detected` naming the format; UTF-16/32 byte order
 *   marks and NUL bytes answer `binary_content`. Signature errors carry no line.
 * - The delimiter is whichever of `,` and `;` occurs more often in the header outside quotes
 *   (the one giving more fields); comma on a tie; neither is `invalid_csv`.
 * - Line numbers count physical lines (line feeds), the header's first line being 1 unless blank
 *   lines precede it. A row's errors name the line the row starts on; a cell's errors the line
 *   the cell ends on; an unclosed quote the line where it opened.
 * - The line limit applies to a whole row, line end excluded (a quoted newline does not reset
 *   it); it is refused as soon as it is exceeded, at the latest at the end of the chunk.
 * - Cells are read with their surrounding spaces and tabs ignored and quotes removed, so
 *   `" 2026-01-02"` is a date and `"1"` a number. `user_id` and `variant` must have text.
 * - Metric candidates are the columns other than `user_id`, `variant`, `date`. A column is a
 *   metric when every non-empty cell is a number and at least one is; all `0`/`1` (`1.0` too)
 *   makes it `conversion`. A number cell longer than 256 bytes counts as text.
 * - A row with the wrong field count is reported as such even if a cell in it also failed.
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
