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
 * One reader for every row, behind the splitter's field ranges (`_csv_rows.ts`). A one-pass
 * reader of plain rows straight from the chunk beside it made the insight benchmark's 201 → ready
 * of a direct upload 3 % shorter, and a two-step delivery's 10 % (2026-12-02), under the 20 % a
 * second reader must earn (docs/performance.md, "Reading the CSV").
 *
 * Full batches go to a `BatchSink`, in the order of the rows: a `UserTally` on this thread, or the
 * aggregation's worker, which keeps every user (on two processors the reading is the longer half
 * of the work, so the worker takes all of the table's, see `_aggregate_threaded.ts`).
 */
import { DAY_LIMIT, invalidDateError, readDay } from "../../csv/calendar_date.ts";
import { decimalComma, type Delimiter } from "../../csv/delimiter.ts";
import { emptyCellError, isBlank } from "../../csv/has_text.ts";
import type { Header } from "../../csv/header.ts";
import { BINARY, EMPTY, NUMBER, numberKind, TEXT } from "../../csv/number_kind.ts";
import { ONE, ZERO } from "../../csv/bytes.ts";
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
    const metricFields = names.flatMap((name, i) =>
      name === "user_id" || name === "variant" || name === "date" ? [] : [i]
    );
    const count = metricFields.length;
    this.metricNames = metricFields.map((i) => names[i]);
    this.#metricField = Int32Array.from(metricFields);
    this.candidate = new Uint8Array(count).fill(1);
    this.hasValue = new Uint8Array(count);
    this.binary = new Uint8Array(count).fill(1);
    this.dictionaries = this.#dimensions ? this.metricNames.map(() => new ValueDictionary()) : [];
    this.#bitIds = new Int32Array(2 * count).fill(UNKNOWN_ID);
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
