/**
 * The second half of the aggregation: adds `RowBatch`es to their users. Keeps, per user, in a
 * `UserTable` record, the variant, the first day and per metric column the sum and the first
 * days with a value and with a 1 (and, with dimensions tracked, the value id of the user's first
 * row and whether a later row held another); non-zero values are also logged with their day (a `ValueLog`),
 * because the daily sums can only leave out a user seen in two variants at the end.
 */
import { DAY_LIMIT, formatDay } from "../../csv/calendar_date.ts";
import type { RowBatch } from "./_row_batch.ts";
import { UserTable } from "./_user_table.ts";
import { type LogEntries, ValueLog } from "./_value_log.ts";

/** A user's variant word once the user was seen in two variants. */
export const EXCLUDED = -1;

/** Record word of the variant. */
export const VARIANT_WORD = 1;

/** In a dimension byte: the value id + 1 of the user's first row (0: none kept). */
export const DIM_VALUE_MASK = 0x7f;
/** In a dimension byte: set once a later row of the user held another value. */
export const DIM_INCONSISTENT = 0x80;

/**
 * Rows whose users are looked up together (see `UserTable.warm`): enough for the cache misses to
 * overlap, few enough for their cache lines to stay.
 */
const WARM_ROWS = 256;

/**
 * Where a user record keeps what, in 32-bit words: 0 the id length (the table's), 1 the variant,
 * then the doubles (per metric column its sum, and for columns read as conversion by the caller's
 * setting also the maximum), then the first day, per metric column the first days with a value
 * and with a 1, and for columns read as conversion by the setting the first day with a 0; then,
 * with dimensions tracked, per metric column a dimension byte (`DIM_VALUE_MASK`,
 * `DIM_INCONSISTENT`), four to a word; then the id. For two metric columns and a 20-byte id that
 * makes 64 bytes (72 with dimensions, padded to 8) with 32-bit day fields.
 *
 * Days are stored as `dayLimit - day`, so that 0 (a fresh record) means "none" and a later
 * day is a smaller number: "first day" is a plain maximum. A word of -1 means "not kept".
 *
 * The day fields are 16 bits each (`narrowDays`) for days from 1950 to 2126 (`NARROW_DAYS`),
 * read through the arena's `Uint16Array` view, else 32 bits through its `Int32Array` view: field
 * `at` of record `record` is `days[dayScale * record + at]`. Narrow, the dimension bytes follow
 * the day fields in their words, where a word has room left (the bytes are only ever or-ed into
 * their word, so the fields beside them stay as written). A record of the benchmark's file read
 * with dimensions tracked (two metric columns, five day fields, two dimension bytes, a 20-byte id;
 * a two-step delivery) then takes 56 bytes instead of 64, as it does without them.
 * A narrow tally refuses a day outside its span (`DaysOutOfRange`); the caller then aggregates
 * again with wide days.
 */
export interface RecordLayout {
  /** Per metric column: 1 when read as conversion by the caller (maximum and first 0 kept). */
  forcedConversion: Uint8Array;
  /** Words before the id. */
  words: number;
  sumWord: Int32Array;
  maxWord: Int32Array;
  /** Whether day fields are 16 bits (see above). */
  narrowDays: boolean;
  /** What a day is stored against: `dayLimit - day`. */
  dayLimit: number;
  /** Day fields per record in the day view: 4 (16-bit) or 2 (32-bit). */
  dayScale: number;
  /** The day fields' places in the day view, from `dayScale * record`. */
  firstDayAt: number;
  firstValueAt: Int32Array;
  firstOneAt: Int32Array;
  /** -1 where not kept. */
  firstZeroAt: Int32Array;
  /** Per metric column: the word of its dimension byte, or -1 when dimensions are not tracked. */
  dimWord: Int32Array;
  /** Per metric column: the bit shift of its dimension byte in that word. */
  dimShift: Int32Array;
}

/** The days narrow day fields hold: 1950-01-01 on (`year * 372 + …`, see `readDay`), 65,535. */
export const NARROW_DAYS = { first: 1950 * 372, count: 65_535 } as const;

/** Whether every one of `dates` (`YYYY-MM-DD`) fits in 16-bit day fields. */
export function datesFitNarrowDays(dates: Iterable<string>): boolean {
  const first = formatDay(NARROW_DAYS.first);
  const last = formatDay(NARROW_DAYS.first + NARROW_DAYS.count - 1);
  for (const date of dates) if (date < first || date > last) return false;
  return true;
}

