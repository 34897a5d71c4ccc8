/**
 * The aggregation's own memory, given back as soon as a run is done with it. A large run holds
 * some hundreds of MB for a second or two (the user records, the value logs, the batches of
 * rows), then nothing; left to the garbage collector, the records of one run were still held
 * when the next run filled its own, and an idle service (which runs no collection) kept them
 * (docs/performance.md, "Memory"). So the engine detaches its large buffers once its summary is
 * made, which frees their memory at once. Nothing outside `src/analysis/aggregate/` sees this:
 * what the engine answers (the `Aggregate`, its user summary) is the runtime's to collect.
 */

/**
 * Frees the memory of `buffers` now. Each is detached (its views read as empty from then on), so
 * only buffers nothing else uses may be given; detached ones and shared memory are skipped.
 */
export function giveBack(...buffers: (ArrayBufferLike | null | undefined)[]): void {
  for (const buffer of buffers) {
    // Transferring to a new, empty buffer detaches this one and frees its memory at once.
    if (buffer instanceof ArrayBuffer && !buffer.detached) buffer.transferToFixedLength(0);
  }
}
