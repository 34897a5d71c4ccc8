/**
 * The first half of the aggregation: receives CSV rows as byte ranges and reads the cells the
 * user pass needs into `RowBatch`es (the id, copied and hashed; the variant as an index; the date
 * as a day number; each metric candidate's value; with dimensions tracked, each column's value
 * id in its `ValueDictionary`), and learns along the way which columns are numbers (metric
 * candidates), which hold only 0/1, which variants and days occur and how many rows each day has.
 * Cells are read by the rules of `src/csv/` (`hasText`'s blanks, `readDay`, `numberKind`), so a
 * column is a metric of a kind exactly when the upload checks say so; a cell that breaks a rule
 * throws its `CsvError`, naming the row's first line.
 *
 * Most rows are plain (no quotes, no blanks around the id and variant, a known variant, plain
 * numbers): `plainRows` reads those straight from the chunk in one pass, each cell as its end is
 * found, a number's digits as they are scanned, a date's bytes where they stand (a dictionary's
 * lookups, too large for the loop, wait for the end of the call). It stops at the first row that is
 * not plain, which the splitter reads the general way (`row`). Both read a row alike, which
 * `tests/analysis/aggregate/plain_rows_test.ts` checks on the corpus and mutated files. It is the
 * one fast path the reading keeps, for its figure end to end: without it the insight benchmark's
 * 201 → `ready` took 1.22 times as long for a direct upload and 1.38 times for a two-step
 * delivery, the reading thread's processor time 2.05 s against 1.53 s (2026-12-03;
 * docs/performance.md, "Reading the CSV").
 *
 * Full batches go to a `BatchSink`, in the order of the rows: a `UserTally` on this thread, or the
 * aggregation's worker, which keeps every user (on two processors the reading is the longer half
 * of the work, so the worker takes all of the table's, see `_aggregate_threaded.ts`).
 */
import {
  DAY_LIMIT,
  daysInMonth,
  DIGIT_VALUES,
  invalidDateError,
  readDay,
} from "../../csv/calendar_date.ts";
import { decimalComma, type Delimiter, delimiterByte } from "../../csv/delimiter.ts";
import { emptyCellError, isBlank } from "../../csv/has_text.ts";
import type { Header } from "../../csv/header.ts";
import {
  BINARY,
  EMPTY,
  EXACT_LIMIT,
  NUMBER,
  numberKind,
  POWERS_OF_TEN,
  TEXT,
} from "../../csv/number_kind.ts";
import { COMMA, CR, DOT, LF, MINUS, ONE, QUOTE, ZERO } from "../../csv/bytes.ts";
import { MAX_CHECKED_CELL } from "../../csv/limits.ts";
import type { CsvRowSink } from "./_csv_rows.ts";
import { batchBuffers, newBatch, type RowBatch } from "./_row_batch.ts";
import { giveBack } from "./_memory.ts";
import { copyId } from "./_user_table.ts";
import {
  DIMENSION_VALUE_LIMIT,
  DISTINCT_COUNT_LIMIT,
  ValueDictionary,
} from "./_value_dictionary.ts";

export type MetricKind = "conversion" | "numeric";

/** Takes a full batch and answers an empty one to fill next. */
export type BatchSink = (batch: RowBatch) => RowBatch;

/** What the reader learned, as the summary needs it. */
export interface ReaderFindings {
  rows: number;
  variantNames: string[];
  /** Days seen, in order of appearance. */
  days: number[];
  /** Rows per day: day `d`'s count is `dayRows[d - dayBase]` (a window over the days seen). */
  dayRows: Int32Array;
  dayBase: number;
  /** Every column but user_id, variant and date, in header order. */
  metricNames: string[];
  /** Per metric column: 1 while every non-empty cell was a number. */
  candidate: Uint8Array;
  /** Per metric column: 1 once a cell held a number. */
  hasValue: Uint8Array;
  /** Per metric column: 1 while every value was written as 0 or 1. */
  binary: Uint8Array;
  /**
   * Per metric column: its distinct values (with the dimension's per-user values in the batches),
   * or empty when dimensions are not tracked. A numeric column's values are no longer counted
   * once it has more than `DIMENSION_VALUE_LIMIT` of them, unless it turns out to hold text.
   */
  dictionaries: ValueDictionary[];
}

