/**
 * An append-only list of (user record, day, value) entries in fixed-size typed-array blocks, so
 * that it grows without copying. The aggregation logs a metric's non-zero cells in it to build the
 * daily sums at the end, once it is known which users were seen in two variants.
 */

const BLOCK = 1 << 15;
/** Entries of the first block at first; it doubles up to `BLOCK` (most files are small). */
const FIRST_BLOCK = 1 << 8;

/** A log's entries as plain data (what the summary reads; transferable). */
export interface LogEntries {
  /** Per block: (record, day) pairs. */
  keys: Int32Array[];
  /** Per block: values. */
  values: Float64Array[];
  /** Entries in the last block (the others are full). */
  lastSize: number;
}

/** Entries in block `block` of `log`. */
export function blockSize(log: LogEntries, block: number): number {
  return block < log.keys.length - 1 ? BLOCK : log.lastSize;
}

export class ValueLog {
  readonly #entries: LogEntries = { keys: [], values: [], lastSize: 0 };
  #keys = new Int32Array(0);
  #values = new Float64Array(0);

  append(record: number, day: number, value: number): void {
    const entries = this.#entries;
    if (entries.lastSize === this.#values.length) this.#grow();
    const i = entries.lastSize++;
    this.#keys[2 * i] = record;
    this.#keys[2 * i + 1] = day;
    this.#values[i] = value;
  }

  /** Room for one more entry: a new block after a full one, else a first block twice as large. */
  #grow(): void {
    const entries = this.#entries;
    const full = this.#values.length;
    if (full === BLOCK) {
      this.#keys = new Int32Array(2 * BLOCK);
      this.#values = new Float64Array(BLOCK);
      entries.keys.push(this.#keys);
      entries.values.push(this.#values);
      entries.lastSize = 0;
      return;
    }
    const size = full === 0 ? FIRST_BLOCK : 2 * full;
    const keys = new Int32Array(2 * size);
    const values = new Float64Array(size);
    keys.set(this.#keys);
    values.set(this.#values);
    entries.keys[0] = this.#keys = keys;
    entries.values[0] = this.#values = values;
  }

  /** The entries so far (not a copy). */
  entries(): LogEntries {
    return this.#entries;
  }
}
