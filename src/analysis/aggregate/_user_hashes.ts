/**
 * Every user of a delivery as a 64-bit hash of their id and their variant, sorted by the hash: what
 * the next delivery is compared with (docs/api.md, "Changes since the previous delivery": users added,
 * switched, vanished). Computed once per user at the end from the id bytes each user record
 * already holds (no work per row, nothing allocated per user), then sorted by an LSD radix sort
 * over typed arrays.
 *
 * The hash is two MurmurHash3 (x86, 32-bit) passes over the id's little-endian words with two
 * seeds, the id's length mixed in (ids are zero-padded to whole words). It is part of what is
 * stored, so it must never change without a new summary format (`delivery_summary.ts`).
 */
import { EXCLUDED, type RecordLayout, type TallyState, VARIANT_WORD } from "./_user_tally.ts";
import { nextRecord } from "./_user_table.ts";

/**
 * Bytes left free before the hashes of a large delivery, in their buffer: room for the head of
 * the stored summary, which is then written around the hashes where they are
 * (`encodeDeliverySummary`) rather than copied with them into a new blob of their size.
 */
export const SUMMARY_ROOM_BYTES = 64 * 1024;

/** Variant positions as a summary keeps them: 1, 2 or 4 bytes each, by `positionWidth`. */
export type VariantPositions = Uint8Array | Uint16Array | Int32Array;

/**
 * Users sorted by (hi, lo) as unsigned numbers; `variant[i]` is a position in the sorted variants,
 * `none` for a user seen in two.
 */
export interface UserHashes {
  hi: Uint32Array;
  lo: Uint32Array;
  /** `positionWidth(variants)` bytes a position, as the stored summary keeps them. */
  variant: VariantPositions;
  /** The position of a user seen in two variants (`noPosition`). */
  none: number;
}

/** Bytes a variant position takes with `variants` variants (the width's largest value is `none`). */
export function positionWidth(variants: number): 1 | 2 | 4 {
  return variants < 0xff ? 1 : variants < 0xffff ? 2 : 4;
}

/** The position of a user seen in two variants, at `width` bytes a position. */
export function noPosition(width: number): number {
  return width === 1 ? 0xff : width === 2 ? 0xffff : -1;
}

/** `n` positions of `width` bytes from byte `at` of `buffer`. */
export function positionsIn(
  buffer: ArrayBufferLike,
  at: number,
  n: number,
  width: number,
): VariantPositions {
  return width === 1
    ? new Uint8Array(buffer, at, n)
    : width === 2
    ? new Uint16Array(buffer, at, n)
    : new Int32Array(buffer, at, n);
}

const SEED_HI = 0x2f9e_1a3b;
const SEED_LO = 0x5bd1_e995;