/** A day outside a narrow tally's span: the caller aggregates again with wide days. */
export class DaysOutOfRange extends Error {
  static readonly MESSAGE = "A date lies outside the span of 16-bit days";
  constructor() {
    super(DaysOutOfRange.MESSAGE);
    this.name = "DaysOutOfRange";
  }
}

export function recordLayout(
  forcedConversion: Uint8Array,
  dimensions = false,
  narrowDays = false,
): RecordLayout {
  const forced = Array.from(forcedConversion);
  let words = 2;
  const next = (size: number) => (words += size) - size;
  const sumWord = Int32Array.from(forced, () => next(2));
  const maxWord = Int32Array.from(forced, (flag) => flag ? next(2) : -1);
  // The day fields, in the units of the day view. Narrow, the dimension bytes follow them in the
  // same words (a 16-bit field's word often has room for two), else in words of their own.
  const fieldCount = 1 + 2 * forced.length + forced.filter((flag) => flag).length;
  const dayScale = narrowDays ? 4 : 2;
  // Narrow, dimension byte 0 is this many bytes into the day words.
  const dimOffset = narrowDays ? 2 * fieldCount : 0;
  const dayWords = narrowDays
    ? next((dimOffset + (dimensions ? forced.length : 0) + 3) >> 2)
    : next(fieldCount);
  let at = (dayScale / 2) * dayWords;
  const field = () => at++;
  const firstDayAt = field();
  const firstValueAt = Int32Array.from(forced, field);
  const firstOneAt = Int32Array.from(forced, field);
  const firstZeroAt = Int32Array.from(forced, (flag) => flag ? field() : -1);
  // Dimension byte k: its byte from the first day word (narrow) or from its own words (wide).
  const dimStart = !dimensions ? -1 : narrowDays ? dayWords : next((forced.length + 3) >> 2);
  const dimByte = (k: number) => dimOffset + k;
  const dimWord = Int32Array.from(forced, (_, k) => dimensions ? dimStart + (dimByte(k) >> 2) : -1);
  const dimShift = Int32Array.from(forced, (_, k) => 8 * (dimByte(k) & 3));
  return {
    forcedConversion,
    words,
    sumWord,
    maxWord,
    narrowDays,
    dayLimit: narrowDays ? NARROW_DAYS.first + NARROW_DAYS.count : DAY_LIMIT,
    dayScale,
    firstDayAt,
    firstValueAt,
    firstOneAt,
    firstZeroAt,
    dimWord,
    dimShift,
  };
}

/** The arena as `layout`'s day fields are read: 16-bit or 32-bit (see `RecordLayout`). */
export function dayView(layout: RecordLayout, arena: ArrayBuffer): Uint16Array | Int32Array {
  return layout.narrowDays ? new Uint16Array(arena) : new Int32Array(arena);
}

/** A tally as plain data for the summary: records `arena[0..8 * top)`, logs per metric column. */
export interface TallyState {
  arena: ArrayBuffer;
  top: number;
  /** Records (users, those seen in two variants included). */
  users: number;
  /** Users seen in two variants. */
  excluded: number;
  /** Per metric column; null once the column turned out a dimension. */
  logs: (LogEntries | null)[];
}

/** The buffers behind a tally state (each once), to transfer with it. */
export function stateBuffers(state: TallyState): ArrayBuffer[] {
  const buffers = new Set([state.arena]);
  for (const log of state.logs) {
    for (const keys of log?.keys ?? []) buffers.add(keys.buffer as ArrayBuffer);
    for (const values of log?.values ?? []) buffers.add(values.buffer as ArrayBuffer);
  }
  return [...buffers];
}

/**
 * Logs the non-zero values of `batch`, added by a tally (which wrote each row's `record`), in
 * `logs` (one per metric column, null once the column turned out a dimension), in the order of the
 * rows. A tally with logs of its own does it at the end of `add`; the worker's tally leaves it to
 * the reading thread, which waits for the worker otherwise.
 */
export function logBatch(logs: (ValueLog | null)[], batch: RowBatch): void {
  const count = logs.length;
  for (let k = 0; k < count; k++) if (batch.candidate[k] === 0) logs[k] = null;
  const { record, day, values } = batch;
  for (let r = 0; r < batch.size; r++) {
    const user = record[r];
    if (user < 0) continue;
    for (let k = 0; k < count; k++) {
      const x = values[r * count + k];
      // Empty cells (NaN) and zeros are not logged.
      if (x !== 0 && x === x) logs[k]?.append(user, day[r], x);
    }
  }
}

export class UserTally {
  readonly layout: RecordLayout;
  #excluded = 0;
  readonly #users: UserTable;
  readonly #logs: (ValueLog | null)[] | null;

