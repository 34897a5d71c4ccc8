/**
 * The date rule: a `date` cell (spaces and tabs around it ignored) is a real calendar date of the
 * proleptic Gregorian calendar written `YYYY-MM-DD`, years 0001 to 9999. The analysis reads it
 * as a day number that sorts like the date.
 */
import { MINUS, SPACE, TAB, ZERO } from "./bytes.ts";
import { CsvError, excerpt } from "./csv_error.ts";
import { MAX_CHECKED_CELL } from "./limits.ts";

/** Day numbers (see `readDay`) are below this bound. */
export const DAY_LIMIT = 10_000 * 372;

/** Days in `month` (1-12) of the proleptic Gregorian `year`. */
export function daysInMonth(year: number, month: number): number {
  if (month === 2) {
    return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  }
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/**
 * Digit values by byte, and 10 000 for any other byte: one bad digit puts a date part out of range
 * (the upload validator's compiled fast path reads plain dates with it).
 */
export const DIGIT_VALUES: Int32Array = new Int32Array(256).fill(10_000);
for (let d = 0; d < 10; d++) DIGIT_VALUES[ZERO + d] = d;

/**
 * Reads the cell `buf[start..end)` as a date by the rule above, answering its day number
 * `year * 372 + (month - 1) * 31 + day - 1`, or -1 when the cell is not such a date.
 */
export function readDay(buf: Uint8Array, start: number, end: number): number {
  if (end - start !== 10) {
    if (end - start > MAX_CHECKED_CELL) return -1;
    let b = 0;
    while (start < end && ((b = buf[start]) === SPACE || b === TAB)) start++;
    while (end > start && ((b = buf[end - 1]) === SPACE || b === TAB)) end--;
    if (end - start !== 10) return -1;
  }
  if (buf[start + 4] !== MINUS || buf[start + 7] !== MINUS) return -1;
  const y0 = buf[start] - ZERO;
  const y1 = buf[start + 1] - ZERO;
  const y2 = buf[start + 2] - ZERO;
  const y3 = buf[start + 3] - ZERO;
  const m0 = buf[start + 5] - ZERO;
  const m1 = buf[start + 6] - ZERO;
  const d0 = buf[start + 8] - ZERO;
  const d1 = buf[start + 9] - ZERO;
  // A byte below "0" makes the OR negative; one above "9" in a first digit of the month or day
  // puts it out of range below.
  if (
    (y0 | y1 | y2 | y3 | m0 | m1 | d0 | d1) < 0 ||
    y0 > 9 || y1 > 9 || y2 > 9 || y3 > 9 || m1 > 9 || d1 > 9
  ) return -1;
  const year = y0 * 1000 + y1 * 100 + y2 * 10 + y3;
  const month = m0 * 10 + m1;
  const day = d0 * 10 + d1;
  if (year === 0 || month < 1 || month > 12 || day < 1) return -1;
  if (day > 28 && day > daysInMonth(year, month)) return -1;
  return year * 372 + (month - 1) * 31 + day - 1;
}

/** True when the cell is a calendar date written `YYYY-MM-DD` (see `readDay`). */
export function isDate(buf: Uint8Array, start: number, end: number): boolean {
  return readDay(buf, start, end) >= 0;
}

/** Writes a day number from `readDay` back as `YYYY-MM-DD`. */
export function formatDay(day: number): string {
  const year = Math.floor(day / 372);
  const month = Math.floor((day % 372) / 31) + 1;
  const date = (day % 31) + 1;
  return `${String(year).padStart(4, "0")}-${String(month).padStart(2, "0")}-${
    String(date).padStart(2, "0")
  }`;
}

/** A `date` cell (`value`, ending on `line`) that is not a date by the rule above. */
export function invalidDateError(value: Uint8Array, line: number): CsvError {
  return new CsvError(
    "invalid_date",
    `Invalid date on line ${line}: "${excerpt(value)}" is not a calendar date written YYYY-MM-DD`,
    line,
  );
}
