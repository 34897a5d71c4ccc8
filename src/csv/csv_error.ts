/**
 * How the CSV rules report a problem: a `CsvError` whose `code` names the broken rule (the codes
 * are the service's error codes of the same name, which the upload pipeline maps them to) and
 * whose `line` is the first offending physical line. The messages are worded here, once, for
 * both readers.
 */

/** The rules a `CsvError` can name. */
export type CsvErrorCode = "invalid_csv" | "missing_columns" | "invalid_date" | "no_data_rows";

/** Input that breaks a CSV rule. */
export class CsvError extends SyntaxError {
  readonly code: CsvErrorCode;
  /** The first offending physical line (the header is line 1), or `null` for the whole file. */
  readonly line: number | null;

  /** Appends ` (line N)` to `message` unless it already names that line. */
  constructor(code: CsvErrorCode, message: string, line: number | null = null) {
    super(withLine(message, line));
    this.name = "CsvError";
    this.code = code;
    this.line = line;
  }
}

/**
 * `message` with ` (line N)` appended unless it already names line `line`, as in
 * `Cannot parse line 12: expected 5 fields, got 3`.
 */
export function withLine(message: string, line: number | null): string {
  if (line === null || new RegExp(`\\bline ${line}\\b`).test(message)) return message;
  return `${message} (line ${line})`;
}

/** `Cannot parse line N: detail`, an `invalid_csv`. */
export function parseError(line: number, detail: string): CsvError {
  return new CsvError("invalid_csv", `Cannot parse line ${line}: ${detail}`, line);
}

/** A row whose field count is not the header's. */
export function fieldCountError(line: number, expected: number, got: number): CsvError {
  return parseError(line, `expected ${expected} fields, got ${got}`);
}

/** A quote opened on `line` and never closed. */
export function unclosedQuoteError(line: number): CsvError {
  return parseError(line, "a quoted field is not closed");
}

/** A quote inside a field that does not start with one. */
export function strayQuoteError(line: number): CsvError {
  return parseError(line, "unexpected quote in an unquoted field");
}

/** Something other than a delimiter or a line end after a closing quote. */
export function textAfterQuoteError(line: number): CsvError {
  return parseError(line, "text after a closing quote");
}

/** A carriage return outside quotes that is not part of a CRLF. */
export function loneCarriageReturnError(line: number): CsvError {
  return parseError(line, "carriage return not followed by a line feed");
}

/** A line (the row starting on `line`) over `max` bytes. */
export function lineTooLongError(line: number, max: number): CsvError {
  return parseError(line, `line is longer than ${max} bytes`);
}

/** A header or row (starting on `line`) with more than `max` fields. */
export function tooManyColumnsError(line: number, max: number): CsvError {
  return parseError(line, `more than ${max} columns`);
}

/** Input without a header line: empty, or blank lines only. */
export function noHeaderError(empty: boolean): CsvError {
  return new CsvError(
    "no_data_rows",
    empty ? "No data rows: the file is empty" : "No data rows: the file has no header",
  );
}

const utf8Decoder = new TextDecoder();

/**
 * A short excerpt of a cell for error messages. The upload checks see a quoted field's escaped
 * quotes still doubled (or, where a chunk end split the pair, single), so `""` is shown as `"`.
 */
export function excerpt(bytes: Uint8Array, max = 40): string {
  const text = utf8Decoder.decode(bytes).replaceAll('""', '"');
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
