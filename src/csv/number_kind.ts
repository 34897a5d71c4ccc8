/**
 * The number rule: a cell (spaces and tabs around it ignored) is a number when it is an optional
 * sign, digits with at most one decimal separator (`.`, or also `,` when `decimalComma`, that
 * is with a semicolon delimiter) and at least one digit, and an optional exponent `e`/`E`, sign,
 * digits. `NaN`, `Infinity` and hex are text, and so is any cell longer than `MAX_CHECKED_CELL`
 * bytes. A number written as `0` or `1`, unsigned, optionally followed by a decimal separator
 * and zeros (`1.0`, `0,00`), counts as 0/1: a column whose values are all 0/1 is a conversion.
 *
 * One scan answers the kind and, when asked, the value, so that the upload checks and the
 * analysis read numbers by the same grammar.
 */
import { COMMA, DOT, MINUS, NINE, ONE, PLUS, SPACE, TAB, ZERO } from "./bytes.ts";
import { MAX_CHECKED_CELL } from "./limits.ts";

/** `numberKind` answers: a blank cell, `0`/`1`, another number, or text. */
export const EMPTY = 0;
export const BINARY = 1;
export const NUMBER = 2;
export const TEXT = 3;

/** 10^0 … 10^22, each exactly representable as a double. */
export const POWERS_OF_TEN: Float64Array = Float64Array.from(
  { length: 23 },
  (_, k) => Number(`1e${k}`),
);

/** 2^53: integers below it are exact doubles. */
export const EXACT_LIMIT = 9007199254740992;

/**
 * Classifies the cell `buf[start..end)` as `EMPTY`, `BINARY`, `NUMBER` or `TEXT`. For `BINARY`
 * and `NUMBER`, writes its value to `value[0]` when `value` is given: `parseFloat` of the cell's
 * text with a decimal comma read as a point. Up to 2^53 in the digits and 22 decimals the
 * quotient of two exact doubles is correctly rounded (Clinger's fast path); longer mantissas and
 * exponents go through `parseFloat`.
 */
export function numberKind(
  buf: Uint8Array,
  start: number,
  end: number,
  decimalComma: boolean,
  value?: Float64Array,
): number {
  if (end - start > MAX_CHECKED_CELL) return TEXT;
  let b = 0;
  while (start < end && ((b = buf[start]) === SPACE || b === TAB)) start++;
  while (end > start && ((b = buf[end - 1]) === SPACE || b === TAB)) end--;
  if (start === end) return EMPTY;
  let i = start;
  b = buf[i];
  const negative = b === MINUS;
  const signed = negative || b === PLUS;
  if (signed) i++;
  const intStart = i;
  let mantissa = 0;
  while (i < end && (b = buf[i]) >= ZERO && b <= NINE) {
    mantissa = mantissa * 10 + (b - ZERO);
    i++;
  }
  const intDigits = i - intStart;
  let decimals = 0;
  /** The fraction's digits ORed: 0 when they are all zeros. */
  let fraction = 0;
  if (i < end && (b === DOT || (decimalComma && b === COMMA))) {
    i++;
    while (i < end && (b = buf[i]) >= ZERO && b <= NINE) {
      fraction |= b - ZERO;
      mantissa = mantissa * 10 + (b - ZERO);
      decimals++;
      i++;
    }
  }
  if (intDigits + decimals === 0) return TEXT;
  if (i === end) {
    if (value !== undefined) {
      if (mantissa >= EXACT_LIMIT || decimals > 22) {
        value[0] = readSlowly(buf, start, end);
      } else {
        const x = decimals === 0 ? mantissa : mantissa / POWERS_OF_TEN[decimals];
        value[0] = negative ? -x : x;
      }
    }
    return signed || intDigits !== 1 || buf[intStart] > ONE || fraction !== 0 ? NUMBER : BINARY;
  }
  return exponentKind(buf, start, i, end, value);
}

/** The kind of a cell whose mantissa `buf[start..e)` is followed by `buf[e]`: an exponent or text. */
function exponentKind(
  buf: Uint8Array,
  start: number,
  e: number,
  end: number,
  value?: Float64Array,
): number {
  if ((buf[e] | 0x20) !== 0x65) return TEXT; // e or E
  let i = e + 1;
  let b = 0;
  if (i < end && ((b = buf[i]) === PLUS || b === MINUS)) i++;
  const expStart = i;
  while (i < end && (b = buf[i]) >= ZERO && b <= NINE) i++;
  if (i !== end || i === expStart) return TEXT;
  if (value !== undefined) value[0] = readSlowly(buf, start, end);
  return NUMBER;
}

const scratch = new Float64Array(1);

/**
 * The value of the cell `buf[start..end)` by the number rule, or `NaN` when it is not a number
 * (a blank cell too).
 */
export function readNumber(
  buf: Uint8Array,
  start: number,
  end: number,
  decimalComma: boolean,
): number {
  const kind = numberKind(buf, start, end, decimalComma, scratch);
  return kind === BINARY || kind === NUMBER ? scratch[0] : NaN;
}

/** `parseFloat` of a cell already known to be a number (ASCII only), a decimal comma as a point. */
function readSlowly(buf: Uint8Array, start: number, end: number): number {
  let text = "";
  for (let i = start; i < end; i++) text += String.fromCharCode(buf[i] === COMMA ? DOT : buf[i]);
  return parseFloat(text);
}
