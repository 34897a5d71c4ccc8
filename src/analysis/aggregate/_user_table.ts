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
 * (each page's first touch is a page fault): a large arena is made the size the caller expects
 * (`reserveBytes`, from the input's size), so that it seldom has to be copied into a larger one
 * (only the pages written cost memory), and the slots fill to 70 % before doubling.
 *
 * A slot is one 32-bit word while the records fit in 128 MiB (`NARROW_RECORDS`): the record + 1 in
 * its low 24 bits, the top 8 bits of the user's hash above them, so that a probe reads a record
 * only once in 256 times for another user. The slots of a million users then take 8 MB instead of
 * 16. A larger table turns its slots into pairs (the whole hash, the record + 1) once, when its
 * records outgrow that; a narrow table recomputes its users' hashes from the ids in their records
 * when it doubles (`hashWords`), walking the records in order.
 */

/** Small to start with: a table per analysis, and most deliveries are small files. */
const INITIAL_SLOTS = 1 << 8;
const INITIAL_ARENA_BYTES = 1 << 12;
/** An arena that grows past this is made as large as the caller expects (`reserveBytes`). */
const LARGE_ARENA_BYTES = 256 * 1024;

/** A narrow slot: the record + 1 in the bits of `RECORD_MASK`, the hash's top bits from `TAG_SHIFT`. */
const TAG_SHIFT = 24;
const RECORD_MASK = (1 << TAG_SHIFT) - 1;
/** The most records (in 8-byte units, `top`) narrow slots can name: 128 MiB of them. */
export const NARROW_RECORDS = RECORD_MASK - 1;

/** MurmurHash3's final mix of a 32-bit hash. */
function finalMix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

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
  return finalMix(h);
}

/**
 * The hash `copyId` answers for an id of `length` bytes held as zero-padded words from
 * `words[at]` (as in a record).
 */
export function hashWords(words: Int32Array, at: number, length: number): number {
  let h = length;
  const end = at + ((length + 3) >> 2);
  for (let i = at; i < end; i++) {
    h = Math.imul(h ^ words[i], 0x9e3779b1);
    h ^= h >>> 15;
  }
  return finalMix(h);
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
  u16: Uint16Array;
  #arena: ArrayBuffer;
  /** Words per record before the id bytes. */
  readonly words: number;
  /** The arena's expected size (see the constructor). */
  readonly #reserveBytes: number;
  /**
   * Narrow: one word a slot, `(tag << TAG_SHIFT) | (record + 1)`; wide: pairs (hash, record + 1).
   * 0 marks a free slot either way.
   */
  #slots = new Int32Array(INITIAL_SLOTS);
  #wide = false;
  /** The most records (`top`) narrow slots may name; past it the slots turn wide. */
  readonly #narrowRecords: number;
  #mask = INITIAL_SLOTS - 1;
  #limit = Math.floor(INITIAL_SLOTS * 0.7);

  /**
   * `words` is the number of 32-bit words before the id bytes, word 0 included; at least 2.
   * `reserveBytes` is what the arena is expected to need (0: unknown): once it outgrows its small
   * start, it is made that large at once. `expectedUsers` is how many users the table is expected
   * to hold (0: unknown): the slots start large enough for them, so that a table of a million
   * users is not rehashed a dozen times on the way (each time into fresh memory) nor left twice
   * as large as needed. A wrong guess costs only memory (too many) or growth (too few).
   * `narrowRecords` is `NARROW_RECORDS` but in tests of the turn to wide slots.
   */
  constructor(words: number, reserveBytes = 0, expectedUsers = 0, narrowRecords = NARROW_RECORDS) {
    this.words = Math.max(2, words);
    this.#narrowRecords = Math.min(narrowRecords, NARROW_RECORDS);
    let slots = INITIAL_SLOTS;
    while (Math.floor(slots * 0.7) < expectedUsers) slots *= 2;
    if (slots > INITIAL_SLOTS) this.#slots = new Int32Array(slots);
    this.#mask = slots - 1;
    this.#limit = Math.floor(slots * 0.7);
    this.#reserveBytes = 8 * Math.ceil(reserveBytes / 8); // whole doubles
    // Small at first: most tables belong to small files.
    this.#arena = new ArrayBuffer(INITIAL_ARENA_BYTES);
    this.i32 = new Int32Array(this.#arena);
    this.f64 = new Float64Array(this.#arena);
    this.u16 = new Uint16Array(this.#arena);
  }

  /** Whether the slots are pairs (see the class). */
  get wide(): boolean {
    return this.#wide;
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
    // Narrow: a slot's word is its entry; wide: the second of its pair.
    const step = this.#wide ? 2 : 1;
    const offset = step - 1;
    const entryMask = this.#wide ? -1 : RECORD_MASK;
    let sum = 0;
    for (let r = from; r < to; r++) sum += slots[step * (hashes[r] & mask) + offset];
    const i32 = this.i32;
    const words = this.words;
    for (let r = from; r < to; r++) {
      const entry = slots[step * (hashes[r] & mask) + offset] & entryMask;
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
    if (this.#wide) return this.#lookupWide(ids, at, length, hash);
    const slots = this.#slots;
    const mask = this.#mask;
    const tag = hash >>> TAG_SHIFT;
    let slot = hash & mask;
    for (;;) {
      const entry = slots[slot];
      if (entry === 0) return this.#addNarrow(ids, at, length, hash, slot);
      if (entry >>> TAG_SHIFT === tag) {
        const record = (entry & RECORD_MASK) - 1;
        if (this.i32[2 * record] === length && this.#sameId(record, ids, at, length)) {
          this.isNew = false;
          return record;
        }
      }
      slot = (slot + 1) & mask;
    }
  }

  /** Adds the user whose free slot (narrow) is `slot`; see `lookup`. */
  #addNarrow(ids: Int32Array, at: number, length: number, hash: number, slot: number): number {
    const record = this.#add(ids, at, length);
    if (this.#wide) this.#place(hash, record); // the records just outgrew narrow slots
    else this.#slots[slot] = ((hash >>> TAG_SHIFT) << TAG_SHIFT) | (record + 1);
    if (++this.size > this.#limit) this.#rehash();
    this.isNew = true;
    return record;
  }

  /** The arena (its first `8 * top` bytes hold the records). */
  get arena(): ArrayBuffer {
    return this.#arena;
  }

  #lookupWide(ids: Int32Array, at: number, length: number, hash: number): number {
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
    if (!this.#wide && top > this.#narrowRecords) this.#widen();
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
      arena = new ArrayBuffer(size < LARGE_ARENA_BYTES ? size : Math.max(size, this.#reserveBytes));
    } catch {
      arena = new ArrayBuffer(size); // the reservation refused (strict overcommit): what is needed
    }
    new Uint8Array(arena).set(new Uint8Array(this.#arena, 0, 8 * this.top));
    this.#arena = arena;
    this.i32 = new Int32Array(arena);
    this.f64 = new Float64Array(arena);
    this.u16 = new Uint16Array(arena);
  }

  /** Puts `record`, whose user's hash is `hash`, in a free slot (wide slots). */
  #place(hash: number, record: number): void {
    const slots = this.#slots;
    const mask = this.#mask;
    let slot = hash & mask;
    while (slots[2 * slot + 1] !== 0) slot = (slot + 1) & mask;
    slots[2 * slot] = hash;
    slots[2 * slot + 1] = record + 1;
  }

  /** Turns the slots into pairs, as many as before (the records below `top`). */
  #widen(): void {
    this.#wide = true;
    this.#refill(this.#mask + 1, false);
  }

  #rehash(): void {
    this.#refill(2 * (this.#mask + 1), this.#wide);
  }

  /**
   * New slots, `count` of them, for the records below `top`: from the old pairs when `fromPairs`,
   * else from the records themselves, walked in order, each id hashed again.
   */
  #refill(count: number, fromPairs: boolean): void {
    const old = this.#slots;
    const slots = new Int32Array(this.#wide ? 2 * count : count);
    const mask = count - 1;
    this.#slots = slots;
    this.#mask = mask;
    this.#limit = Math.floor(count * 0.7);
    if (fromPairs) {
      for (let i = 0; i < old.length; i += 2) {
        const entry = old[i + 1];
        if (entry !== 0) this.#place(old[i], entry - 1);
      }
    } else {
      const i32 = this.i32;
      const words = this.words;
      for (let record = 0; record < this.top; record = nextRecord(i32, words, record)) {
        const hash = hashWords(i32, 2 * record + words, i32[2 * record]);
        if (this.#wide) {
          this.#place(hash, record);
          continue;
        }
        let slot = hash & mask;
        while (slots[slot] !== 0) slot = (slot + 1) & mask;
        slots[slot] = ((hash >>> TAG_SHIFT) << TAG_SHIFT) | (record + 1);
      }
    }
  }
}
