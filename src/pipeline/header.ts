import { COMMA, CR, PIPE, QUOTE, SEMICOLON, TAB, utf8Decoder } from "./_bytes.ts";
import { ValidationError } from "./validation_error.ts";

/** The columns every dataset must have, named exactly so. */
export const REQUIRED_COLUMNS = ["user_id", "variant", "date"] as const;

/** A parsed header line. */
export interface Header {
  delimiter: "," | ";";
  /** Trimmed column names, in file order. */
  names: string[];
}

/**
 * Picks the delimiter from the header line: the one of `,` and `;` that occurs more often
 * outside quotes (so the one giving more fields); comma when both occur equally often. A
 * header with neither is refused, naming a tab or pipe when it has one.
 */
export function sniffDelimiter(line: Uint8Array, lineNumber: number): "," | ";" {
  let commas = 0;
  let semicolons = 0;
  let tabs = 0;
  let pipes = 0;
  let quoted = false;
  for (const b of line) {
    if (b === QUOTE) quoted = !quoted;
    else if (quoted) continue;
    else if (b === COMMA) commas++;
    else if (b === SEMICOLON) semicolons++;
    else if (b === TAB) tabs++;
    else if (b === PIPE) pipes++;
  }
  if (commas === 0 && semicolons === 0) {
    const found = tabs > 0 ? " (found tabs)" : pipes > 0 ? " (found pipes)" : "";
    throw new ValidationError(
      "invalid_csv",
      `Cannot parse line ${lineNumber}: the delimiter must be a comma or a semicolon${found}`,
      lineNumber,
    );
  }
  return semicolons > commas ? ";" : ",";
}

/** Splits one CSV record (no line end) into its unquoted fields, RFC 4180 style. */
export function splitRecord(
  line: Uint8Array,
  delimiter: number,
  lineNumber: number,
): string[] {
  const fail = (detail: string) =>
    new ValidationError("invalid_csv", `Cannot parse line ${lineNumber}: ${detail}`, lineNumber);
  const fields: string[] = [];
  let i = 0;
  const n = line.length;
  for (;;) {
    if (line[i] === QUOTE) {
      let j = i + 1;
      for (;;) {
        j = line.indexOf(QUOTE, j);
        if (j < 0) throw fail("a quoted field is not closed");
        if (line[j + 1] !== QUOTE) break;
        j += 2;
      }
      fields.push(utf8Decoder.decode(line.subarray(i + 1, j)).replaceAll('""', '"'));
      i = j + 1;
      if (i < n && line[i] !== delimiter) {
        throw fail(
          line[i] === CR
            ? "carriage return not followed by a line feed"
            : "text after a closing quote",
        );
      }
    } else {
      let j = i;
      while (j < n && line[j] !== delimiter) {
        if (line[j] === QUOTE) throw fail("unexpected quote in an unquoted field");
        if (line[j] === CR) throw fail("carriage return not followed by a line feed");
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
 * Parses and checks the header line (without its line end and without a leading UTF-8 BOM):
 * comma or semicolon delimiter, at most `maxColumns` columns, every trimmed name non-empty and
 * unique, and `user_id`, `variant`, `date` present.
 */
export function parseHeader(line: Uint8Array, lineNumber: number, maxColumns: number): Header {
  const delimiter = sniffDelimiter(line, lineNumber);
  const fields = splitRecord(line, delimiter === "," ? COMMA : SEMICOLON, lineNumber);
  const fail = (code: "invalid_csv" | "missing_columns", detail: string) =>
    new ValidationError(code, `Cannot parse line ${lineNumber}: ${detail}`, lineNumber);
  if (fields.length > maxColumns) throw fail("invalid_csv", `more than ${maxColumns} columns`);
  const names = fields.map((field) => field.trim());
  const seen = new Set<string>();
  names.forEach((name, index) => {
    if (name === "") throw fail("invalid_csv", `column ${index + 1} of the header has no name`);
    if (seen.has(name)) throw fail("invalid_csv", `the column name "${name}" appears twice`);
    seen.add(name);
  });
  const missing = REQUIRED_COLUMNS.filter((name) => !seen.has(name));
  if (missing.length > 0) {
    throw new ValidationError(
      "missing_columns",
      `Missing required column${missing.length > 1 ? "s" : ""}: ${missing.join(", ")} ` +
        `(the header on line ${lineNumber} must name user_id, variant and date)`,
      lineNumber,
    );
  }
  return { delimiter, names };
}