/** Days on either side of the first date read that the window of days seen starts with. */
const DAY_WINDOW = 4 * 372;
/** In `#bitIds`: not asked of the dictionary yet. */
const UNKNOWN_ID = -2;
/** Variants compared byte by byte before falling back to a `Map` of decoded names. */
const LINEAR_VARIANTS = 64;
/** Cells whose value ids one `plainRows` call leaves to its end, at most. */
const PENDING_CELLS = 4096;
/** A field's role in `plainRows` (a metric column's is its index, from 0). */
const USER_ROLE = -1;
const VARIANT_ROLE = -2;
const DATE_ROLE = -3;

export class RowReader implements CsvRowSink, ReaderFindings {
  rows = 0;
  readonly variantNames: string[] = [];
  readonly days: number[] = [];
  metricNames: string[] = [];
  candidate = new Uint8Array(0);
  hasValue = new Uint8Array(0);
  binary = new Uint8Array(0);
  /** Rows per day from day `dayBase` on (a window that grows as dates need). */
  dayRows = new Int32Array(0);
  dayBase = 0;
  dictionaries: ValueDictionary[] = [];
  /** Rows the last `plainRows` read. */
  plainTaken = 0;

  readonly #kinds: Readonly<Record<string, MetricKind>>;
  readonly #batchRows: number;
  readonly #open: (forcedConversion: Uint8Array, header: Header) => BatchSink;
  /** Where full batches go, the batch being filled (none before the header), its next id's word. */
  #sink: BatchSink | null = null;
  #batch: RowBatch | null = null;
  #idFill = 0;
  #userField = 0;
  #variantField = 0;
  #dayField = 0;
  #metricField = new Int32Array(0);
  /** Per field: its role in `plainRows` (`USER_ROLE`, …, or the metric column's index). */
  #roles = new Int32Array(0);
  #delimiter = 0;
  #decimalComma = false;
  /** Where `numberKind` writes a number's value. */
  readonly #value = new Float64Array(1);
  readonly #dimensions: boolean;
  readonly #variantBytes: Uint8Array[] = [];
  readonly #variantIndex = new Map<string, number>();
  /** Per variant: its name as a `shortKey` (-1 when longer). */
  readonly #variantKeys: number[] = [];
  #lastVariant = -1;
  readonly #decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  /** Per metric column: the value ids of a lone `0` and a lone `1` (`UNKNOWN_ID` until asked). */
  #bitIds = new Int32Array(0);
  /** Per metric column, during `plainRows`: 1 while its dictionary takes values. */
  #counting = new Uint8Array(0);
  /**
   * Cells `plainRows` read whose value ids it leaves to `#plainEnd` (the dictionary's lookup
   * stays out of its loop): four words each, the column, the cell's start and end, and its place
   * in the batch.
   */
  #pending = new Int32Array(0);

  /**
   * `kinds` are the caller's metric kinds by column name; batches hold `batchRows` rows; `open`
   * is called once the header is read, with 1 per metric column read as conversion by `kinds`
   * and the header, and answers where full batches go. With `dimensions`, every metric column's
   * values are looked up in its dictionary as well.
   */
  constructor(
    kinds: Readonly<Record<string, MetricKind>>,
    batchRows: number,
    open: (forcedConversion: Uint8Array, header: Header) => BatchSink,
    dimensions = false,
  ) {
    this.#kinds = kinds;
    this.#batchRows = batchRows;
    this.#open = open;
    this.#dimensions = dimensions;
  }

