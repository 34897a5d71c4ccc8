/**
 * The large arrays of an analysis: where they are allocated, and freeing them when done.
 *
 * An analysis of a 200 MB file holds a few hundred MB for seconds, then nothing. Two things would
 * keep that memory resident in an idle service: the garbage collector, which frees a dropped
 * buffer only when it runs (an idle service runs none), and the system allocator, which keeps
 * freed blocks of a few MB in its heaps (glibc also raises, at each such free, the size below
 * which later blocks go there: a freed 10 MB buffer makes every block under 10 MB a heap one).
 * So the analysis allocates its large arrays with `largeBuffer` (at least `mappedBytes()`: always
 * mapped by the allocator on its own, resident only where written, and given back whole when
 * freed, without moving that size) and frees them with `releaseBuffers` as soon as it is done.
 *
 * V8 counts each buffer's whole length as memory held outside its heap, and runs a full garbage
 * collection each time that count grew by some tens of MB: a reservation is no larger than it
 * must be. Where glibc's threshold is fixed (`GLIBC_TUNABLES`, as the tasks and the deployment
 * files set it to 8 MiB), a block of that size is mapped on its own, and a reservation takes that
 * much; otherwise 32 MiB, the most glibc's moving threshold reaches. Reservations of 8 MiB instead
 * of 32 MiB nearly halved the main isolate's full collections during analyses (16 against 28 over
 * three deliveries), and V8's helper threads took a fifth to two fifths less processor time
 * (docs/performance.md, session X).
 *
 * Freeing this way detaches the buffer. Session H measured a price for that: once a buffer was
 * detached in a thread (freed so, or transferred to another thread), V8 ran that thread's
 * typed-array code slower for good (the aggregation about 15% slower). Session W found none in Deno
 * 2.9.6: loops timed before and after a detach, and the aggregation with its batches in shared
 * memory (never detached by the worker), took the same time (docs/performance.md, session W).
 */

import { FALSE_WORDS } from "./config.ts";

/**
 * Bytes from which glibc maps a block on its own whatever its threshold did (64-bit: 32 MiB, the
 * most its moving threshold reaches, and the largest it accepts as a fixed one).
 */
export const MAPPED_BYTES = 32 * 1024 * 1024;

/** Buffers of this size and more are allocated by `largeBuffer` as mapped ones. */
export const LARGE_BYTES = 256 * 1024;

/** A transparent huge page (2 MiB, x86-64 and the usual 64-bit ARM kernels). */
export const HUGE_PAGE_BYTES = 2 * 1024 * 1024;

let glibcHuge: boolean | undefined;
let mapped: number | undefined;

/** The variables glibc's allocator reads, or none where the environment may not be read. */
function allocatorEnv(): Record<string, string | undefined> {
  try {
    return {
      GLIBC_TUNABLES: Deno.env.get("GLIBC_TUNABLES"),
      MALLOC_MMAP_THRESHOLD_: Deno.env.get("MALLOC_MMAP_THRESHOLD_"),
    };
  } catch {
    return {}; // the environment may not be read: glibc's defaults
  }
}

/** `GLIBC_TUNABLES`'s settings in `env`. */
function tunables(env: Record<string, string | undefined>): string[] {
  return (env.GLIBC_TUNABLES ?? "").split(":").map((t) => t.trim());
}

/**
 * The threshold `env` fixes for the blocks glibc maps on their own, in bytes, or null: through
 * `GLIBC_TUNABLES` (`glibc.malloc.mmap_threshold=N` among its `:`-joined settings) or the older
 * `MALLOC_MMAP_THRESHOLD_`.
 */
export function fixedMmapThreshold(env: Record<string, string | undefined>): number | null {
  for (const t of tunables(env)) {
    const match = /^glibc\.malloc\.mmap_threshold=(\d+)$/.exec(t);
    if (match) return Number(match[1]);
  }
  const old = env.MALLOC_MMAP_THRESHOLD_ ?? "";
  return /^\d+$/.test(old) ? Number(old) : null;
}

