/**
 * The per-user pass of the aggregation: receives CSV rows as byte ranges, reads their cells into a
 * batch, then looks the batch's users up together and keeps, per user, the
 * variant, the first day and per metric column the sum and the first days with a value and with
 * a 1, in a `UserTable` record. Non-zero metric cells are also logged with their day (a
 * `ValueLog`), because the daily sums can only drop a user seen in two variants at the end.
 * `summarize` (in `_summary.ts`) turns this state into the `Aggregate`.
 */
import { DAY_LIMIT, hasText, isBinaryCell, readDay, readNumber } from "./_csv_cells.ts";
import type { CsvRowSink } from "./_csv_rows.ts";
import { hashId, UserTable } from "./_user_table.ts";
import { ValueLog } from "./_value_log.ts";

export type MetricKind = "conversion" | "numeric";

/** A user's variant word once the user was seen in two variants. */
export const EXCLUDED = -1;

/**
 * Record layout, in 32-bit words: 0 id length (the table's), 1 variant, then the doubles (per
 * metric column its sum, and for columns read as conversion by the caller's setting also the
 * maximum), then the first day, per metric column the first days with a value and with a 1, and
 * for columns read as conversion by the setting the first day with a 0. For two metric columns
 * and a 20-byte id that makes 64 bytes.
 *
 * Days are stored as `DAY_LIMIT - day`, so that 0 (a fresh record) means "none" and a later
 * day is a smaller number: "first day" is a plain maximum.
 */
export const VARIANT_WORD = 1;

const SPACE = 0x20;
const TAB = 0x09;
/**
 * Rows read before their users are looked up together (see `UserTable.warm`): enough for the
 * cache misses to overlap, few enough for the batch to stay in the cache.
 */
const BATCH = 256;
/** Variants compared byte by byte before falling back to a `Map` of decoded names. */
const LINEAR_VARIANTS = 64;

export class Tally implements CsvRowSink {
  rows = 0;
  excluded = 0;
  users = new UserTable(2);
  readonly variantNames: string[] = [];
  /** Days seen, in order of appearance. */
  readonly days: number[] = [];
  /** Metric candidates: every column but user_id, variant and date. */
  metricNames: string[] = [];
  /** Record words (see above): the first day, and per metric column its fields (-1: none). */
  firstDayWord = 2;
  sumWord = new Int32Array(0);
  maxWord = new Int32Array(0);
  firstValueWord = new Int32Array(0);
  firstOneWord = new Int32Array(0);
  firstZeroWord = new Int32Array(0);
  /** 1 while every non-empty cell was a number. */
  candidate = new Uint8Array(0);
  /** 1 once a cell had a value. */
  hasValue = new Uint8Array(0);
  /** 1 while every value was written as 0 or 1. */
  binary = new Uint8Array(0);
  /** 1 for columns read as conversion by the caller's setting (they keep maximum and first 0). */
  forcedConversion = new Uint8Array(0);
  /** Non-zero values per candidate; dropped with the candidate. */
  logs: (ValueLog | null)[] = [];

  readonly #kinds: Readonly<Record<string, MetricKind>>;
  #userField = 0;
  #variantField = 0;
  #dayField = 0;
  #metricField = new Int32Array(0);
  #decimalComma = false;
  #daySeen = new Uint8Array(0);
  readonly #variantBytes: Uint8Array[] = [];
  readonly #variantIndex = new Map<string, number>();
  #lastVariant = -1;
  // The batch: per row the id (copied to #ids, each from a 4-byte boundary), its hash, the variant, the day and the values.
  #batchSize = 0;
  #ids = new Uint8Array(BATCH * 32);
  #idWords = new Int32Array(this.#ids.buffer);
  #idFill = 0;
  readonly #idStart = new Int32Array(BATCH);
  readonly #idLength = new Int32Array(BATCH);
  readonly #hash = new Int32Array(BATCH);
  readonly #batchVariant = new Int32Array(BATCH);
  readonly #batchDay = new Int32Array(BATCH);
  /** Per row and metric column: the value, or NaN when empty. */
  #values = new Float64Array(0);
  #warmth = 0;
  readonly #decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

  constructor(kinds: Readonly<Record<string, MetricKind>> = {}) {
    this.#kinds = kinds;
  }

