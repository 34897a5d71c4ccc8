/**
 * The CSV rules, defined once for both readers of a dataset: the upload validator
 * (`src/pipeline/`, which checks bytes as they stream) and the analysis reader
 * (`src/analysis/aggregate/`, which reads stored files). Each keeps its own fast loop; both take
 * these rules from here. docs/api.md ("The CSV") describes them for users; in the terms of this
 * folder:
 *
 * - UTF-8, a leading byte order mark allowed on the first line only (`startsWithBom`).
 * - Lines count physically (line feeds), the header being line 1 unless blank lines precede it.
 *   A line that is empty apart from its CR (and, on the first line, the BOM) is blank: skipped,
 *   still counted (`headerContent`).
 * - The delimiter is whichever of `,` and `;` occurs more often in the header outside quotes (the
 *   one giving more fields); comma on a tie; neither is `invalid_csv` (`sniffDelimiter`).
 * - Fields are RFC 4180: quoted fields may hold delimiters, line ends and `""`; a quote inside an
 *   unquoted field, text after a closing quote and a carriage return outside quotes that does not
 *   end the line are refused. Every row has the header's field count.
 * - Header names are trimmed (`String.prototype.trim`), non-empty and unique and include
 *   `user_id`, `variant` and `date` exactly (`parseHeader`).
 * - Cells are read with their surrounding spaces and tabs ignored and quotes removed, so
 *   `" 2026-01-02"` is a date and `"1"` a number (`hasText`, `numberKind`, `readDay`).
 *   `user_id` and `variant` must have text; `date` is a calendar date `YYYY-MM-DD`, years 0001
 *   to 9999 (`readDay`, `isDate`).
 * - Metric candidates are the columns other than `user_id`, `variant`, `date`. A column is a
 *   metric when every non-empty cell is a number and at least one is; all 0/1 (`1.0` too) makes
 *   it `conversion`, else `numeric` (`numberKind`). A decimal comma counts with `;` only.
 * - Limits (`limits.ts`): a line of at most 1 MiB, at most 1,000 columns; a cell longer than 256
 *   bytes is neither a date nor a number.
 *
 * Problems are `CsvError`s (`SyntaxError`s with a stable `code` and the offending `line`); this
 * folder imports nothing from the rest of the service.
 *
 * @module
 */
export * from "./bytes.ts";
export * from "./calendar_date.ts";
export * from "./csv_error.ts";
export * from "./delimiter.ts";
export * from "./has_text.ts";
export * from "./header.ts";
export * from "./limits.ts";
export * from "./number_kind.ts";
