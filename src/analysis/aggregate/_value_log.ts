/**
 * An append-only list of (user record, day, value) entries in fixed-size typed-array blocks, so
 * that it grows without copying. The aggregation logs a metric's non-zero cells in it to build the
 * daily sums at the end, once it is known which users were seen in two variants. Full-size blocks
 * are cut from `largeBuffer`s (64 to one), see `buffers.ts`.
 */
import { largeBuffer } from "../../buffers.ts";

const BLOCK = 1 << 15;
/** Bytes of a full-size block: its keys, then its values. */
const BLOCK_BYTES = 16 * BLOCK;
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
  /** Where the next full-size blocks are cut from, and how much of it is taken. */
  #chunk: ArrayBuffer | null = null;
  #chunkUsed = 0;

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
      this.#newBlock();
      entries.keys.push(this.#keys);
      entries.values.push(this.#values);
      entries.lastSize = 0;
      return;
    }
    const size = full === 0 ? FIRST_BLOCK : 2 * full;
    const keys = this.#keys;
    const values = this.#values;
    if (size === BLOCK) {
      this.#newBlock();
    } else {
      this.#keys = new Int32Array(2 * size);
      this.#values = new Float64Array(size);
    }
    this.#keys.set(keys);
    this.#values.set(values);
    entries.keys[0] = this.#keys;
    entries.values[0] = this.#values;
  }

  /** Makes `#keys` and `#values` a fresh full-size block. */
  #newBlock(): void {
    if (this.#chunk === null || this.#chunkUsed + BLOCK_BYTES > this.#chunk.byteLength) {
      this.#chunk = largeBuffer(64 * BLOCK_BYTES);
      this.#chunkUsed = 0;
    }
    this.#keys = new Int32Array(this.#chunk, this.#chunkUsed, 2 * BLOCK);
    this.#values = new Float64Array(this.#chunk, this.#chunkUsed + 8 * BLOCK, BLOCK);
    this.#chunkUsed += BLOCK_BYTES;
  }

  /** The entries so far (not a copy). */
  entries(): LogEntries {
    return this.#entries;
  }
}