/** MurmurHash3's 32-bit hash of `count` words from `i32[at]`, `length` standing for the byte length. */
export function murmurWords(
  i32: Int32Array,
  at: number,
  count: number,
  length: number,
  seed: number,
): number {
  let h = seed;
  for (let j = 0; j < count; j++) {
    let k = Math.imul(i32[at + j], 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    h ^= Math.imul(k, 0x1b873593);
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  h ^= length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** The users of the tally with their hashes and variant positions, sorted. */
export function userHashes(
  tally: TallyState,
  layout: RecordLayout,
  position: Int32Array,
): UserHashes {
  const n = tally.users;
  const width = positionWidth(position.length);
  const none = noPosition(width);
  // One buffer for the three; a large one leaves room before them for the stored summary's head.
  const size = (8 + width) * n;
  const room = size >= SUMMARY_ROOM_BYTES ? SUMMARY_ROOM_BYTES : 0;
  const buffer = new ArrayBuffer(room + size);
  const hi = new Uint32Array(buffer, room, n);
  const lo = new Uint32Array(buffer, room + 4 * n, n);
  const variant = positionsIn(buffer, room + 8 * n, n, width);
  const words = layout.words;
  const i32 = new Int32Array(tally.arena);
  let i = 0;
  for (let record = 0; record < tally.top; record = nextRecord(i32, words, record)) {
    const w = 2 * record;
    const length = i32[w];
    const count = (length + 3) >> 2;
    hi[i] = murmurWords(i32, w + words, count, length, SEED_HI);
    lo[i] = murmurWords(i32, w + words, count, length, SEED_LO);
    const v = i32[w + VARIANT_WORD];
    variant[i] = v === EXCLUDED ? none : position[v];
    i++;
  }
  sortByHash(hi, lo, variant);
  return { hi, lo, variant, none };
}

/**
 * Sorts the three parallel arrays by (hi, lo) as unsigned numbers, users with equal hashes by
 * variant, in place: a scratch copy of the arrays would be the largest block of the summary, at
 * the moment of its peak memory. An MSD radix sort by bytes: the hash's first byte places each
 * user in one of 256 buckets by swaps (an American flag sort), then each bucket is sorted by the
 * next byte the same way (in the cache by then: a 256th of the users), until a bucket is short
 * enough to be sorted by comparison (random hashes: after two bytes).
 */
export function sortByHash(hi: Uint32Array, lo: Uint32Array, variant: VariantPositions): void {
  const n = hi.length;
  if (n <= SMALL_SORT) sortFew(hi, lo, variant, 0, n);
  else sortBucket(hi, lo, variant, 0, n, 0);
}

/** Up to this many users, a bucket is sorted by comparison (an insertion sort). */
const SHORT_BUCKET = 32;

/** Per digit (a byte of the hash, 0 to 7): the next free place and the end of each bucket. */
const digitNext = Array.from({ length: 8 }, () => new Int32Array(256));
const digitEnd = Array.from({ length: 8 }, () => new Int32Array(256));

/**
 * Sorts `[from, to)`, whose users agree on the hash's bytes before byte `digit` (0 to 3: hi's,
 * from the high one; 4 to 7: lo's); past them the hashes are equal.
 */
function sortBucket(
  hi: Uint32Array,
  lo: Uint32Array,
  variant: VariantPositions,
  from: number,
  to: number,
  digit: number,
): void {
  if (to - from <= SHORT_BUCKET || digit > 7) {
    sortFew(hi, lo, variant, from, to);
    return;
  }
  const words = digit < 4 ? hi : lo;
  const shift = 24 - 8 * (digit & 3);
  const next = digitNext[digit].fill(0);
  const end = digitEnd[digit];
  for (let i = from; i < to; i++) next[(words[i] >>> shift) & 0xff]++;
  let sum = from;
  for (let d = 0; d < 256; d++) {
    const count = next[d];
    next[d] = sum;
    sum += count;
    end[d] = sum;
  }
  for (let d = 0; d < 256; d++) {
    // Each user met in bucket d's free part goes to its own bucket's, in exchange for the user
    // there, until one of bucket d comes back to fill the hole.
    while (next[d] < end[d]) {
      const hole = next[d];
      let h = hi[hole], l = lo[hole], v = variant[hole];
      let b = (words[hole] >>> shift) & 0xff;
      while (b !== d) {
        const at = next[b]++;
        const th = hi[at], tl = lo[at], tv = variant[at];
        hi[at] = h;
        lo[at] = l;
        variant[at] = v;
        h = th;
        l = tl;
        v = tv;
        b = ((digit < 4 ? h : l) >>> shift) & 0xff;
      }
      hi[hole] = h;
      lo[hole] = l;
      variant[hole] = v;
      next[d]++;
    }
  }
  for (let d = 0, start = from; d < 256; start = end[d++]) {
    if (end[d] - start > 1) sortBucket(hi, lo, variant, start, end[d], digit + 1);
  }
}

/**
 * Up to this many users are sorted by comparison: a radix pass walks its counters whatever the
 * count, which for the two users of a tiny delivery is most of its analysis.
 */
const SMALL_SORT = 512;

/**
 * Sorts `[from, to)` by comparison: an insertion sort when short (buckets of random hashes),
 * else through a list of positions (many equal hashes, which random ids do not make).
 */
function sortFew(
  hi: Uint32Array,
  lo: Uint32Array,
  variant: VariantPositions,
  from: number,
  to: number,
): void {
  if (to - from > SHORT_BUCKET) {
    const order = Array.from({ length: to - from }, (_, k) => from + k)
      .sort((a, b) => hi[a] - hi[b] || lo[a] - lo[b] || variant[a] - variant[b]);
    const his = order.map((i) => hi[i]);
    const los = order.map((i) => lo[i]);
    const variants = order.map((i) => variant[i]);
    hi.set(his, from);
    lo.set(los, from);
    variant.set(variants, from);
    return;
  }
  for (let i = from + 1; i < to; i++) {
    const h = hi[i], l = lo[i], v = variant[i];
    let j = i - 1;
    while (
      j >= from &&
      (hi[j] > h || (hi[j] === h && (lo[j] > l || (lo[j] === l && variant[j] > v))))
    ) {
      hi[j + 1] = hi[j];
      lo[j + 1] = lo[j];
      variant[j + 1] = variant[j];
      j--;
    }
    hi[j + 1] = h;
    lo[j + 1] = l;
    variant[j + 1] = v;
  }
}