  /**
   * With `dimensions`, records keep each column's value id (batches must carry `dims`).
   * `reserveBytes`: the user records' expected size, `expectedUsers` their expected number (see
   * `UserTable`; 0 when unknown). With `narrowDays`,
   * day fields take 16 bits and `add` throws `DaysOutOfRange` for a day outside their span.
   * Without `logValues`, the tally keeps no value logs (its state's `logs` are null): whoever
   * reads the batches it gives back logs their values (`logBatch`, from each row's `record`).
   */
  constructor(
    forcedConversion: Uint8Array,
    dimensions = false,
    reserveBytes = 0,
    expectedUsers = 0,
    narrowDays = false,
    logValues = true,
  ) {
    this.layout = recordLayout(forcedConversion, dimensions, narrowDays);
    this.#users = new UserTable(this.layout.words, reserveBytes, expectedUsers);
    this.#logs = logValues ? Array.from(forcedConversion, () => new ValueLog()) : null;
  }

  /** Adds the batch's rows to their users, in order, and logs their values (see `logBatch`). */
  add(batch: RowBatch): void {
    const layout = this.layout;
    const count = layout.forcedConversion.length;
    const users = this.#users;
    const { ids, idStart, idLength, hash, variant, day, values, record: records } = batch;
    const dims = layout.dimWord[0] >= 0 ? batch.dims : null;
    const dimWord = layout.dimWord;
    const dimShift = layout.dimShift;
    const { dayLimit, dayScale } = layout;
    const narrow = layout.narrowDays;
    const dayMax = narrow ? NARROW_DAYS.count : DAY_LIMIT;
    for (let from = 0; from < batch.size; from += WARM_ROWS) {
      const to = Math.min(from + WARM_ROWS, batch.size);
      users.warm(hash, idLength, from, to);
      for (let r = from; r < to; r++) {
        const record = users.lookup(ids, idStart[r], idLength[r], hash[r]);
        records[r] = record;
        const first = dayLimit - day[r];
        if (first < 1 || first > dayMax) throw new DaysOutOfRange();
        const i32 = users.i32;
        const days = narrow ? users.u16 : i32;
        const w = 2 * record;
        const d = dayScale * record;
        const firstDay = d + layout.firstDayAt;
        if (users.isNew) {
          i32[w + VARIANT_WORD] = variant[r];
          days[firstDay] = first;
          if (dims !== null) {
            // A fresh record's words are 0; ids past the kept ones (-1) stay 0.
            for (let k = 0; k < count; k++) {
              i32[w + dimWord[k]] |= ((dims[r * count + k] + 1) & DIM_VALUE_MASK) << dimShift[k];
            }
          }
        } else {
          const known = i32[w + VARIANT_WORD];
          if (known !== variant[r]) {
            if (known !== EXCLUDED) {
              i32[w + VARIANT_WORD] = EXCLUDED;
              this.#excluded++;
            }
            records[r] = -1;
            continue;
          }
          if (first > days[firstDay]) days[firstDay] = first;
          if (dims !== null) {
            for (let k = 0; k < count; k++) {
              const id = dims[r * count + k];
              const at = w + dimWord[k];
              const byte = i32[at] >>> dimShift[k];
              if (id >= 0 && (byte & DIM_VALUE_MASK) !== id + 1) {
                i32[at] |= DIM_INCONSISTENT << dimShift[k];
              }
            }
          }
        }
        const f64 = users.f64;
        for (let k = 0; k < count; k++) {
          const x = values[r * count + k];
          if (x !== x) continue;
          const firstValue = d + layout.firstValueAt[k];
          const fresh = days[firstValue] === 0;
          f64[(w + layout.sumWord[k]) >> 1] += x;
          if (first > days[firstValue]) days[firstValue] = first;
          if (x === 1) {
            const firstOne = d + layout.firstOneAt[k];
            if (first > days[firstOne]) days[firstOne] = first;
          }
          if (layout.forcedConversion[k] === 1) {
            const max = (w + layout.maxWord[k]) >> 1;
            if (fresh || x > f64[max]) f64[max] = x;
            const firstZero = d + layout.firstZeroAt[k];
            if (x === 0 && first > days[firstZero]) days[firstZero] = first;
          }
        }
      }
    }
    if (this.#logs !== null) logBatch(this.#logs, batch);
  }

  /** The records and logs so far (not a copy). */
  state(): TallyState {
    return {
      arena: this.#users.arena,
      top: this.#users.top,
      users: this.#users.size,
      excluded: this.#excluded,
      logs: Array.from(this.layout.forcedConversion, (_, k) => this.#logs?.[k]?.entries() ?? null),
    };
  }
}
