/**
 * An open-addressing hash table of user ids over typed arrays, for a million users and more
 * without a `Map` or a string per user. Each user gets a record in one growable arena: a fixed
 * number of 32-bit words (word 0 holds the id's length, the others belong to the caller) followed
 * by the id bytes, the record padded to 8 bytes. A record is named by its start in 8-byte units,
 * so that `i32[2 * record + k]` is word k and `f64[record + k / 2]` the double at even word k.
 * Records are laid out in the order users were added, so walking them with `nextRecord` visits
 * users in first-seen order.
 *
 * Random memory reads are what the aggregation waits for (a few hundred nanoseconds each when they
 * depend on each other), so a user's fields and id share one record, and callers `warm` a batch
 * of lookups first, letting the cache misses of many rows overlap. Fresh memory is the other cost
 * (each page's first touch is a page fault): a large arena is a `largeBuffer` of the size the
 * caller expects (`reserveBytes`, from the input's size), so that it seldom has to be copied into
 * a larger one (only the pages written cost memory), and the slots fill to 70 % before doubling.
 * Replaced arenas and slots are freed at once, and `release` frees the rest (see `buffers.ts`).
 */

import { LARGE_BYTES, largeBuffer, largeInt32Array, releaseBuffers } from "../../buffers.ts";

/** Memory an earlier table used, zeroed, for a new one (see the `UserTable` constructor). */
export interface TableSpare {
  arena?: ArrayBuffer;
  slots?: Int32Array<ArrayBuffer>;
}

function isPowerOfTwo(n: number): boolean {
  return n > 0 && (n & (n - 1)) === 0;
}

/** Small to start with: a table per analysis, and most deliveries are small files. */
const INITIAL_SLOTS = 1 << 8;
const INITIAL_ARENA_BYTES = 1 << 12;

/**
 * Reads the id `buf[start..end)` into `words` from `words[at]` as little-endian 32-bit words, the
 * last one zero-padded (as `lookup` expects ids), and answers its 32-bit hash: a multiply-xorshift
 * per word, then MurmurHash3's final mix.
 */
