import { LF, NUL, QUOTE } from "../csv/bytes.ts";
import { lineTooLongError, unclosedQuoteError } from "../csv/csv_error.ts";
import { type Header, headerContent, parseHeader } from "../csv/header.ts";
import { MAX_COLUMNS, MAX_LINE_BYTES } from "../csv/limits.ts";
import type { Utf8Check } from "./utf8_check.ts";
import { ValidationError } from "./validation_error.ts";

/** Options of `HeaderReader`. */
export interface HeaderReaderOptions {
  /** Longest header line in bytes; default `MAX_LINE_BYTES` (1 MiB). */
  maxLineBytes?: number;
  /** Most columns; default `MAX_COLUMNS` (1000). */
  maxColumns?: number;
}

/**
 * Collects the header: the first non-blank line, which ends at the first line feed outside
 * quotes. Skips a leading UTF-8 BOM and blank lines before it (they still count as lines; see
 * `headerContent`), checks its bytes for NUL and UTF-8 as they arrive, and refuses it once it
 * passes `maxLineBytes`. Only the header's bytes are copied. Broken CSV rules throw `CsvError`s,
 * NUL and bad UTF-8 `ValidationError`s.
 */
export class HeaderReader {
  readonly #utf8: Utf8Check;
  readonly #maxLineBytes: number;
  readonly #maxColumns: number;
  #bytes = new Uint8Array(1024);
  #length = 0;
  #quoted = false;
  #quoteLine = 0;
  /** Line of the byte being read, and the line the header started on. */
  #line = 1;
  #startLine = 1;
  /** True until the first line ends: only there may a BOM start the line. */
  #firstLine = true;
  #header: Header | null = null;

  constructor(utf8: Utf8Check, options: HeaderReaderOptions = {}) {
    this.#utf8 = utf8;
    this.#maxLineBytes = options.maxLineBytes ?? MAX_LINE_BYTES;
    this.#maxColumns = options.maxColumns ?? MAX_COLUMNS;
  }

  /** The parsed header, once complete. */
  get header(): Header | null {
    return this.#header;
  }

  /** The line after the header: where the data starts. */
  get nextLine(): number {
    return this.#line;
  }

  /**
   * Reads header bytes from `buf[from..]`. Answers the index just after the header's line feed,
   * or `-1` when the chunk ended first. Throws on a bad header.
   */
  push(buf: Uint8Array, from = 0): number {
    const n = buf.length;
    let i = from;
    if (this.#utf8.pending) {
      i = this.#utf8.resume(buf, i);
      if (i < 0) throw this.#invalidUtf8();
    }
    let start = from;
    while (i < n) {
      const b = buf[i];
      if (b === LF) {
        if (this.#quoted) {
          this.#line++;
        } else {
          this.#append(buf, start, i);
          this.#line++;
          if (this.#complete()) return i + 1;
          start = i + 1;
          this.#startLine = this.#line;
        }
      } else if (b === QUOTE) {
        this.#quoted = !this.#quoted;
        if (this.#quoted) this.#quoteLine = this.#line;
      } else if (b === NUL) {
        this.#tooLongAt(i - start);
        throw new ValidationError(
          "binary_content",
          `Binary content on line ${this.#line}: the file contains a NUL byte`,
          this.#line,
        );
      } else if (b >= 0x80) {
        const next = this.#utf8.sequence(buf, i);
        if (next < 0) {
          this.#tooLongAt(i - start);
          throw this.#invalidUtf8();
        }
        i = next;
        continue;
      }
      i++;
    }
    this.#append(buf, start, n);
    return -1;
  }

  /** End of input: completes a header without a final line feed. Answers `null` when there is none. */
  finish(): Header | null {
    if (this.#utf8.pending) throw this.#invalidUtf8();
    if (this.#quoted) throw unclosedQuoteError(this.#quoteLine);
    this.#complete();
    return this.#header;
  }

  #invalidUtf8(): ValidationError {
    return new ValidationError(
      "invalid_utf8",
      `Cannot decode line ${this.#line}: the file is not valid UTF-8`,
      this.#line,
    );
  }

  /** Throws when the header is already too long `pending` bytes past what was appended. */
  #tooLongAt(pending: number): void {
    if (this.#length + pending > this.#maxLineBytes + 1) {
      throw lineTooLongError(this.#startLine, this.#maxLineBytes);
    }
  }

  #append(buf: Uint8Array, start: number, end: number): void {
    this.#tooLongAt(end - start);
    const length = this.#length + end - start;
    if (length > this.#bytes.length) {
      const bigger = new Uint8Array(Math.max(length, this.#bytes.length * 2));
      bigger.set(this.#bytes.subarray(0, this.#length));
      this.#bytes = bigger;
    }
    this.#bytes.set(buf.subarray(start, end), this.#length);
    this.#length = length;
  }

  /** A line ended: parses it as the header unless it is blank. */
  #complete(): boolean {
    const line = headerContent(this.#bytes.subarray(0, this.#length), this.#firstLine);
    this.#firstLine = false;
    this.#length = 0;
    if (line.length === 0) return false;
    if (line.length > this.#maxLineBytes) {
      throw lineTooLongError(this.#startLine, this.#maxLineBytes);
    }
    this.#header = parseHeader(line, this.#startLine, this.#maxColumns);
    return true;
  }
}
