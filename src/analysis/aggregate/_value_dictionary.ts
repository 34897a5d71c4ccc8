/**
 * The distinct values of one column as the aggregation reads its cells, for dimension health
 * (docs/api.md, "Dimension health"): each cell's bytes (spaces and tabs around them ignored, an
 * empty cell being a value of its own) are looked up in a small open-addressing table over typed
 * arrays and answered as a value id, without decoding or a string per row.
 *
 * A value of up to 8 bytes (country codes, device names, flags: most dimension cells) is held as
 * its bytes packed into two 32-bit words and its length, and compared as such: exact, and a few
 * integer comparisons per cell. A longer value is held as two 32-bit hashes of its bytes (a 64-bit
 * fingerprint), and for the first values also as bytes, compared byte by byte.
 *
 * Distinct values are counted exactly up to `DISTINCT_COUNT_LIMIT`; then counting stops. Only the
 * first `DIMENSION_VALUE_LIMIT` values can be reported (a column with more is skipped), so only
 * their text is kept; a later value's id is -1. The last value looked up is tried first (cells of
 * a column often repeat from row to row).
 */
import { isBlank } from "../../csv/has_text.ts";

/** A dimension with more distinct values than this is skipped. */
export const DIMENSION_VALUE_LIMIT = 50;
/** Distinct values are counted up to this many, then no longer. */
export const DISTINCT_COUNT_LIMIT = 10_000;

/**
 * Slots of the table at first; it doubles before it is 0.7 full, so at most a power of two above
 * `DISTINCT_COUNT_LIMIT / 0.7`. Small at first: most columns have a few values, and a dictionary
 * is made per column per analysis (a tiny delivery's analysis would mostly zero memory).
 */
const INITIAL_SLOTS = 64;
const INITIAL_TEXT_BYTES = 256;
/** Values up to this long are held packed in two words. */
const PACKED = 8;

export class ValueDictionary {
  /** Distinct values seen so far, at most `DISTINCT_COUNT_LIMIT`. */
  size = 0;
  /** Per slot: the value's id + 1, 0 when free. */
  #slots = new Int32Array(INITIAL_SLOTS);
  /** Per value: its length, and its bytes packed (up to 8) or its two hashes (longer). */
  #length = new Int32Array(INITIAL_SLOTS);
  #a = new Int32Array(INITIAL_SLOTS);
  #b = new Int32Array(INITIAL_SLOTS);
  /** The bytes of the kept values: value i is `#text[#start[i]..#start[i + 1])`. */
  #text = new Uint8Array(INITIAL_TEXT_BYTES);
  readonly #start = new Int32Array(DIMENSION_VALUE_LIMIT + 1);
  #last = -1;

  /** True once counting stopped: the column has `DISTINCT_COUNT_LIMIT` values or more. */
  get full(): boolean {
    return this.size >= DISTINCT_COUNT_LIMIT;
  }

  /** True when the column has more values than a dimension may report. */
  get many(): boolean {
    return this.size > DIMENSION_VALUE_LIMIT;
  }

  /**
   * The id of the value in `buf[start..end)` (blanks around it ignored), registering a new one:
   * ids count from 0 in order of first appearance. Answers -1 for a value past the first
   * `DIMENSION_VALUE_LIMIT` (it is counted, not kept) and once counting stopped.
   */
  id(buf: Uint8Array, start: number, end: number): number {
    if (start < end && (isBlank(buf[start]) || isBlank(buf[end - 1]))) {
      while (start < end && isBlank(buf[start])) start++;
      while (end > start && isBlank(buf[end - 1])) end--;
    }
    const length = end - start;
    let a = 0;
    let b = 0;
    if (length <= PACKED) {
      for (let i = 0; i < length; i++) {
        if (i < 4) a |= buf[start + i] << (8 * i);
        else b |= buf[start + i] << (8 * (i - 4));
      }
    } else {
      a = length ^ 0x811c9dc5;
      b = length + 0x27d4eb2f;
      for (let i = start; i < end; i++) {
        const x = buf[i];
        a = Math.imul(a ^ x, 0x01000193);
        b = Math.imul(b + x, 0x85ebca6b);
        b ^= b >>> 13;
      }
    }
    const last = this.#last;
    if (
      last >= 0 && this.#a[last] === a && this.#b[last] === b && this.#length[last] === length &&
      (length <= PACKED || this.#same(last, buf, start, end))
    ) {
      return last;
    }
    if (this.size >= DISTINCT_COUNT_LIMIT) return -1;
    if (10 * (this.size + 1) > 7 * this.#slots.length) this.#grow();
    const slots = this.#slots;
    const mask = slots.length - 1;
    let slot = slotHash(a, b, length) & mask;
    for (;;) {
      const entry = slots[slot];
      if (entry === 0) break;
      const id = entry - 1;
      if (this.#a[id] === a && this.#b[id] === b && this.#length[id] === length) {
        if (id >= DIMENSION_VALUE_LIMIT) return -1;
        if (length <= PACKED || this.#same(id, buf, start, end)) return this.#last = id;
      }
      slot = (slot + 1) & mask;
    }
    const id = this.size++;
    slots[slot] = id + 1;
    this.#length[id] = length;
    this.#a[id] = a;
    this.#b[id] = b;
    if (id >= DIMENSION_VALUE_LIMIT) {
      this.#last = -1;
      return -1;
    }
    this.#keep(id, buf, start, end);
    return this.#last = id;
  }

  /** The kept values as text, in id order (`(empty)` for the empty cell). */
  values(): string[] {
    const decoder = new TextDecoder();
    const kept = Math.min(this.size, DIMENSION_VALUE_LIMIT);
    return Array.from({ length: kept }, (_, i) => {
      const bytes = this.#text.subarray(this.#start[i], this.#start[i + 1]);
      return bytes.length === 0 ? "(empty)" : decoder.decode(bytes);
    });
  }

  /** Doubles the table (and the per-value arrays), placing every value again. */
  #grow(): void {
    const slots = new Int32Array(2 * this.#slots.length);
    const mask = slots.length - 1;
    const widen = (old: Int32Array) => {
      const wider = new Int32Array(slots.length);
      wider.set(old);
      return wider;
    };
    this.#length = widen(this.#length);
    this.#a = widen(this.#a);
    this.#b = widen(this.#b);
    for (let id = 0; id < this.size; id++) {
      let slot = slotHash(this.#a[id], this.#b[id], this.#length[id]) & mask;
      while (slots[slot] !== 0) slot = (slot + 1) & mask;
      slots[slot] = id + 1;
    }
    this.#slots = slots;
  }

  #same(id: number, buf: Uint8Array, start: number, end: number): boolean {
    const from = this.#start[id];
    const text = this.#text;
    for (let i = 0; i < end - start; i++) if (text[from + i] !== buf[start + i]) return false;
    return true;
  }

  #keep(id: number, buf: Uint8Array, start: number, end: number): void {
    const from = this.#start[id];
    const to = from + end - start;
    if (to > this.#text.length) {
      const text = new Uint8Array(Math.max(to, 2 * this.#text.length));
      text.set(this.#text.subarray(0, from));
      this.#text = text;
    }
    this.#text.set(buf.subarray(start, end), from);
    this.#start[id + 1] = to;
  }
}

/** Where a value (its packed words or hashes, and length) starts looking for a slot. */
function slotHash(a: number, b: number, length: number): number {
  let h = Math.imul(a ^ (b >>> 7) ^ (length << 24), 0x85ebca6b) ^ b;
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}
