/**
 * Byte-level checks of single cells. A cell is the range `buf[start..end)` of an unquoted field
 * or of a quoted field's content (an escaped quote stays as its two `""` bytes, which no date or
 * number accepts). Spaces and tabs around a value are ignored, as they are around header names.
 */
import { DOT, MINUS, NINE, ONE, PLUS, SPACE, TAB, ZERO } from "./_bytes.ts";

/** Longest cell (raw bytes) a date or metric check looks at; longer ones are not dates or numbers. */
export const MAX_CHECKED_CELL = 256;

/** `numberKind` answers: a blank cell, `0`/`1`, another number, or text. */
export const EMPTY = 0;
export const BINARY = 1;
export const NUMBER = 2;
export const TEXT = 3;

function isBlank(b: number): boolean {
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

/** Days in `month` (1-12) of the proleptic Gregorian `year`. */
export function daysInMonth(year: number, month: number): number {
  if (month === 2) {
    return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  }
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Digit values by byte, and 10 000 for any other byte: one bad digit puts a date part out of range. */
export const DIGIT_VALUES: Int32Array = new Int32Array(256).fill(10_000);
for (let d = 0; d < 10; d++) DIGIT_VALUES[ZERO + d] = d;

/** True when the cell is a calendar date written `YYYY-MM-DD` (years 0001 to 9999). */
export function isDate(buf: Uint8Array, start: number, end: number): boolean {
  if (end - start !== 10) {
    if (end - start > MAX_CHECKED_CELL) return false;
    while (start < end && isBlank(buf[start])) start++;
    while (end > start && isBlank(buf[end - 1])) end--;
    if (end - start !== 10) return false;
  }
  if (buf[start + 4] !== MINUS || buf[start + 7] !== MINUS) return false;
  const D = DIGIT_VALUES;
  const year = D[buf[start]] * 1000 + D[buf[start + 1]] * 100 + D[buf[start + 2]] * 10 +
    D[buf[start + 3]];
  const month = D[buf[start + 5]] * 10 + D[buf[start + 6]];
  const day = D[buf[start + 8]] * 10 + D[buf[start + 9]];
  if (year < 1 || year > 9999 || month < 1 || month > 12 || day < 1) return false;
  return day <= 28 || day <= daysInMonth(year, month);
}

/**
 * Classifies a cell as `EMPTY`, `BINARY` (`0` or `1`, optionally followed by a decimal
 * separator and zeros, as in `1.0`), `NUMBER` or `TEXT`. A number is an optional sign, digits
 * with at most one decimal separator (`.`, or also `,` when `decimalComma`) and at least one
 * digit, and an optional exponent `e`/`E`, sign, digits. `NaN`, `Infinity` and hex are text.
 */
export function numberKind(
  buf: Uint8Array,
  start: number,
  end: number,
  decimalComma: boolean,
): number {
  if (end - start > MAX_CHECKED_CELL) return TEXT;
  while (start < end && isBlank(buf[start])) start++;
  while (end > start && isBlank(buf[end - 1])) end--;
  if (start === end) return EMPTY;
  let i = start;
  let b = buf[i];
  const signed = b === PLUS || b === MINUS;
  if (signed) i++;
  const intStart = i;
  while (i < end && (b = buf[i]) >= ZERO && b <= NINE) i++;
  const intDigits = i - intStart;
  let zeroFraction = true;
  let digits = intDigits;
  if (i < end && (b === DOT || (decimalComma && b === 0x2c))) {
    i++;
    const fracStart = i;
    while (i < end && (b = buf[i]) >= ZERO && b <= NINE) {
      if (b !== ZERO) zeroFraction = false;
      i++;
    }
    digits += i - fracStart;
  }
  if (digits === 0) return TEXT;
  if (i === end) {
    const lead = buf[intStart];
    return !signed && intDigits === 1 && (lead === ZERO || lead === ONE) && zeroFraction
      ? BINARY
      : NUMBER;
  }
  if ((b | 0x20) !== 0x65) return TEXT; // e or E
  i++;
  if (i < end && ((b = buf[i]) === PLUS || b === MINUS)) i++;
  const expStart = i;
  while (i < end && (b = buf[i]) >= ZERO && b <= NINE) i++;
  return i === end && i > expStart ? NUMBER : TEXT;
}