  /** The header, checked by `parseHeader`: the names are unique and include the required ones. */
  header(names: string[], delimiter: Delimiter): void {
    this.#userField = names.indexOf("user_id");
    this.#variantField = names.indexOf("variant");
    this.#dayField = names.indexOf("date");
    this.#decimalComma = decimalComma(delimiter);
    this.#delimiter = delimiterByte(delimiter);
    const metricFields = names.flatMap((name, i) =>
      name === "user_id" || name === "variant" || name === "date" ? [] : [i]
    );
    const count = metricFields.length;
    this.metricNames = metricFields.map((i) => names[i]);
    this.#metricField = Int32Array.from(metricFields);
    this.#roles = Int32Array.from(
      names,
      (name, i) =>
        name === "user_id"
          ? USER_ROLE
          : name === "variant"
          ? VARIANT_ROLE
          : name === "date"
          ? DATE_ROLE
          : metricFields.indexOf(i),
    );
    this.candidate = new Uint8Array(count).fill(1);
    this.hasValue = new Uint8Array(count);
    this.binary = new Uint8Array(count).fill(1);
    this.dictionaries = this.#dimensions ? this.metricNames.map(() => new ValueDictionary()) : [];
    this.#bitIds = new Int32Array(2 * count).fill(UNKNOWN_ID);
    this.#counting = new Uint8Array(count);
    this.#pending = new Int32Array(this.#dimensions ? 4 * PENDING_CELLS : 0);
    const forced = Uint8Array.from(
      this.metricNames,
      (name) => Object.hasOwn(this.#kinds, name) && this.#kinds[name] === "conversion" ? 1 : 0,
    );
    this.#sink = this.#open(forced, { delimiter, names });
    this.#take(newBatch(this.#batchRows, count, this.#dimensions));
  }

