/**
 * The second half of the aggregation: adds `RowBatch`es to their users. Keeps, per user, in a
 * `UserTable` record, the variant, the first day and per metric column the sum and the first
 * days with a value and with a 1; non-zero values are also logged with their day (a `ValueLog`),
 * because the daily sums can only leave out a user seen in two variants at the end.
 */
import { DAY_LIMIT } from "./_csv_cells.ts";
import type { RowBatch } from "./_row_batch.ts";
import { UserTable } from "./_user_table.ts";
import { ValueLog } from "./_value_log.ts";

/** A user's variant word once the user was seen in two variants. */
export const EXCLUDED = -1;

/** Record word of the variant. */
export const VARIANT_WORD = 1;

/**
 * Rows whose users are looked up together (see `UserTable.warm`): enough for the cache misses to
 * overlap, few enough for their cache lines to stay.
 */
const WARM_ROWS = 256;

/**
 * Record layout, in 32-bit words: 0 the id length (the table's), 1 the variant, then the doubles
 * (per metric column its sum, and for columns read as conversion by the caller's setting also the
 * maximum), then the first day, per metric column the first days with a value and with a 1, and
 * for columns read as conversion by the setting the first day with a 0. For two metric columns
 * and a 20-byte id that makes 64 bytes.
 *
 * Days are stored as `DAY_LIMIT - day`, so that 0 (a fresh record) means "none" and a later
 * day is a smaller number: "first day" is a plain maximum.
 */
export class UserTally {
  /** Users seen in two variants. */
  excluded = 0;
  readonly users: UserTable;
  /** Non-zero values per metric column; dropped when the column turns out a dimension. */
  readonly logs: (ValueLog | null)[];
  /** Per metric column: 1 when read as conversion by the caller (maximum and first 0 kept). */
  readonly forcedConversion: Uint8Array;
  readonly firstDayWord: number;
  readonly sumWord: Int32Array;
  readonly maxWord: Int32Array;
  readonly firstValueWord: Int32Array;
  readonly firstOneWord: Int32Array;
  readonly firstZeroWord: Int32Array;

  constructor(forcedConversion: Uint8Array) {
    this.forcedConversion = forcedConversion;
    const forced = Array.from(forcedConversion);
    let words = 2;
    const next = (size: number) => (words += size) - size;
    this.sumWord = Int32Array.from(forced, () => next(2));
    this.maxWord = Int32Array.from(forced, (flag) => flag ? next(2) : -1);
    this.firstDayWord = next(1);
    this.firstValueWord = Int32Array.from(forced, () => next(1));
    this.firstOneWord = Int32Array.from(forced, () => next(1));
    this.firstZeroWord = Int32Array.from(forced, (flag) => flag ? next(1) : -1);
    this.users = new UserTable(words);
    this.logs = forced.map(() => new ValueLog());
  }

  /** Adds the batch's rows to their users, in order. */
  add(batch: RowBatch): void {
    const count = this.forcedConversion.length;
    for (let k = 0; k < count; k++) if (batch.candidate[k] === 0) this.logs[k] = null;
    const users = this.users;
    const { ids, idStart, idLength, hash, variant, day, values } = batch;
    for (let from = 0; from < batch.size; from += WARM_ROWS) {
      const to = Math.min(from + WARM_ROWS, batch.size);
      users.warm(hash, idLength, from, to);
      for (let r = from; r < to; r++) {
        const record = users.lookup(ids, idStart[r], idLength[r], hash[r]);
        const first = DAY_LIMIT - day[r];
        const i32 = users.i32;
        const w = 2 * record;
        const firstDay = w + this.firstDayWord;
        if (users.isNew) {
          i32[w + VARIANT_WORD] = variant[r];
          i32[firstDay] = first;
        } else {
          const known = i32[w + VARIANT_WORD];
          if (known !== variant[r]) {
            if (known !== EXCLUDED) {
              i32[w + VARIANT_WORD] = EXCLUDED;
              this.excluded++;
            }
            continue;
          }
          if (first > i32[firstDay]) i32[firstDay] = first;
        }
        const f64 = users.f64;
        for (let k = 0; k < count; k++) {
          const x = values[r * count + k];
          if (x !== x) continue;
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
          if (x !== 0) this.logs[k]?.append(record, day[r], x);
        }
      }
    }
  }
}
