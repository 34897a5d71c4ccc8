import { COMMA, PIPE, QUOTE, SEMICOLON, TAB } from "./bytes.ts";
import { parseError } from "./csv_error.ts";

/** The delimiters a dataset may use. */
export type Delimiter = "," | ";";

/**
 * Picks the delimiter from the header line: the one of `,` and `;` that occurs more often
 * outside quotes (so the one giving more fields); comma when both occur equally often. A
 * header with neither is refused, naming a tab or pipe when it has one.
 */
export function sniffDelimiter(line: Uint8Array, lineNumber: number): Delimiter {
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
    throw parseError(lineNumber, `the delimiter must be a comma or a semicolon${found}`);
  }
  return semicolons > commas ? ";" : ",";
}

/** The byte of `delimiter`. */
export function delimiterByte(delimiter: Delimiter): number {
  return delimiter === ";" ? SEMICOLON : COMMA;
}

/** Whether numbers may use a decimal comma: with a semicolon delimiter only. */
export function decimalComma(delimiter: Delimiter): boolean {
  return delimiter === ";";
}