  /**
   * Reads the row's cells into the batch (the id bytes are copied, so the batch does not depend
   * on `buf`) and learns which columns are numbers; hands the batch over when full.
   */
  row(buf: Uint8Array, start: Int32Array, end: Int32Array, line: number): void {
    let s = start[this.#userField];
    let e = end[this.#userField];
    if (s === e || isBlank(buf[s]) || isBlank(buf[e - 1])) {
      while (s < e && isBlank(buf[s])) s++;
      while (e > s && isBlank(buf[e - 1])) e--;
      if (s === e) throw emptyCellError("user_id", line);
    }
    const batch = this.#batch!;
    const r = batch.size;
    const words = this.#id(buf, s, e, r);
    batch.variant[r] = this.#variant(buf, start[this.#variantField], end[this.#variantField], line);
    const day = readDay(buf, start[this.#dayField], end[this.#dayField]);
    if (day < 0) {
      throw invalidDateError(buf.subarray(start[this.#dayField], end[this.#dayField]), line);
    }
    const seen = day - this.dayBase;
    if (seen < 0 || seen >= this.dayRows.length) this.#widenDays(day);
    else if (this.dayRows[seen]++ === 0) this.days.push(day);
    batch.day[r] = day;
    const metricField = this.#metricField;
    for (let k = 0; k < metricField.length; k++) {
      this.#cell(buf, start[metricField[k]], end[metricField[k]], r, k);
    }
    this.#commit(words);
  }

  /**
   * Reads the plain rows that begin at `buf[pos]`, as `row` would read them, up to the first row
   * that is not plain or does not end before `end`; answers where that row starts (the caller
   * splits it the general way). Plain: every field unquoted with no quote inside, as many fields
   * as the header, a line feed (or CR LF) at the end, a user id and a variant already seen without
   * blanks around them, a date inside the window of days seen. `plainTaken` tells how many rows
   * it read (each one line). Nothing of a row that is not read stays behind: it is read again.
   *
   * One pass over the bytes, each cell read as its end is found, instead of the split into field
   * ranges and a second pass over them: the reading thread's share of the aggregation.
   */
  plainRows(buf: Uint8Array, pos: number, end: number): number {
    this.plainTaken = 0;
    const batch = this.#batch;
    const roles = this.#roles;
    const fields = roles.length;
    if (batch === null || fields === 0) return pos;
    const delimiter = this.#delimiter;
    const candidate = this.candidate;
    const count = this.#metricField.length;
    // With dimensions tracked, the cells of the columns whose dictionaries take values (as they
    // did when the call began: none takes values again) are looked up at the end, in order.
    const counting = this.#counting;
    const dims = this.dictionaries.length > 0 ? batch.dims : null;
    if (dims !== null) {
      for (let k = 0; k < count; k++) counting[k] = this.#counts(k) ? 1 : 0;
    }
    const pending = this.#pending;
    let waiting = 0;
    // Everything the loop touches, in locals.
    const { hash, idStart, idLength, ids, variant, day: days, values } = batch;
    const bitIds = this.#bitIds;
    const keys = this.#variantKeys;
    const variants = Math.min(keys.length, LINEAR_VARIANTS);
    const dayRows = this.dayRows;
    const dayBase = this.dayBase;
    const separator = this.#decimalComma ? COMMA : DOT;
    /** Rows this call may add: a full batch is handed over, and the next call fills the next. */
    const room = this.#batchRows - batch.size;
    let r = batch.size;
    let fill = this.#idFill;
    let taken = 0;
    let i = pos;
    // With dimensions tracked, a row may leave as many cells as there are columns.
    const most = dims === null ? 0 : pending.length - 4 * count;
    while (i < end && taken < room && waiting <= most) {
      const rowStart = i;
      const rowWaiting = waiting;
      let rowDay = -1;
      let words = 0;
      for (let f = 0;; f++) {
        const s = i;
        const role = roles[f];
        let b = 0;
        if (role >= 0 && candidate[role] === 1) {
          // A number's digits are read as they are scanned (the value and kind `numberKind`
          // answers for digits with at most one separator, exact by Clinger's fast path).
          let mantissa = 0;
          let digits = 0;
          let decimals = -1;
          let fraction = 0;
          for (; i < end; i++) {
            b = buf[i];
            const d = b - ZERO;
            if (d >= 0 && d <= 9) {
              mantissa = mantissa * 10 + d;
              digits++;
              if (decimals >= 0) {
                decimals++;
                fraction |= d;
              }
            } else if (b === separator && decimals < 0) decimals = 0;
            else break;
          }
          const cell = i;
          if (b === CR && i + 1 < end && buf[i + 1] === LF) b = buf[++i]; // CR LF ends the row
          if (
            i >= end || (b !== delimiter && b !== LF) || (digits === 0 && cell !== s) ||
            cell - s > MAX_CHECKED_CELL || mantissa >= EXACT_LIMIT || decimals > 22
          ) {
            return this.#plainEnd(buf, rowStart, r, fill, taken, rowWaiting);
          }
          const at = r * count + role;
          if (digits === 0) values[at] = NaN; // an empty cell
          else {
            const places = decimals < 0 ? 0 : decimals;
            values[at] = places === 0 ? mantissa : mantissa / POWERS_OF_TEN[places];
            // As `numberKind` tells 0/1 from other numbers (no sign here).
            const one = digits - places === 1 && buf[s] <= ONE && fraction === 0;
            this.#learn(role, one ? BINARY : NUMBER);
          }
          if (dims !== null) {
            // A lone 0 or 1 whose value id is known has it at once.
            let id = -1;
            if (counting[role] === 1) {
              id = cell - s === 1 && buf[s] <= ONE ? bitIds[2 * role + buf[s] - ZERO] : UNKNOWN_ID;
              if (id === UNKNOWN_ID) {
                pending[waiting++] = role;
                pending[waiting++] = s;
                pending[waiting++] = cell;
                pending[waiting++] = at;
              }
            }
            dims[at] = id;
          }
        } else {
          for (; i < end; i++) {
            b = buf[i];
            if (b > delimiter) continue; // most bytes (letters, digits, `-` and `.` with a comma)
            if (b === delimiter || b === LF) break;
            if (b === QUOTE) return this.#plainEnd(buf, rowStart, r, fill, taken, rowWaiting);
          }
          if (i >= end) return this.#plainEnd(buf, rowStart, r, fill, taken, rowWaiting);
          const e = b === LF && i > s && buf[i - 1] === CR ? i - 1 : i;
          if (role >= 0) {
            // A column no longer read (text).
            const at = r * count + role;
            values[at] = NaN;
            if (dims !== null) {
              dims[at] = -1;
              if (counting[role] === 1) {
                pending[waiting++] = role;
                pending[waiting++] = s;
                pending[waiting++] = e;
                pending[waiting++] = at;
              }
            }
          } else if (role === USER_ROLE) {
            if (s === e || isBlank(buf[s]) || isBlank(buf[e - 1])) {
              return this.#plainEnd(buf, rowStart, r, fill, taken, rowWaiting);
            }
            const length = e - s;
            words = (length + 3) >> 2;
            if (fill + words > ids.length) {
              return this.#plainEnd(buf, rowStart, r, fill, taken, rowWaiting);
            }
            hash[r] = copyId(buf, s, e, ids, fill);
            idStart[r] = fill;
            idLength[r] = length;
          } else if (role === VARIANT_ROLE) {
            const length = e - s;
            let v = -1;
            if (length > 0 && length <= 3 && !isBlank(buf[s]) && !isBlank(buf[e - 1])) {
              // A short name: one integer comparison per known variant.
              const key = shortKey(buf, s, e);
              for (let w = 0; w < variants; w++) {
                if (keys[w] === key) {
                  v = w;
                  break;
                }
              }
            } else v = this.#knownVariant(buf, s, e);
            if (v < 0) return this.#plainEnd(buf, rowStart, r, fill, taken, rowWaiting);
            variant[r] = v;
          } else {
            // A date `YYYY-MM-DD` without blanks around, read as `readDay` reads it.
            if (e - s !== 10 || buf[s + 4] !== MINUS || buf[s + 7] !== MINUS) {
              return this.#plainEnd(buf, rowStart, r, fill, taken, rowWaiting);
            }
            const year = 1000 * DIGIT_VALUES[buf[s]] + 100 * DIGIT_VALUES[buf[s + 1]] +
              10 * DIGIT_VALUES[buf[s + 2]] + DIGIT_VALUES[buf[s + 3]];
            const month = 10 * DIGIT_VALUES[buf[s + 5]] + DIGIT_VALUES[buf[s + 6]];
            const date = 10 * DIGIT_VALUES[buf[s + 8]] + DIGIT_VALUES[buf[s + 9]];
            if (
              year === 0 || year > 9999 || month < 1 || month > 12 || date < 1 ||
              (date > 28 && date > daysInMonth(year, month))
            ) {
              return this.#plainEnd(buf, rowStart, r, fill, taken, rowWaiting);
            }
            rowDay = year * 372 + (month - 1) * 31 + date - 1;
            const seen = rowDay - dayBase;
            if (seen < 0 || seen >= dayRows.length) {
              return this.#plainEnd(buf, rowStart, r, fill, taken, rowWaiting);
            }
          }
        }
        i++;
        // As many fields as the header, no fewer, no more.
        if ((b === LF) !== (f === fields - 1)) {
          return this.#plainEnd(buf, rowStart, r, fill, taken, rowWaiting);
        }
        if (b === LF) break;
      }
      if (dayRows[rowDay - dayBase]++ === 0) this.days.push(rowDay);
      days[r] = rowDay;
      fill += words;
      r++;
      taken++;
    }
    return this.#plainEnd(buf, i, r, fill, taken, waiting);
  }

  /**
   * Ends a `plainRows` call that read `taken` rows of `buf` (the batch now holds `size`, its ids
   * `fill` words) and stopped at `at`: looks up the value ids of the first `waiting` words of
   * pending cells, in order, records the rows, hands the batch over when full, answers `at`.
   */
  #plainEnd(
    buf: Uint8Array,
    at: number,
    size: number,
    fill: number,
    taken: number,
    waiting: number,
  ): number {
    const pending = this.#pending;
    for (let p = 0; p < waiting; p += 4) {
      const k = pending[p];
      const s = pending[p + 1];
      const e = pending[p + 2];
      // As `#cellValue` answers: a lone 0 or 1 of a column read as numbers (these are plain).
      const bit = this.candidate[k] === 1 && e - s === 1 && buf[s] <= ONE ? buf[s] - ZERO : -1;
      this.#dimension(buf, s, e, pending[p + 3], k, bit);
    }
    const batch = this.#batch!;
    batch.size = size;
    this.#idFill = fill;
    this.rows += taken;
    this.plainTaken = taken;
    if (size === this.#batchRows) this.#handOver();
    return at;
  }

  /** Hands over the rows of a partly filled batch (at the end of the input). */
  end(): void {
    if (this.#batch !== null && this.#batch.size > 0) this.#handOver();
  }

  /** Frees the batch being filled (see `giveBack`); the reading is done. */
  release(): void {
    if (this.#batch !== null) giveBack(...batchBuffers(this.#batch));
    this.#batch = null;
  }

  #handOver(): void {
    const batch = this.#batch!;
    batch.candidate.set(this.candidate);
    this.#take(this.#sink!(batch));
  }

  #take(batch: RowBatch): void {
    batch.size = 0;
    this.#batch = batch;
    this.#idFill = 0;
  }

  /** Copies and hashes the user id `buf[s..e)` into row `r` of the batch; answers its words. */
  #id(buf: Uint8Array, s: number, e: number, r: number): number {
    const length = e - s;
    const words = (length + 3) >> 2;
    if (this.#idFill + words > this.#batch!.ids.length) this.#growIds(words);
    const batch = this.#batch!;
    const at = this.#idFill;
    batch.hash[r] = copyId(buf, s, e, batch.ids, at);
    batch.idStart[r] = at;
    batch.idLength[r] = length;
    return words;
  }

  /**
   * Reads metric column `k`'s cell `buf[s..e)` of row `r`: its value (NaN when empty or not a
   * number) and, with dimensions tracked, its value id; learns whether the column holds numbers.
   */
  #cell(buf: Uint8Array, s: number, e: number, r: number, k: number): void {
    const at = r * this.#metricField.length + k;
    const bit = this.#cellValue(buf, s, e, at, k);
    if (this.dictionaries.length > 0) this.#dimension(buf, s, e, at, k, bit);
  }

  /**
   * Keeps the value id of metric column `k`'s cell `buf[s..e)` at `at` in the batch's value ids
   * (-1 when its dictionary takes no values); `bit` is 0 or 1 for a lone 0 or 1, else -1.
   */
  #dimension(buf: Uint8Array, s: number, e: number, at: number, k: number, bit: number): void {
    // A column of numbers with many values cannot be a dimension to report: not counted further
    // unless it turns out to hold text.
    let id = -1;
    if (this.#counts(k)) {
      // A lone 0 or 1: its id as the dictionary answered it the first time (ids never change
      // once given).
      const bitIds = this.#bitIds;
      id = bit < 0 ? UNKNOWN_ID : bitIds[2 * k + bit];
      if (id === UNKNOWN_ID) {
        id = this.dictionaries[k].id(buf, s, e);
        if (bit >= 0) bitIds[2 * k + bit] = id;
      }
    }
    this.#batch!.dims[at] = id;
  }

  /** Whether metric column `k`'s dictionary still takes values (see `#cell`). */
  #counts(k: number): boolean {
    const size = this.dictionaries[k].size;
    return size < DISTINCT_COUNT_LIMIT &&
      (size <= DIMENSION_VALUE_LIMIT || this.candidate[k] === 0);
  }

  /**
   * Reads the value of metric column `k`'s cell `buf[s..e)` into the batch's values at `at`
   * (NaN when empty or not a number) and learns whether the column holds numbers; answers 0 or 1
   * for a lone 0 or 1, else -1.
   */
  #cellValue(buf: Uint8Array, s: number, e: number, at: number, k: number): number {
    let kind = EMPTY;
    let bit = -1;
    const value = this.#value;
    if (this.candidate[k] === 1 && s !== e) {
      // A lone 0 or 1 (a conversion column's cell) is BINARY, as `numberKind` reads it.
      if (e - s === 1 && (buf[s] === ZERO || buf[s] === ONE)) {
        bit = buf[s] - ZERO;
        value[0] = bit;
        kind = BINARY;
      } else kind = numberKind(buf, s, e, this.#decimalComma, value);
    }
    this.#batch!.values[at] = kind === NUMBER || kind === BINARY ? value[0] : NaN;
    this.#learn(k, kind);
    return bit;
  }

  /** Learns from a cell of metric column `k` read as `kind` (`EMPTY` when not read). */
  #learn(k: number, kind: number): void {
    if (kind === NUMBER || kind === BINARY) {
      this.hasValue[k] = 1;
      if (kind === NUMBER && this.binary[k] === 1) this.binary[k] = 0;
    } else if (kind === TEXT) this.candidate[k] = 0; // a dimension: no longer read
  }

  /** The row just read is in the batch (its id taking `words` words): hands the batch over when full. */
  #commit(words: number): void {
    this.rows++;
    this.#idFill += words;
    if (++this.#batch!.size === this.#batchRows) this.#handOver();
  }

  /**
   * Records a first day outside the window of days seen: the window grows to cover it (a few
   * years at first, then doubling), so a small file never pays for the whole calendar.
   */
  #widenDays(day: number): void {
    const old = this.dayRows;
    const oldBase = this.dayBase;
    const low = old.length === 0 ? day - DAY_WINDOW : Math.min(oldBase, day - old.length);
    const high = old.length === 0
      ? day + DAY_WINDOW
      : Math.max(oldBase + old.length, day + old.length);
    const base = Math.max(0, low);
    const rows = new Int32Array(Math.min(DAY_LIMIT, high) - base);
    if (old.length > 0) rows.set(old, oldBase - base);
    this.dayRows = rows;
    this.dayBase = base;
    rows[day - base] = 1;
    this.days.push(day);
  }

  /** Makes room for `words` more words of ids in the batch. */
  #growIds(words: number): void {
    const batch = this.#batch!;
    const ids = new Int32Array(Math.max(this.#idFill + words, 2 * batch.ids.length));
    ids.set(batch.ids.subarray(0, this.#idFill));
    batch.ids = ids;
  }

  /** The index of the variant named `buf[start..end)` (on the row of `line`), registering a new one. */
  #variant(buf: Uint8Array, start: number, end: number, line: number): number {
    if (start === end || isBlank(buf[start]) || isBlank(buf[end - 1])) {
      while (start < end && isBlank(buf[start])) start++;
      while (end > start && isBlank(buf[end - 1])) end--;
      if (start === end) throw emptyCellError("variant", line);
    }
    const known = this.#knownVariant(buf, start, end);
    if (known >= 0) return known;
    const name = this.#decoder.decode(buf.subarray(start, end));
    let v = this.#variantIndex.get(name);
    if (v === undefined) {
      v = this.variantNames.length;
      this.variantNames.push(name);
      this.#variantBytes.push(buf.slice(start, end));
      this.#variantKeys.push(shortKey(buf, start, end));
      this.#variantIndex.set(name, v);
    }
    return this.#lastVariant = v;
  }

  /**
   * The index of the variant named `buf[start..end)` when it is among the first `LINEAR_VARIANTS`
   * (compared byte by byte, a short name as one integer), else -1; a blank or empty name is -1.
   */
  #knownVariant(buf: Uint8Array, start: number, end: number): number {
    if (start === end || isBlank(buf[start]) || isBlank(buf[end - 1])) return -1;
    const key = shortKey(buf, start, end);
    const keys = this.#variantKeys;
    if (key !== -1) {
      // A short name (most are: A, B, ctl, v2): one integer comparison per known variant.
      const linear = Math.min(keys.length, LINEAR_VARIANTS);
      for (let v = 0; v < linear; v++) if (keys[v] === key) return v;
      return -1;
    }
    const known = this.#variantBytes;
    const last = this.#lastVariant;
    if (last >= 0 && sameBytes(known[last], buf, start, end)) return last;
    const linear = Math.min(known.length, LINEAR_VARIANTS);
    for (let v = 0; v < linear; v++) {
      if (sameBytes(known[v], buf, start, end)) return this.#lastVariant = v;
    }
    return -1;
  }
}

/**
 * A name of at most 3 bytes `buf[start..end)` as one integer (its length, then its bytes), unique
 * to those bytes; -1 for a longer name.
 */
function shortKey(buf: Uint8Array, start: number, end: number): number {
  const length = end - start;
  if (length > 3) return -1;
  let key = length << 24;
  for (let i = 0; i < length; i++) key |= buf[start + i] << (8 * i);
  return key;
}

function sameBytes(a: Uint8Array, buf: Uint8Array, start: number, end: number): boolean {
  if (a.length !== end - start) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== buf[start + i]) return false;
  return true;
}
