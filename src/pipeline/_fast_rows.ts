/**
 * The CSV scanner's fast path: a function compiled once per header shape that checks whole plain rows
 * with every column's check inlined in column order. Unrolling the loop over fields and the
 * dispatch on each column's check makes typical files about twice as fast as the general state
 * machine. It is kept for the direct upload end to end: the upload benchmark's 193 MB file on
 * tmpfs reached 0.40 of the raw sink's rate with it and 0.19 without (medians of five runs each
 * in turns, 2026-12-02; docs/performance.md, "The CSV checks").
 *
 * The generated source is built only from numbers (column indexes, check kinds, byte values,
 * limits), never from uploaded bytes or names. It takes a row only when the row lies wholly in
 * the chunk and every cell is plain (no line feed, escaped quote or bad UTF-8 inside, no blank
 * required cell, no invalid date); at the first row it cannot take it stops, and the general
 * state machine in `csv_scanner.ts` handles that row and reports any error. Whatever the fast
 * path accepts, the state machine accepts too; the tests compare the two.
 */
import { daysInMonth, DIGIT_VALUES, isDate } from "../csv/calendar_date.ts";
import { hasText } from "../csv/has_text.ts";
import { MAX_CHECKED_CELL } from "../csv/limits.ts";
import { numberKind } from "../csv/number_kind.ts";
import { type ColumnChecks, DATE, METRIC, REQUIRED } from "./column_checks.ts";
import type { Utf8Check } from "./utf8_check.ts";

/** What the compiled function reads and writes besides the chunk. */
export interface FastRowsContext {
  /** Out: rows taken by the last call. */
  rows: number;
  readonly cells: ColumnChecks;
  /** The scanner's byte classes: bit 1 ends an unquoted run, bit 2 a quoted one. */
  readonly classes: Uint8Array;
  readonly utf8: Utf8Check;
}

/**
 * Takes plain rows from `buf[i..n)`, where `buf[n - 1]` must be a line feed (it bounds every
 * scan, so the scans need no bounds checks of their own); answers the start of the first row
 * not taken.
 */
export type FastRows = (buf: Uint8Array, i: number, n: number, cx: FastRowsContext) => number;

/** Options of `compileFastRows`. */
export interface FastRowsOptions {
  delimiter: number;
  maxLineBytes: number;
}

/** Metric candidates in a run longer than this are checked in a loop rather than unrolled. */
const UNROLL = 8;

/**
 * Takes the quoted cell opening at `buf[s]` (a quote) for the fast path and runs its column's
 * check on the content; `buf[n - 1]` is a line feed. Answers the index after the closing quote, or `-1` when the cell needs
 * the state machine: an escaped quote, a line feed, a NUL or bad UTF-8 inside, no byte after
 * the closing quote in `buf`, or a failed check.
 */
function quotedCell(
  buf: Uint8Array,
  s: number,
  n: number,
  cx: FastRowsContext,
  field: number,
  kind: number,
): number {
  const classes = cx.classes;
  let i = s + 1;
  for (;;) {
    while ((classes[buf[i]] & 2) === 0) i++; // stops at the line feed ending buf at the latest
    const b = buf[i];
    if (b >= 194 && b <= 223 && (buf[i + 1] & 192) === 128) {
      i += 2;
      continue;
    }
    if (i + 4 > n || b < 128) break;
    i = cx.utf8.sequence(buf, i);
    if (i < 0) return -1;
  }
  if (i + 1 >= n || buf[i] !== 0x22 || buf[i + 1] === 0x22) return -1;
  const cells = cx.cells;
  if (kind === REQUIRED) {
    if (!hasText(buf, s + 1, i)) return -1;
  } else if (kind === DATE) {
    if (!isDate(buf, s + 1, i)) return -1;
  } else if (cells.kinds[field] === METRIC) {
    cells.metric(field, numberKind(buf, s + 1, i, cells.decimalComma));
  }
  return i + 1;
}

