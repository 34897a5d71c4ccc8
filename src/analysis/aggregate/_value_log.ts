/**
 * An append-only list of (user record, day, value) entries in fixed-size typed-array blocks, so
 * that it grows without copying. The aggregation logs a metric's non-zero cells in it to build the
 * daily sums at the end, once it is known which users were seen in two variants.
 *
 * While every value logged is 1 (a 0/1 column, so far), the blocks keep no values: a block
 * without them (its `values` empty) holds 1s. From the first other value on, the current block and
 * every later one keep their values. A conversion column's log so takes 8 bytes an entry, not 16.
 */
const BLOCK = 1 << 15;
/** Entries of the first block at first; it doubles up to `BLOCK` (most files are small). */
const FIRST_BLOCK = 1 << 8;

/** A log's entries as plain data (what the summary reads; transferable). */
export interface LogEntries {
  /** Per block: (record, day) pairs. */
  keys: Int32Array[];
  /** Per block: values, or none (an empty array) when they are all 1 (see `logValue`). */
  values: Float64Array[];
  /** Entries in the last block (the others are full). */
  lastSize: number;
}

/** Entries in block `block` of `log`. */
export function blockSize(log: LogEntries, block: number): number {
  return block < log.keys.length - 1 ? BLOCK : log.lastSize;
}

/** The value of entry `i` of block `block` of `log`. */
export function logValue(log: LogEntries, block: number, i: number): number {
  const values = log.values[block];
  return values.length === 0 ? 1 : values[i];
}

export class ValueLog {
  readonly #entries: LogEntries = { keys: [], values: [], lastSize: 0 };
  #keys = new Int32Array(0);
  #values = new Float64Array(0);
  /** Entries the current block holds. */
  #capacity = 0;
  /** Whether every value so far was 1 (the blocks then keep no values). */
  #ones = true;

  append(record: number, day: number, value: number): void {
    const entries = this.#entries;
    if (entries.lastSize === this.#capacity) this.#grow();
    if (value !== 1 && this.#ones) this.#keepValues();
    const i = entries.lastSize++;
    this.#keys[2 * i] = record;
    this.#keys[2 * i + 1] = day;
    if (!this.#ones) this.#values[i] = value;
  }

  /** Room for one more entry: a new block after a full one, else a first block twice as large. */
  #grow(): void {
    const entries = this.#entries;
    const full = this.#capacity;
    if (full === BLOCK) {
      this.#keys = new Int32Array(2 * BLOCK);
      this.#values = this.#ones ? new Float64Array(0) : new Float64Array(BLOCK);
      entries.keys.push(this.#keys);
      entries.values.push(this.#values);
      entries.lastSize = 0;
      return;
    }
    const size = full === 0 ? FIRST_BLOCK : 2 * full;
    const keys = this.#keys;
    const values = this.#values;
    this.#keys = new Int32Array(2 * size);
    this.#keys.set(keys);
    if (!this.#ones) {
      this.#values = new Float64Array(size);
      this.#values.set(values);
    }
    this.#capacity = size;
    entries.keys[0] = this.#keys;
    entries.values[0] = this.#values;
  }

  /** The first value other than 1: the current block's values (1s so far) are kept from now on. */
  #keepValues(): void {
    this.#ones = false;
    const values = new Float64Array(this.#capacity);
    values.fill(1, 0, this.#entries.lastSize);
    this.#values = values;
    this.#entries.values[this.#entries.values.length - 1] = values;
  }

  /** The entries so far (not a copy). */
  entries(): LogEntries {
    return this.#entries;
  }
}
