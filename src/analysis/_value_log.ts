/**
 * An append-only list of (user record, day, value) entries in fixed-size typed-array blocks, so
 * that it grows without copying. The aggregation logs a metric's non-zero cells in it to build the
 * daily sums at the end, once it is known which users were seen in two variants.
 */

const BLOCK = 1 << 15;

export class ValueLog {
  /** Entries so far. */
  size = 0;
  /** Per block: (record, day) pairs. */
  readonly keys: Int32Array[] = [];
  /** Per block: values. */
  readonly values: Float64Array[] = [];
  #keys = new Int32Array(0);
  #values = new Float64Array(0);
  #fill = BLOCK;

  append(record: number, day: number, value: number): void {
    if (this.#fill === BLOCK) {
      this.#keys = new Int32Array(2 * BLOCK);
      this.#values = new Float64Array(BLOCK);
      this.keys.push(this.#keys);
      this.values.push(this.#values);
      this.#fill = 0;
    }
    const i = this.#fill++;
    this.#keys[2 * i] = record;
    this.#keys[2 * i + 1] = day;
    this.#values[i] = value;
    this.size++;
  }

  /** Entries in block `block`. */
  blockSize(block: number): number {
    return block < this.keys.length - 1 ? BLOCK : this.#fill;
  }
}
