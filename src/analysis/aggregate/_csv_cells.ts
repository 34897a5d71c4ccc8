/**
 * Byte-level readers of single cells for the aggregation: numbers to doubles and `YYYY-MM-DD`
 * dates to order-preserving day numbers, without creating strings in the common case. Spaces and
 * tabs around a value are ignored, as the upload checks (`src/pipeline/cell_checks.ts`) ignore them.
 */

/** Longest cell (raw bytes) read as a number, as in the upload checks; longer ones are text. */
export const MAX_NUMBER_CELL = 256;

/** Day numbers are below this bound (years 0000 to 9999). */
export const DAY_LIMIT = 10_000 * 372;

const SPACE = 0x20;
const TAB = 0x09;
const PLUS = 0x2b;
const COMMA = 0x2c;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;

/** 10^0 … 10^22, each exactly representable as a double. */
const POWERS_OF_TEN = Float64Array.from({ length: 23 }, (_, k) => Number(`1e${k}`));

/** 2^53: integers below it are exact doubles. */
const EXACT_LIMIT = 9007199254740992;

/**
 * Reads the cell `buf[start..end)` as a number, answering `NaN` when it is not one (a blank cell
 * too): an optional sign, digits with at most one decimal point (or a decimal comma when
 * `decimalComma`) and at least one digit, then an optional exponent. The result equals
 * `parseFloat` of the cell's text (with a decimal comma read as a point).
 *
 * Up to 2^53 in the digits and 22 decimals the quotient of two exact doubles is correctly rounded
 * (Clinger's fast path); longer mantissas and exponents go through `parseFloat`.
 */
export function readNumber(
  buf: Uint8Array,
  start: number,
  end: number,
  decimalComma: boolean,
): number {
  if (end - start > MAX_NUMBER_CELL) return NaN;
  while (start < end && (buf[start] === SPACE || buf[start] === TAB)) start++;
  while (end > start && (buf[end - 1] === SPACE || buf[end - 1] === TAB)) end--;
  let i = start;
  let b = buf[i];
  const negative = b === MINUS;
  if (negative || b === PLUS) i++;
  const intStart = i;
  let mantissa = 0;
  for (; i < end; i++) {
    const d = buf[i] - ZERO;
    if (d < 0 || d > 9) break;
    mantissa = mantissa * 10 + d;
  }
  const intDigits = i - intStart;
  let decimals = 0;
  if (i < end && ((b = buf[i]) === DOT || (b === COMMA && decimalComma))) {
    for (i++; i < end; i++) {
      const d = buf[i] - ZERO;
      if (d < 0 || d > 9) break;
      mantissa = mantissa * 10 + d;
      decimals++;
    }
  }
  if (intDigits + decimals === 0) return NaN;
  if (i < end) return (buf[i] | 0x20) === 0x65 ? readExponent(buf, start, i, end) : NaN;
  if (mantissa >= EXACT_LIMIT || decimals > 22) return readSlowly(buf, start, end);
  const value = decimals === 0 ? mantissa : mantissa / POWERS_OF_TEN[decimals];
  return negative ? -value : value;
}

/**
 * True when the number cell `buf[start..end)` is written as a 0/1 value the way the upload checks
 * classify them: unsigned, one integer digit 0 or 1, then optionally a decimal separator and zeros
 * (`1`, `0.00`, `1,0` with `decimalComma`), no exponent.
 */
export function isBinaryCell(
  buf: Uint8Array,
  start: number,
  end: number,
  decimalComma: boolean,
): boolean {
  while (start < end && (buf[start] === SPACE || buf[start] === TAB)) start++;
  while (end > start && (buf[end - 1] === SPACE || buf[end - 1] === TAB)) end--;
  const lead = buf[start];
  if (start === end || (lead !== ZERO && lead !== ZERO + 1)) return false;
  if (end - start === 1) return true;
  const separator = buf[start + 1];
  if (separator !== DOT && !(separator === COMMA && decimalComma)) return false;
  for (let i = start + 2; i < end; i++) if (buf[i] !== ZERO) return false;
  return true;
}

/** True when the cell holds something besides spaces and tabs. */
export function hasText(buf: Uint8Array, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (buf[i] !== SPACE && buf[i] !== TAB) return true;
  return false;
}

/** Checks the exponent starting at `buf[e]` (an `e` or `E`) and reads the whole cell. */
function readExponent(buf: Uint8Array, start: number, e: number, end: number): number {
  let i = e + 1;
  if (i < end && (buf[i] === PLUS || buf[i] === MINUS)) i++;
  const digits = i;
  while (i < end && buf[i] >= ZERO && buf[i] <= ZERO + 9) i++;
  return i === end && i > digits ? readSlowly(buf, start, end) : NaN;
}

/** `parseFloat` of a cell already known to be a number (ASCII only), a decimal comma as a point. */
function readSlowly(buf: Uint8Array, start: number, end: number): number {
  let text = "";
  for (let i = start; i < end; i++) text += String.fromCharCode(buf[i] === COMMA ? DOT : buf[i]);
  return parseFloat(text);
}

/**
 * Reads the cell `buf[start..end)` written `YYYY-MM-DD` (spaces and tabs around it ignored) as a
 * day number that sorts like the date: `year * 372 + (month - 1) * 31 + day - 1`. Answers -1 when
 * the cell is not written so or the month or day is out of range; does not check the month's
 * length (the upload checks do).
 */
export function readDay(buf: Uint8Array, start: number, end: number): number {
  if (end - start !== 10) {
    if (end - start > MAX_NUMBER_CELL) return -1;
    while (start < end && (buf[start] === SPACE || buf[start] === TAB)) start++;
    while (end > start && (buf[end - 1] === SPACE || buf[end - 1] === TAB)) end--;
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
  if (
    (y0 | y1 | y2 | y3 | m0 | m1 | d0 | d1) < 0 ||
    y0 > 9 || y1 > 9 || y2 > 9 || y3 > 9 || m1 > 9 || d1 > 9
  ) return -1;
  const month = m0 * 10 + m1;
  const day = d0 * 10 + d1;
  if (month < 1 || month > 12 || day < 1 || day > 31) return -1;
  return (y0 * 1000 + y1 * 100 + y2 * 10 + y3) * 372 + (month - 1) * 31 + day - 1;
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
