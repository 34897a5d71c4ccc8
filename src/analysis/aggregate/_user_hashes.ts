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
import { largeBuffer, releaseBuffers } from "../../buffers.ts";

/** Users sorted by (hi, lo) as unsigned numbers; `variant[i]` is a position in the sorted variants, -1 for a user seen in two. */
export interface UserHashes {
  hi: Uint32Array;
  lo: Uint32Array;
  variant: Int32Array;
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

/** The users of the tallies (disjoint sets) with their hashes and variant positions, sorted. */
export function userHashes(
  tallies: TallyState[],
  layout: RecordLayout,
  position: Int32Array,
): UserHashes {
  const n = tallies.reduce((sum, tally) => sum + tally.users, 0);
  // One large buffer for the three (see `buffers.ts`): releasing one of them frees it.
  const buffer = largeBuffer(12 * n);
  const hi = new Uint32Array(buffer, 0, n);
  const lo = new Uint32Array(buffer, 4 * n, n);
  const variant = new Int32Array(buffer, 8 * n, n);
  const words = layout.words;
  let i = 0;
  for (const tally of tallies) {
    const i32 = new Int32Array(tally.arena);
    for (let record = 0; record < tally.top; record = nextRecord(i32, words, record)) {
      const w = 2 * record;
      const length = i32[w];
      const count = (length + 3) >> 2;
      hi[i] = murmurWords(i32, w + words, count, length, SEED_HI);
      lo[i] = murmurWords(i32, w + words, count, length, SEED_LO);
      const v = i32[w + VARIANT_WORD];
      variant[i] = v === EXCLUDED ? -1 : position[v];
      i++;
    }
  }
  sortByHash(hi, lo, variant);
  return { hi, lo, variant };
}

/**
 * Sorts the three parallel arrays by (hi, lo), unsigned: two stable passes of 16 bits on hi, then
 * each run of equal hi words (random 32-bit words seldom repeat: about n²/2³³ pairs) in order of
 * lo, stably. The same order as four passes over both words, in half their time.
 */
export function sortByHash(hi: Uint32Array, lo: Uint32Array, variant: Int32Array): void {
  const n = hi.length;
  if (n <= SMALL_SORT) {
    sortFew(hi, lo, variant);
    return;
  }
  const scratch = largeBuffer(12 * n);
  let srcHi: Uint32Array = hi, srcLo: Uint32Array = lo, srcV: Int32Array = variant;
  let dstHi: Uint32Array = new Uint32Array(scratch, 0, n);
  let dstLo: Uint32Array = new Uint32Array(scratch, 4 * n, n);
  let dstV: Int32Array = new Int32Array(scratch, 8 * n, n);
  const count = digitCounts ??= new Int32Array(1 << 16);
  for (let shift = 0; shift < 32; shift += 16) {
    count.fill(0);
    for (let i = 0; i < n; i++) count[(srcHi[i] >>> shift) & 0xffff]++;
    let sum = 0;
    for (let d = 0; d < count.length; d++) {
      const c = count[d];
      count[d] = sum;
      sum += c;
    }
    for (let i = 0; i < n; i++) {
      const at = count[(srcHi[i] >>> shift) & 0xffff]++;
      dstHi[at] = srcHi[i];
      dstLo[at] = srcLo[i];
      dstV[at] = srcV[i];
    }
    [srcHi, dstHi] = [dstHi, srcHi];
    [srcLo, dstLo] = [dstLo, srcLo];
    [srcV, dstV] = [dstV, srcV];
  }
  // After two passes the data is back in the caller's arrays.
  releaseBuffers(scratch);
  for (let i = 1; i < n; i++) {
    if (hi[i] !== hi[i - 1]) continue;
    let end = i + 1;
    while (end < n && hi[end] === hi[i]) end++;
    sortRunByLo(lo, variant, i - 1, end);
    i = end - 1;
  }
}

/**
 * Up to this many users are sorted by comparison: a radix pass walks its 65,536 counters whatever
 * the count, which for the two users of a tiny delivery is most of its analysis.
 */
const SMALL_SORT = 512;

/** The radix sort's counters, kept between sorts (256 KiB; zeroed at each pass). */
let digitCounts: Int32Array | undefined;

/** `sortByHash` for a few users: a stable comparison sort of their positions. */
function sortFew(hi: Uint32Array, lo: Uint32Array, variant: Int32Array): void {
  const order = Array.from({ length: hi.length }, (_, k) => k)
    .sort((a, b) => hi[a] - hi[b] || lo[a] - lo[b] || a - b);
  const his = order.map((i) => hi[i]);
  const los = order.map((i) => lo[i]);
  const variants = order.map((i) => variant[i]);
  hi.set(his);
  lo.set(los);
  variant.set(variants);
}

/** Orders `lo[from..to)` (and `variant` alike) stably: an insertion sort, runs being short. */
function sortRunByLo(lo: Uint32Array, variant: Int32Array, from: number, to: number): void {
  if (to - from > 64) {
    // A long run (not from random words): sorted through a list of positions.
    const order = Array.from({ length: to - from }, (_, k) => from + k)
      .sort((a, b) => lo[a] - lo[b] || a - b);
    const los = order.map((i) => lo[i]);
    const variants = order.map((i) => variant[i]);
    lo.set(los, from);
    variant.set(variants, from);
    return;
  }
  for (let i = from + 1; i < to; i++) {
    const key = lo[i];
    const v = variant[i];
    let j = i - 1;
    while (j >= from && lo[j] > key) {
      lo[j + 1] = lo[j];
      variant[j + 1] = variant[j];
      j--;
    }
    lo[j + 1] = key;
    variant[j + 1] = v;
  }
}