  header(names: string[], delimiter: "," | ";"): void {
    const field = (name: string): number => {
      const found = names.indexOf(name);
      if (found < 0) throw new Error(`Cannot read CSV: the header has no ${name} column`);
      return found;
    };
    const seen = new Set<string>();
    for (const name of names) {
      if (seen.has(name)) {
        throw new Error(`Cannot read CSV: the column name "${name}" appears twice`);
      }
      seen.add(name);
    }
    this.#userField = field("user_id");
    this.#variantField = field("variant");
    this.#dayField = field("date");
    this.#decimalComma = delimiter === ";";
    const metricFields = names.flatMap((name, i) =>
      name === "user_id" || name === "variant" || name === "date" ? [] : [i]
    );
    const count = metricFields.length;
    this.metricNames = metricFields.map((i) => names[i]);
    this.#metricField = Int32Array.from(metricFields);
    this.candidate = new Uint8Array(count).fill(1);
    this.hasValue = new Uint8Array(count);
    this.binary = new Uint8Array(count).fill(1);
    this.forcedConversion = Uint8Array.from(
      this.metricNames,
      (name) => Object.hasOwn(this.#kinds, name) && this.#kinds[name] === "conversion" ? 1 : 0,
    );
    this.logs = metricFields.map(() => new ValueLog());
    let words = 2;
    const next = (size: number) => (words += size) - size;
    this.sumWord = Int32Array.from(this.metricNames, () => next(2));
    this.maxWord = Int32Array.from(this.forcedConversion, (flag) => flag ? next(2) : -1);
    this.firstDayWord = next(1);
    this.firstValueWord = Int32Array.from(this.metricNames, () => next(1));
    this.firstOneWord = Int32Array.from(this.metricNames, () => next(1));
    this.firstZeroWord = Int32Array.from(this.forcedConversion, (flag) => flag ? next(1) : -1);
    this.users = new UserTable(words);
    this.#values = new Float64Array(BATCH * count);
    this.#daySeen = new Uint8Array(DAY_LIMIT);
  }

  /**
   * Reads the row's cells into the batch (the id bytes are copied, so the batch does not depend
   * on `buf`) and learns which columns are numbers; the batch goes to the users when full.
   */
  row(buf: Uint8Array, start: Int32Array, end: Int32Array, line: number): void {
    this.rows++;
    const r = this.#batchSize;
    let s = start[this.#userField];
    let e = end[this.#userField];
    if (s < e && (isBlank(buf[s]) || isBlank(buf[e - 1]))) {
      while (s < e && isBlank(buf[s])) s++;
      while (e > s && isBlank(buf[e - 1])) e--;
    }
    const length = e - s;
    let at = this.#idFill;
    if (at + length + 4 > this.#ids.length) {
      this.#growIds(at + length + 4);
      at = this.#idFill;
    }
    const ids = this.#ids;
    for (let i = 0; i < length; i++) ids[at + i] = buf[s + i];
    let padded = at + length;
    while ((padded & 3) !== 0) ids[padded++] = 0;
    this.#idFill = padded;
    this.#idStart[r] = at >> 2;
    this.#idLength[r] = length;
    this.#hash[r] = hashId(this.#idWords, at >> 2, length);
    this.#batchVariant[r] = this.#variant(buf, start[this.#variantField], end[this.#variantField]);
    const day = readDay(buf, start[this.#dayField], end[this.#dayField]);
    if (day < 0) {
      const text = this.#decoder.decode(buf.subarray(start[this.#dayField], end[this.#dayField]));
      throw new Error(`Cannot parse line ${line}: the date "${text}" is not written YYYY-MM-DD`);
    }
    if (this.#daySeen[day] === 0) {
      this.#daySeen[day] = 1;
      this.days.push(day);
    }
    this.#batchDay[r] = day;
    const candidate = this.candidate;
    const metricField = this.#metricField;
    const count = metricField.length;
    const values = this.#values;
    for (let k = 0; k < count; k++) {
      values[r * count + k] = NaN;
      if (candidate[k] === 0) continue;
      s = start[metricField[k]];
      e = end[metricField[k]];
      if (s === e) continue;
      const x = readNumber(buf, s, e, this.#decimalComma);
      if (x !== x) {
        if (hasText(buf, s, e)) this.#drop(k);
        continue;
      }
      values[r * count + k] = x;
      this.hasValue[k] = 1;
      if (
        this.binary[k] === 1 &&
        ((x !== 0 && x !== 1) || (e - s > 1 && !isBinaryCell(buf, s, e, this.#decimalComma)))
      ) this.binary[k] = 0;
    }
    if (++this.#batchSize === BATCH) this.flush();
  }

  /** Adds the batched rows to their users. */
  flush(): void {
    const size = this.#batchSize;
    const users = this.users;
    this.#warmth = users.warm(this.#hash, this.#idLength, size);
    const count = this.#metricField.length;
    const values = this.#values;
    const candidate = this.candidate;
    for (let r = 0; r < size; r++) {
      const record = users.lookup(
        this.#idWords,
        this.#idStart[r],
        this.#idLength[r],
        this.#hash[r],
      );
      const variant = this.#batchVariant[r];
      const day = this.#batchDay[r];
      const first = DAY_LIMIT - day;
      const i32 = users.i32;
      const w = 2 * record;
      const firstDayWord = w + this.firstDayWord;
      if (users.isNew) {
        i32[w + VARIANT_WORD] = variant;
        i32[firstDayWord] = first;
      } else {
        const known = i32[w + VARIANT_WORD];
        if (known !== variant) {
          if (known !== EXCLUDED) {
            i32[w + VARIANT_WORD] = EXCLUDED;
            this.excluded++;
          }
          continue;
        }
        if (first > i32[firstDayWord]) i32[firstDayWord] = first;
      }
      const f64 = users.f64;
      for (let k = 0; k < count; k++) {
        const x = values[r * count + k];
        if (x !== x || candidate[k] === 0) continue;
        const firstValue = w + this.firstValueWord[k];
        const fresh = i32[firstValue] === 0;
        f64[(w + this.sumWord[k]) >> 1] += x;
        if (first > i32[firstValue]) i32[firstValue] = first;
        if (x === 1) {
          const firstOne = w + this.firstOneWord[k];
          if (first > i32[firstOne]) i32[firstOne] = first;
        }
        if (this.forcedConversion[k] === 1) {
          const max = (w + this.maxWord[k]) >> 1;
          if (fresh || x > f64[max]) f64[max] = x;
          const firstZero = w + this.firstZeroWord[k];
          if (x === 0 && first > i32[firstZero]) i32[firstZero] = first;
        }
        if (x !== 0) this.logs[k]!.append(record, day, x);
      }
    }
    this.#batchSize = 0;
    this.#idFill = 0;
  }

  #growIds(length: number): void {
    const ids = new Uint8Array(Math.max(length + 3, 2 * this.#ids.length) & ~3);
    ids.set(this.#ids.subarray(0, this.#idFill));
    this.#ids = ids;
    this.#idWords = new Int32Array(ids.buffer);
  }

  /** Stops accumulating column `k`: a cell held text, so it is a dimension. */
  #drop(k: number): void {
    this.candidate[k] = 0;
    this.logs[k] = null;
  }

  /** The index of the variant named `buf[start..end)`, registering a new one. */
  #variant(buf: Uint8Array, start: number, end: number): number {
    while (start < end && isBlank(buf[start])) start++;
    while (end > start && isBlank(buf[end - 1])) end--;
    const known = this.#variantBytes;
    const last = this.#lastVariant;
    if (last >= 0 && sameBytes(known[last], buf, start, end)) return last;
    const linear = Math.min(known.length, LINEAR_VARIANTS);
    for (let v = 0; v < linear; v++) {
      if (sameBytes(known[v], buf, start, end)) return this.#lastVariant = v;
    }
    const name = this.#decoder.decode(buf.subarray(start, end));
    let v = this.#variantIndex.get(name);
    if (v === undefined) {
      v = this.variantNames.length;
      this.variantNames.push(name);
      known.push(buf.slice(start, end));
      this.#variantIndex.set(name, v);
    }
    return this.#lastVariant = v;
  }
}

function isBlank(b: number): boolean {
  return b === SPACE || b === TAB;
}

function sameBytes(a: Uint8Array, buf: Uint8Array, start: number, end: number): boolean {
  if (a.length !== end - start) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== buf[start + i]) return false;
  return true;
}