/**
 * With a comma delimiter, skips four bytes at a time while none of them is below 0x2D or at
 * least 0x80 (SWAR: the "has a byte less than n" test). That covers every byte that ends an
 * unquoted run (NUL, line ends, quote, comma, non-ASCII) and a few that do not (space, `!`…
 * `+`), which then go to the byte loop that follows: it decides, the word test only skips. The
 * words (unaligned little-endian loads through a DataView; the test does not care about byte
 * order) end before `n`, whose last byte is a line feed. Left out with semicolons, whose 0x3B
 * would stop the test at every digit. About 25% faster on typical files (ids of 20 characters).
 */
const WORDS = `while (i + 4 <= n) {
          w = dv.getInt32(i, true);
          if ((((w - 0x2d2d2d2d) | w) & 0x80808080) !== 0) break;
          i += 4;
        }`;

/**
 * Advances `i` over plain unquoted bytes, checking UTF-8 sequences on the way (two-byte ones
 * inline, as in Cyrillic or accented text).
 */
const SCAN = `for (;;) {
        ${WORDS}
        while ((cl[buf[i]] & 1) === 0) i++;
        b = buf[i];
        if (b >= 194 && b <= 223 && i + 1 < n && (buf[i + 1] & 192) === 128) {
          i += 2;
          continue;
        }
        if (i + 4 > n || b < 128) break;
        i = u8.sequence(buf, i);
        if (i < 0) break row;
      }
      if (i >= n) break row;`;

function quoted(field: string, kind: number): string {
  return `if (buf[s] !== 34 || (i = quotedCell(buf, s, n, cx, ${field}, ${kind})) < 0) break row;`;
}

function terminator(last: boolean, delimiter: number): string {
  return last
    ? `b = buf[i];
      if (b === 10) i++;
      else if (b === 13 && i + 1 < n && buf[i + 1] === 10) i += 2;
      else break row;`
    : `if (buf[i] !== ${delimiter}) break row;
      i++;`;
}

function required(field: string): string {
  return `${SCAN}
      b = buf[s];
      if (i === s || b === 32 || b === 9) {
        if (i === s && b === 34) {
          ${quoted(field, REQUIRED)}
        } else if (!hasText(buf, s, i)) {
          break row;
        }
      }`;
}

/**
 * A date cell: `readDay`'s rule inlined on exactly ten bytes (a call per row costs about 7% of
 * the validator's speed), with the rule's own digit table and month lengths; anything else, a
 * quoted cell aside, goes to the state machine, which calls `isDate`. A test holds the two
 * together on every year, month and day form.
 */
function date(field: string): string {
  return `if (i + 10 >= n || buf[i + 4] !== 45 || buf[i + 7] !== 45) {
        ${quoted(field, DATE)}
      } else {
        y = D[buf[i]] * 1000 + D[buf[i + 1]] * 100 + D[buf[i + 2]] * 10 + D[buf[i + 3]];
        m = D[buf[i + 5]] * 10 + D[buf[i + 6]];
        d = D[buf[i + 8]] * 10 + D[buf[i + 9]];
        if (y > 9999 || y === 0 || (m - 1) >>> 0 > 11) break row;
        if ((d - 1) >>> 0 > 27 && (d === 0 || d > daysInMonth(y, m))) break row;
        i += 10;
      }`;
}