/**
 * Bytes from which glibc maps a block on its own in this process: its fixed threshold
 * (`fixedMmapThreshold`) where one is set, up to `MAPPED_BYTES`; else `MAPPED_BYTES`. Read once
 * a thread.
 */
export function mappedBytes(): number {
  if (mapped !== undefined) return mapped;
  const fixed = fixedMmapThreshold(allocatorEnv()) ?? 0;
  return mapped = Deno.build.os === "linux" && fixed > 0 && fixed <= MAPPED_BYTES
    ? fixed
    : MAPPED_BYTES;
}

/**
 * Whether glibc asks for huge pages for every block it maps on its own (`glibc.malloc.hugetlb=1`,
 * or `2`, in `GLIBC_TUNABLES`: docs/operations.md, "Huge pages"). Read once a thread.
 */
export function glibcHugePages(): boolean {
  if (glibcHuge !== undefined) return glibcHuge;
  return glibcHuge = Deno.build.os === "linux" &&
    tunables(allocatorEnv()).some((t) => /^glibc\.malloc\.hugetlb=[12]$/.test(t));
}

/**
 * A zeroed buffer of at least `bytes` bytes: from `LARGE_BYTES` on, at least `mappedBytes()` long
 * (pages never written cost no memory), below that a plain one of `bytes`. When glibc asks for
 * huge pages for its mappings (`glibcHugePages`), such a reservation holds a whole 2 MiB page (or
 * two) where a megabyte of it is written: a buffer under `HUGE_PAGE_BYTES` (a batch of rows, a
 * read buffer) is then a plain one, from the allocator's heap. Measured: the insight benchmark's
 * cycles peaked 2–15 MB lower with it, 9 by the median (docs/performance.md, session W).
 */
export function largeBuffer(bytes: number): ArrayBuffer {
  const reserve = mappedBytes();
  if (bytes < LARGE_BYTES || bytes >= reserve) return new ArrayBuffer(bytes);
  if (bytes < HUGE_PAGE_BYTES && glibcHugePages()) return new ArrayBuffer(bytes);
  try {
    return new ArrayBuffer(reserve);
  } catch {
    // A system that refuses to promise the address space (strict overcommit): just the bytes.
    return new ArrayBuffer(bytes);
  }
}

/** An `Int32Array` of `length` zeros, over a `largeBuffer`. */
export function largeInt32Array(length: number): Int32Array<ArrayBuffer> {
  return new Int32Array(largeBuffer(4 * length), 0, length);
}

/** A `Uint8Array` of `length` zeros, over a `largeBuffer`. */
export function largeUint8Array(length: number): Uint8Array<ArrayBuffer> {
  return new Uint8Array(largeBuffer(length), 0, length);
}

/** A `Float64Array` of `length` zeros, over a `largeBuffer`. */
export function largeFloat64Array(length: number): Float64Array<ArrayBuffer> {
  return new Float64Array(largeBuffer(8 * length), 0, length);
}

/**
 * Frees the memory of `buffers` (or of the buffers under views) now: each is detached (its views
 * read as empty from then on), so only buffers nothing else uses may be given. Detached buffers
 * and shared memory are skipped.
 */
export function releaseBuffers(
  ...buffers: (ArrayBufferLike | ArrayBufferView | null | undefined)[]
): void {
  for (const item of buffers) {
    if (item === null || item === undefined) continue;
    const buffer = ArrayBuffer.isView(item) ? item.buffer : item;
    // Transferring to a new, empty buffer detaches this one and frees its memory at once.
    if (buffer instanceof ArrayBuffer && !buffer.detached) buffer.transferToFixedLength(0);
  }
}

/** Where the C library lies on the usual 64-bit Linux systems (`hugePages` tries each). */
export const LIBC_PATHS = [
  "/lib/x86_64-linux-gnu/libc.so.6",
  "/lib/aarch64-linux-gnu/libc.so.6",
  "/lib64/libc.so.6",
  "/usr/lib64/libc.so.6",
];

/** `madvise`'s advice for transparent huge pages (Linux). */
const MADV_HUGEPAGE = 14;
const HUGE_PAGE = BigInt(HUGE_PAGE_BYTES);

