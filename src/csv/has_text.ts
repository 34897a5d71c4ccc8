/**
 * The blank rule: spaces and tabs around a cell's value are ignored (as they are around header
 * names), so a cell of only spaces and tabs is empty. A cell is the range `buf[start..end)` of an
 * unquoted field or of a quoted field's content.
 */
import { SPACE, TAB } from "./bytes.ts";
import { type CsvError, parseError } from "./csv_error.ts";

/** True for the bytes ignored around a value: space and tab. */
export function isBlank(b: number): boolean {
  return b === SPACE || b === TAB;
}

/** True when the cell holds something besides spaces and tabs. */
export function hasText(buf: Uint8Array, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const b = buf[i];
    if (b !== SPACE && b !== TAB) return true;
  }
  return false;
}

/** A `user_id` or `variant` cell (column `name`, ending on `line`) without text. */
export function emptyCellError(name: string, line: number): CsvError {
  return parseError(line, `${name} is empty`);
}