/** A metric candidate: the common number forms inline, anything else through `numberKind`. */
function metric(field: string, last: boolean, delimiter: number): string {
  const decimalComma = delimiter === 0x3b;
  const isEnd = last ? "(b === 10 || b === 13)" : `b === ${delimiter}`;
  const isPoint = decimalComma ? "(b === 46 || b === 44)" : "b === 46";
  return `if (kinds[${field}] === ${METRIC}) {
        b = buf[i];
        while (b >= 48 && b <= 57) b = buf[++i];
        d = i - s;
        y = d;
        z = 1;
        if (${isPoint}) {
          b = buf[++i];
          e = i;
          while (b >= 48 && b <= 57) {
            if (b !== 48) z = 0;
            b = buf[++i];
          }
          y += i - e;
        }
        if (${isEnd} && y !== 0 && i - s <= ${MAX_CHECKED_CELL}) {
          if (d === 1 && z === 1 && buf[s] < 50) found[${field}] |= 1;
          else found[${field}] = 3;
        } else if (!(${isEnd} && i === s)) {
          ${SCAN}
          if (i === s && buf[s] === 34) {
            ${quoted(field, METRIC)}
          } else {
            cells.metric(${field}, numberKind(buf, s, i, ${decimalComma}));
          }
        }
      } else {
        ${SCAN}
        if (i === s && buf[s] === 34) {
          ${quoted(field, METRIC)}
        }
      }`;
}

function cell(kind: number, field: string, last: boolean, delimiter: number): string {
  const check = kind === REQUIRED
    ? required(field)
    : kind === DATE
    ? date(field)
    : metric(field, last, delimiter);
  return `s = i;
      ${check}
      ${terminator(last, delimiter)}`;
}

/**
 * The functions compiled so far, by the inputs of their source: the columns' checks, the
 * delimiter and the longest line. Uploads of one header share one (compiling it took some 14 µs
 * of a tiny upload, 2026-12-03); past `MAX_COMPILED` shapes the cache starts again.
 */
const compiled = new Map<string, FastRows>();
const MAX_COMPILED = 256;

/**
 * The fast path for a header whose columns have the checks `kinds[0..fieldCount)`
 * (`REQUIRED`, `DATE` or `METRIC`; a metric candidate that turns out to be a dimension is read
 * from `kinds` at run time).
 */
export function compileFastRows(
  kinds: Uint8Array,
  fieldCount: number,
  options: FastRowsOptions,
): FastRows {
  const key = `${options.delimiter} ${options.maxLineBytes} ${kinds.subarray(0, fieldCount)}`;
  let fastRows = compiled.get(key);
  if (fastRows === undefined) {
    if (compiled.size >= MAX_COMPILED) compiled.clear();
    compiled.set(key, fastRows = compile(kinds, fieldCount, options));
  }
  return fastRows;
}

function compile(kinds: Uint8Array, fieldCount: number, options: FastRowsOptions): FastRows {
  const { delimiter, maxLineBytes } = options;
  const parts: string[] = [];
  let field = 0;
  while (field < fieldCount) {
    const kind = kinds[field];
    let run = field;
    while (kind === METRIC && run + 1 < fieldCount - 1 && kinds[run + 1] === METRIC) run++;
    if (run - field + 1 > UNROLL) {
      parts.push(`for (let f = ${field}; f <= ${run}; f++) {
      ${cell(METRIC, "f", false, delimiter)}
      }`);
      field = run + 1;
    } else {
      parts.push(cell(kind, String(field), field === fieldCount - 1, delimiter));
      field++;
    }
  }
  const body = parts.join("\n      ");
  const source = `"use strict";
  return function fastRows(buf, i, n, cx) {
    const cells = cx.cells, kinds = cells.kinds, found = cells.found, cl = cx.classes, u8 = cx.utf8;
    const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    let rowStart = i, rows = 0, b = 0, s = 0, e = 0, d = 0, m = 0, y = 0, z = 0, w = 0;
    row: while (i < n) {
      ${delimiter === 0x2c ? body : body.replaceAll(WORDS, "")}
      if (i - rowStart > ${maxLineBytes}) break;
      rows++;
      rowStart = i;
    }
    cx.rows = rows;
    return rowStart;
  };`;
  const factory = new Function(
    "hasText",
    "numberKind",
    "daysInMonth",
    "quotedCell",
    "D",
    source,
  );
  return factory(hasText, numberKind, daysInMonth, quotedCell, DIGIT_VALUES) as FastRows;
}
