import { BOM_LENGTH, CR, QUOTE, startsWithBom } from "./bytes.ts";
import {
  CsvError,
  loneCarriageReturnError,
  parseError,
  strayQuoteError,
  textAfterQuoteError,
  tooManyColumnsError,
  unclosedQuoteError,
} from "./csv_error.ts";
import { type Delimiter, delimiterByte, sniffDelimiter } from "./delimiter.ts";
import { MAX_COLUMNS } from "./limits.ts";

/** The columns every dataset must have, named exactly so. */
export const REQUIRED_COLUMNS = ["user_id", "variant", "date"] as const;

/** A parsed header line. */
export interface Header {
  delimiter: Delimiter;
  /** Trimmed column names, in file order. */
  names: string[];
}

const utf8Decoder = new TextDecoder();

/**
 * What counts of a line before the header (`line` without its line feed): without a trailing
 * carriage return and, on the file's first line, without a leading UTF-8 BOM. Empty answers
 * mean a blank line, which is skipped (and still counted); the first other line is the header.
 */
export function headerContent(line: Uint8Array, firstLine: boolean): Uint8Array {
  let end = line.length;
  if (end > 0 && line[end - 1] === CR) end--;
  const start = firstLine && startsWithBom(line) ? BOM_LENGTH : 0;
  return line.subarray(start, Math.max(start, end));
}

/** Splits one CSV record (no line end) into its unquoted fields, RFC 4180 style. */
export function splitRecord(line: Uint8Array, delimiter: number, lineNumber: number): string[] {
  const fields: string[] = [];
  let i = 0;
  const n = line.length;
  for (;;) {
    if (line[i] === QUOTE) {
      let j = i + 1;
      for (;;) {
        j = line.indexOf(QUOTE, j);
        if (j < 0) throw unclosedQuoteError(lineNumber);
        if (line[j + 1] !== QUOTE) break;
        j += 2;
      }
      fields.push(utf8Decoder.decode(line.subarray(i + 1, j)).replaceAll('""', '"'));
      i = j + 1;
      if (i < n && line[i] !== delimiter) {
        throw line[i] === CR
          ? loneCarriageReturnError(lineNumber)
          : textAfterQuoteError(lineNumber);
      }
    } else {
      let j = i;
      while (j < n && line[j] !== delimiter) {
        if (line[j] === QUOTE) throw strayQuoteError(lineNumber);
        if (line[j] === CR) throw loneCarriageReturnError(lineNumber);
        j++;
      }
      fields.push(utf8Decoder.decode(line.subarray(i, j)));
      i = j;
    }
    if (i >= n) return fields;
    i++; // the delimiter
  }
}

/**
 * Parses and checks the header line (the `headerContent` of its line): comma or semicolon
 * delimiter, at most `maxColumns` columns (default `MAX_COLUMNS`), every trimmed name non-empty
 * and unique, and `user_id`, `variant`, `date` present. Throws a `CsvError`.
 */
export function parseHeader(
  line: Uint8Array,
  lineNumber: number,
  maxColumns: number = MAX_COLUMNS,
): Header {
  const delimiter = sniffDelimiter(line, lineNumber);
  const fields = splitRecord(line, delimiterByte(delimiter), lineNumber);
  if (fields.length > maxColumns) throw tooManyColumnsError(lineNumber, maxColumns);
  const names = fields.map((field) => field.trim());
  const seen = new Set<string>();
  names.forEach((name, index) => {
    if (name === "") throw parseError(lineNumber, `column ${index + 1} of the header has no name`);
    if (seen.has(name)) throw parseError(lineNumber, `the column name "${name}" appears twice`);
    seen.add(name);
  });
  const missing = REQUIRED_COLUMNS.filter((name) => !seen.has(name));
  if (missing.length > 0) {
    throw new CsvError(
      "missing_columns",
      `Missing required column${missing.length > 1 ? "s" : ""}: ${missing.join(", ")} ` +
        `(the header on line ${lineNumber} must name user_id, variant and date)`,
      lineNumber,
    );
  }
  return { delimiter, names };
}