/**
 * Buffers from this size on get huge pages from `adviseHugePages`: they are worth it, and always
 * mapped on their own (`MAPPED_BYTES`), so that the advice never lands on the allocator's heap,
 * where it would outlive the buffer.
 */
export const HUGE_PAGE_MIN_BYTES = MAPPED_BYTES;

type Advise = (buffer: ArrayBuffer) => boolean;
let advise: Advise | null | undefined;

/** Whether `ABN_HUGE_PAGES` turns huge pages off (`src/config.ts` validates it at start-up). */
function turnedOff(): boolean {
  try {
    const value = Deno.env.get("ABN_HUGE_PAGES")?.trim().toLowerCase() ?? "";
    return FALSE_WORDS.includes(value);
  } catch {
    return false; // the environment may not be read: the default
  }
}

/**
 * The C library's `madvise`, when this is Linux, `ABN_HUGE_PAGES` does not turn it off, the
 * process may load that library (`--allow-ffi` with its path, see `LIBC_PATHS`) and the library
 * loads; else null. Looked up once a thread.
 */
function hugePages(): Advise | null {
  if (advise !== undefined) return advise;
  advise = null;
  if (Deno.build.os !== "linux" || turnedOff()) return null;
  for (const path of LIBC_PATHS) {
    try {
      if (Deno.permissions.querySync({ name: "ffi", path }).state !== "granted") continue;
      const libc = Deno.dlopen(path, {
        // `memset(p, 0, 0)` answers `p`: the buffer's address, without the wider permission
        // that `Deno.UnsafePointer.of` needs.
        memset: { parameters: ["buffer", "i32", "usize"], result: "usize" },
        madvise: { parameters: ["usize", "usize", "i32"], result: "i32" },
      });
      advise = (buffer) => {
        const address = BigInt(libc.symbols.memset(new Uint8Array(buffer, 0, 1), 0, 0n));
        const start = (address + HUGE_PAGE - 1n) & ~(HUGE_PAGE - 1n);
        const end = (address + BigInt(buffer.byteLength)) & ~(HUGE_PAGE - 1n);
        return end > start && libc.symbols.madvise(start, end - start, MADV_HUGEPAGE) === 0;
      };
      return advise;
    } catch {
      // not there, or not loadable: the next one
    }
  }
  return null;
}

/** True when `adviseHugePages` can ask for huge pages in this thread (see `hugePages`). */
export function canAdviseHugePages(): boolean {
  return hugePages() !== null;
}

/**
 * `largeBuffer(bytes)`, and from `LARGE_BYTES` on, where `adviseHugePages` can ask for huge pages,
 * at least `HUGE_PAGE_MIN_BYTES` long and asked for them: for the user table's records and slots.
 */
export function hugeBuffer(bytes: number): ArrayBuffer {
  if (bytes < LARGE_BYTES || bytes >= HUGE_PAGE_MIN_BYTES || !canAdviseHugePages()) {
    const buffer = largeBuffer(bytes);
    adviseHugePages(buffer);
    return buffer;
  }
  let buffer: ArrayBuffer;
  try {
    buffer = new ArrayBuffer(HUGE_PAGE_MIN_BYTES);
  } catch {
    return largeBuffer(bytes); // strict overcommit (see `largeBuffer`)
  }
  adviseHugePages(buffer);
  return buffer;
}

/**
 * Asks the kernel to back `buffer` with transparent huge pages (2 MiB) where it holds whole ones,
 * and answers whether it was asked. For the few large tables read and written at random (the
 * user table's records and slots): their first touches and the processor's page-table walks cost
 * a quarter of an aggregation on a virtual machine with 4 KiB pages, and a huge page rounds a
 * buffer up by at most 2 MiB. Nothing happens below `HUGE_PAGE_MIN_BYTES`, on a system that has
 * turned them off (`never`), or without the permission (see `hugePages`); with `always` they come
 * anyway. The contents do not change.
 */
export function adviseHugePages(buffer: ArrayBuffer): boolean {
  if (buffer.byteLength < HUGE_PAGE_MIN_BYTES) return false;
  const madvise = hugePages();
  return madvise !== null && madvise(buffer);
}
