/**
 * The large arrays of an analysis: where they are allocated, and freeing them when done.
 *
 * An analysis of a 200 MB file holds a few hundred MB for seconds, then nothing. Two things would
 * keep that memory resident in an idle service: the garbage collector, which frees a dropped
 * buffer only when it runs (an idle service runs none), and the system allocator, which keeps
 * freed blocks of a few MB in its heaps (glibc also raises, at each such free, the size below
 * which later blocks go there: a freed 10 MB buffer makes every block under 10 MB a heap one).
 * So the analysis allocates its large arrays with `largeBuffer` (at least `MAPPED_BYTES`: always
 * mapped by the allocator on its own, resident only where written, and given back whole when
 * freed, without moving that size) and frees them with `releaseBuffers` as soon as it is done.
 *
 * Freeing this way detaches the buffer, and that has a price: once a buffer was detached in a
 * thread (freed so, or transferred to another thread), V8 runs that thread's typed-array code
 * slower for good (the aggregation about 15% slower, README "Session H"). The service's own
 * thread detaches anyway, as its streams transfer their buffers.
 */

/** Bytes from which the system allocator maps a block on its own (glibc, 64-bit: 32 MiB). */
export const MAPPED_BYTES = 32 * 1024 * 1024;

/** Buffers of this size and more are allocated by `largeBuffer` as mapped ones. */
export const LARGE_BYTES = 256 * 1024;

/**
 * A zeroed buffer of at least `bytes` bytes: from `LARGE_BYTES` on, at least `MAPPED_BYTES` long
 * (pages never written cost no memory), below that a plain one of `bytes`.
 */
export function largeBuffer(bytes: number): ArrayBuffer {
  if (bytes < LARGE_BYTES || bytes >= MAPPED_BYTES) return new ArrayBuffer(bytes);
  try {
    return new ArrayBuffer(MAPPED_BYTES);
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
