/**
 * Incremental, allocation-free UTF-8 validation (Unicode table 3-7, the rules of a fatal
 * `TextDecoder`): no overlong forms, no surrogates (`ED A0..BF`), nothing above U+10FFFF. A
 * sequence may be split across chunks; one left open at the end of input is an error.
 *
 * The CSV stages scan bytes themselves and call `sequence` only for bytes `>= 0x80`, so ASCII
 * costs nothing extra.
 */
export class Utf8Check {
  /** Continuation bytes still expected from the next chunk. */
  #need = 0;
  /** Bounds of the next continuation byte (narrower after E0, ED, F0, F4). */
  #lo = 0x80;
  #hi = 0xbf;
  /** Bytes of the open sequence already read, its lead byte included. */
  #seen = 0;

  /** True when the last chunk ended inside a multibyte sequence. */
  get pending(): boolean {
    return this.#need !== 0;
  }

  /**
   * Bytes of the sequence left open by the last chunk (its lead byte included): where it started,
   * counted back from the next chunk's first byte. Read it before `resume`.
   */
  get openBytes(): number {
    return this.#need !== 0 ? this.#seen : 0;
  }

  /**
   * Checks the sequence whose lead byte `buf[i]` is `>= 0x80`. Answers the index after it,
   * `buf.length` when the chunk ends inside it (call `resume` with the next chunk), or `-1`
   * when it is invalid.
   */
  sequence(buf: Uint8Array, i: number): number {
    const b = buf[i];
    let need: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (b < 0xc2) return -1;
    if (b < 0xe0) {
      need = 1;
    } else if (b < 0xf0) {
      need = 2;
      if (b === 0xe0) lo = 0xa0;
      else if (b === 0xed) hi = 0x9f;
    } else if (b < 0xf5) {
      need = 3;
      if (b === 0xf0) lo = 0x90;
      else if (b === 0xf4) hi = 0x8f;
    } else {
      return -1;
    }
    return this.#continuation(buf, i + 1, need, lo, hi, 1);
  }

  /** Continues a sequence left open by the previous chunk from `buf[i]`; answers as `sequence`. */
  resume(buf: Uint8Array, i: number): number {
    const need = this.#need;
    this.#need = 0;
    return this.#continuation(buf, i, need, this.#lo, this.#hi, this.#seen);
  }

  /** `seen`: bytes of the sequence before `buf[i]`. */
  #continuation(
    buf: Uint8Array,
    i: number,
    need: number,
    lo: number,
    hi: number,
    seen: number,
  ): number {
    const n = buf.length;
    while (need > 0) {
      if (i >= n) {
        this.#need = need;
        this.#lo = lo;
        this.#hi = hi;
        this.#seen = seen;
        return n;
      }
      const c = buf[i];
      if (c < lo || c > hi) return -1;
      lo = 0x80;
      hi = 0xbf;
      need--;
      i++;
      seen++;
    }
    return i;
  }

  /**
   * Checks `buf[from..to)` (default: all of it) as the next piece of a stream. Answers `-1` when
   * it is valid so far, else the index of the first byte that cannot be part of valid UTF-8.
   */
  check(buf: Uint8Array, from = 0, to = buf.length): number {
    const view = to === buf.length ? buf : buf.subarray(0, to);
    let i = from;
    if (this.#need !== 0) {
      i = this.resume(view, i);
      if (i < 0) return from;
    }
    while (i < to) {
      if (view[i] < 0x80) {
        i++;
        continue;
      }
      const next = this.sequence(view, i);
      if (next < 0) return i;
      i = next;
    }
    return -1;
  }
}
