/**
 * An append-only list of (user record, day, value) entries in fixed-size typed-array blocks, so
 * that it grows without copying. The aggregation logs a metric's non-zero cells in it to build the
 * daily sums at the end, once it is known which users were seen in two variants.
 */

const BLOCK = 1 << 15;

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
  readonly #entries: LogEntries = { keys: [], values: [], lastSize: BLOCK };
  #keys = new Int32Array(0);
  #values = new Float64Array(0);

  append(record: number, day: number, value: number): void {
    const entries = this.#entries;
    if (entries.lastSize === BLOCK) {
      this.#keys = new Int32Array(2 * BLOCK);
      this.#values = new Float64Array(BLOCK);
      entries.keys.push(this.#keys);
      entries.values.push(this.#values);
      entries.lastSize = 0;
    }
    const i = entries.lastSize++;
    this.#keys[2 * i] = record;
    this.#keys[2 * i + 1] = day;
    this.#values[i] = value;
  }

  /** The entries so far (not a copy). */
  entries(): LogEntries {
    return this.#entries;
  }
}