export function copyId(
  buf: Uint8Array,
  start: number,
  end: number,
  words: Int32Array,
  at: number,
): number {
  let h = end - start;
  let i = start;
  for (; i + 4 <= end; i += 4) {
    const word = buf[i] | (buf[i + 1] << 8) | (buf[i + 2] << 16) | (buf[i + 3] << 24);
    words[at++] = word;
    h = Math.imul(h ^ word, 0x9e3779b1);
    h ^= h >>> 15;
  }
  if (i < end) {
    let word = buf[i];
    if (i + 1 < end) word |= buf[i + 1] << 8;
    if (i + 2 < end) word |= buf[i + 2] << 16;
    words[at] = word;
    h = Math.imul(h ^ word, 0x9e3779b1);
    h ^= h >>> 15;
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** The record after `record` in an arena viewed as `i32`, with `words` words before each id. */
export function nextRecord(i32: Int32Array, words: number, record: number): number {
  return record + ((4 * words + i32[2 * record] + 7) >> 3);
}

export class UserTable {
  /** Whether the last `lookup` added the user. */
  isNew = false;
  /** Number of users. */
  size = 0;
  /** End of the records, in 8-byte units: records are below it. */
  top = 0;
  /** Views of the arena; replaced when it grows, so read them after each `lookup`. */
  i32: Int32Array;
  f64: Float64Array;
  #arena: ArrayBuffer;
  /** Words per record before the id bytes. */
  readonly words: number;
  /** The arena's expected size (see the constructor). */
  readonly #reserveBytes: number;
  /** Pairs (hash, record + 1); 0 marks a free slot. */
  #slots = new Int32Array(2 * INITIAL_SLOTS);
  #mask = INITIAL_SLOTS - 1;
  #limit = Math.floor(INITIAL_SLOTS * 0.7);

  /**
   * `words` is the number of 32-bit words before the id bytes, word 0 included; at least 2.
   * `reserveBytes` is what the arena is expected to need (0: unknown): once it outgrows its small
   * start, it is made that large at once. `expectedUsers` is how many users the table is expected
   * to hold (0: unknown): the slots start large enough for them, so that a table of a million
   * users is not rehashed a dozen times on the way (each time into fresh memory) nor left twice
   * as large as needed. A wrong guess costs only memory (too many) or growth (too few).
   *
   * `spare` hands over memory an earlier table used (see `TableSpare`), zeroed: an arena to
   * start with, and slots (taken when at least as many as the expected users need). Pages
   * already touched cost nothing to write again, where fresh ones cost a page fault each.
   */
  constructor(words: number, reserveBytes = 0, expectedUsers = 0, spare: TableSpare = {}) {
    this.words = Math.max(2, words);
    let slots = INITIAL_SLOTS;
    while (Math.floor(slots * 0.7) < expectedUsers) slots *= 2;
    const given = spare.slots;
    if (given !== undefined && given.length >= 2 * slots && isPowerOfTwo(given.length)) {
      slots = given.length / 2;
      this.#slots = given;
    } else {
      releaseBuffers(given);
      if (slots > INITIAL_SLOTS) this.#slots = largeInt32Array(2 * slots);
    }
    this.#mask = slots - 1;
    this.#limit = Math.floor(slots * 0.7);
    this.#reserveBytes = 8 * Math.ceil(reserveBytes / 8); // whole doubles
    // Small at first (most tables belong to small files), unless an earlier table's is given.
    if (spare.arena !== undefined && spare.arena.byteLength >= INITIAL_ARENA_BYTES) {
      this.#arena = spare.arena;
    } else {
      releaseBuffers(spare.arena);
      this.#arena = new ArrayBuffer(INITIAL_ARENA_BYTES);
    }
    this.i32 = new Int32Array(this.#arena);
    this.f64 = new Float64Array(this.#arena);
  }

  /**
   * Loads, for the hashes `hashes[from..to)`, the slot and the record it points to, so that the
   * `lookup`s that follow find them in the cache. The loads do not depend on each other, so the
   * processor overlaps their cache misses; `lengths` are the ids' lengths (to reach the end of
   * each record). Answers a number only so that the loads are not optimized away.
   */
  warm(hashes: Int32Array, lengths: Int32Array, from: number, to: number): number {
    const slots = this.#slots;
    const mask = this.#mask;
    let sum = 0;
    for (let r = from; r < to; r++) sum += slots[2 * (hashes[r] & mask) + 1];
    const i32 = this.i32;
    const words = this.words;
    for (let r = from; r < to; r++) {
      const entry = slots[2 * (hashes[r] & mask) + 1];
      if (entry === 0) continue;
      const at = 2 * (entry - 1);
      sum += i32[at] + i32[at + words + ((lengths[r] + 3) >> 2) - 1];
    }
    return sum;
  }

  /**
   * Answers the record of the user whose id is `length` bytes held as words from `ids[at]`
   * (zero-padded, see `copyId`) and whose hash is `hash`, adding the user (with zeroed fields) when new;
   * `isNew` tells which.
   */
  lookup(ids: Int32Array, at: number, length: number, hash: number): number {
    const slots = this.#slots;
    const mask = this.#mask;
    let slot = hash & mask;
    for (;;) {
      const entry = slots[2 * slot + 1];
      if (entry === 0) break;
      if (slots[2 * slot] === hash) {
        const record = entry - 1;
        if (this.i32[2 * record] === length && this.#sameId(record, ids, at, length)) {
          this.isNew = false;
          return record;
        }
      }
      slot = (slot + 1) & mask;
    }
    const record = this.#add(ids, at, length);
    slots[2 * slot] = hash;
    slots[2 * slot + 1] = record + 1;
    if (++this.size > this.#limit) this.#rehash();
    this.isNew = true;
    return record;
  }

  /** Frees the arena and the slots now (see `releaseBuffers`); the table is done with. */
  release(): void {
    releaseBuffers(this.#arena, this.#slots);
  }

  /** Hands over the slots (for a later table, see `TableSpare`); the table is done with. */
  takeSlots(): Int32Array<ArrayBuffer> {
    const slots = this.#slots;
    this.#slots = new Int32Array(0);
    return slots;
  }

  /** The arena (its first `8 * top` bytes hold the records). */
  get arena(): ArrayBuffer {
    return this.#arena;
  }

  #sameId(record: number, ids: Int32Array, at: number, length: number): boolean {
    const i32 = this.i32;
    const id = 2 * record + this.words;
    for (let i = 0; i < (length + 3) >> 2; i++) if (i32[id + i] !== ids[at + i]) return false;
    return true;
  }

  #add(ids: Int32Array, at: number, length: number): number {
    const record = this.top;
    const top = record + ((4 * this.words + length + 7) >> 3);
    if (8 * top > this.#arena.byteLength) this.#grow(8 * top);
    this.top = top;
    const i32 = this.i32;
    i32[2 * record] = length;
    const id = 2 * record + this.words;
    for (let i = 0; i < (length + 3) >> 2; i++) i32[id + i] = ids[at + i];
    return record;
  }

  #grow(bytes: number): void {
    let size = 2 * this.#arena.byteLength;
    while (size < bytes) size *= 2;
    let arena: ArrayBuffer;
    try {
      arena = largeBuffer(size < LARGE_BYTES ? size : Math.max(size, this.#reserveBytes));
    } catch {
      arena = largeBuffer(size); // the reservation refused (strict overcommit): what is needed
    }
    new Uint8Array(arena).set(new Uint8Array(this.#arena, 0, 8 * this.top));
    releaseBuffers(this.#arena);
    this.#arena = arena;
    this.i32 = new Int32Array(arena);
    this.f64 = new Float64Array(arena);
  }

  #rehash(): void {
    const old = this.#slots;
    const capacity = old.length; // twice the old slot count
    const slots = largeInt32Array(2 * capacity);
    const mask = capacity - 1;
    for (let i = 0; i < old.length; i += 2) {
      const entry = old[i + 1];
      if (entry === 0) continue;
      let slot = old[i] & mask;
      while (slots[2 * slot + 1] !== 0) slot = (slot + 1) & mask;
      slots[2 * slot] = old[i];
      slots[2 * slot + 1] = entry;
    }
    releaseBuffers(old);
    this.#slots = slots;
    this.#mask = mask;
    this.#limit = Math.floor(capacity * 0.7);
  }
}
