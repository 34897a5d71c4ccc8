import { CR, LF, NUL, QUOTE } from "../csv/bytes.ts";
import {
  type CsvError,
  fieldCountError,
  lineTooLongError,
  loneCarriageReturnError,
  strayQuoteError,
  textAfterQuoteError,
  tooManyColumnsError,
  unclosedQuoteError,
} from "../csv/csv_error.ts";
import { type Delimiter, delimiterByte } from "../csv/delimiter.ts";
import { MAX_COLUMNS, MAX_LINE_BYTES } from "../csv/limits.ts";
import type { ColumnChecks } from "./column_checks.ts";
import { compileFastRows, type FastRows, type FastRowsContext } from "./_fast_rows.ts";
import type { Utf8Check } from "./utf8_check.ts";
import { ValidationError } from "./validation_error.ts";

/** Options of `CsvScanner`. */
export interface CsvScannerOptions {
  delimiter: Delimiter;
  /** Fields every row must have: the header's count. */
  fieldCount: number;
  /** Cell checks per column; `cells.kinds` says which fields to hand over. */
  cells: ColumnChecks;
  /** Shared with the header stage, which may end inside a chunk. */
  utf8: Utf8Check;
  /** Line number of the first byte; default 2 (after a one-line header). */
  line?: number;
  /** Byte offset of the first byte in the upload; default 0. */
  offset?: number;
  /** Longest row in bytes, line end excluded; default `MAX_LINE_BYTES` (1 MiB). */
  maxLineBytes?: number;
  /** Most fields in a row; default `MAX_COLUMNS` (1000). */
  maxColumns?: number;
  /** Use the compiled fast path for plain rows; default true (tests compare both). */
  fastPath?: boolean;
}

// Scanner states between bytes.
const FIELD = 0; // at the start of a field
const UNQUOTED = 1; // inside an unquoted field
const QUOTED = 2; // inside a quoted field
const QUOTE_SEEN = 3; // just after a quote inside a quoted field: an escape or the closing quote
const CLOSED = 4; // after a closing quote: a delimiter or line end must follow
const CR_SEEN = 5; // after a carriage return outside quotes: a line feed must follow

/** Marks the bytes that end the tight loops: 1 in unquoted fields, 2 in quoted fields, 3 both. */
function byteClasses(delimiter: number): Uint8Array {
  const classes = new Uint8Array(256);
  for (let b = 0x80; b < 256; b++) classes[b] = 3;
  classes[NUL] = 3;
  classes[LF] = 3;
  classes[QUOTE] = 3;
  classes[CR] = 1;
  classes[delimiter] = 1;
  return classes;
}

/**
 * Scans the data rows after the header in one pass over each chunk: RFC 4180 quoting, CRLF or
 * LF line ends, the field count of every row, NUL bytes, UTF-8 (bytes `>= 0x80` only), the row
 * and column limits, and blank lines (skipped, still counted). Complete cells of checked
 * columns go to `ColumnChecks`; cells cut by a chunk end are carried over there. Chunks are
 * never kept. Errors name the physical line: `CsvError`s for broken CSV rules, `ValidationError`s
 * for NUL bytes and bad UTF-8.
 */
export class CsvScanner {
  readonly #delimiter: number;
  readonly #classes: Uint8Array;
  readonly #fieldCount: number;
  readonly #cells: ColumnChecks;
  readonly #utf8: Utf8Check;
  readonly #maxLineBytes: number;
  readonly #maxColumns: number;

  #state = FIELD;
  #field = 0;
  #line: number;
  #offset: number;
  /** Offset of the current row's first byte and the line it started on. */
  #rowStart: number;
  #rowLine: number;
  #quoteLine = 0;
  #rows = 0;
  readonly #fast: FastRows | null;
  readonly #context: FastRowsContext;

  constructor(options: CsvScannerOptions) {
    this.#delimiter = delimiterByte(options.delimiter);
    this.#classes = byteClasses(this.#delimiter);
    this.#fieldCount = options.fieldCount;
    this.#cells = options.cells;
    this.#utf8 = options.utf8;
    this.#maxLineBytes = options.maxLineBytes ?? MAX_LINE_BYTES;
    this.#maxColumns = options.maxColumns ?? MAX_COLUMNS;
    this.#line = options.line ?? 2;
    this.#offset = options.offset ?? 0;
    this.#rowStart = this.#offset;
    this.#rowLine = this.#line;
    this.#context = { rows: 0, cells: this.#cells, classes: this.#classes, utf8: this.#utf8 };
    this.#fast = options.fastPath === false ? null : this.#compileFastPath();
  }

  /** The compiled fast path, or `null` where code generation is disabled (the state machine alone is slower, not different). */
  #compileFastPath(): FastRows | null {
    try {
      return compileFastRows(this.#cells.kinds, this.#fieldCount, {
        delimiter: this.#delimiter,
        maxLineBytes: this.#maxLineBytes,
      });
    } catch (error) {
      if (error instanceof EvalError) return null;
      throw error;
    }
  }

  /** Data rows seen so far (blank lines excluded). */
  get rows(): number {
    return this.#rows;
  }

  /** Physical lines so far, counting a last line without a line feed. */
  get lines(): number {
    const atLineStart = this.#state === FIELD && this.#field === 0 &&
      this.#rowStart === this.#offset;
    return atLineStart ? this.#line - 1 : this.#line;
  }

  /** Scans `buf[from..]`. Throws at the first problem. */
  push(buf: Uint8Array, from = 0): void {
    const n = buf.length;
    const classes = this.#classes;
    const delimiter = this.#delimiter;
    const cells = this.#cells;
    const kinds = cells.kinds;
    const maxLineBytes = this.#maxLineBytes;
    const fast = this.#fast;
    const context = this.#context;
    // The fast path takes rows up to the chunk's last line feed, which bounds its scans.
    const fastEnd = fast === null ? 0 : buf.lastIndexOf(LF) + 1;
    const base = this.#offset - from; // upload offset of buf[0]
    let state = this.#state;
    let field = this.#field;
    let line = this.#line;
    let rowStart = this.#rowStart;
    let i = from;
    let cellStart = from;
    let quoteAt = from;

    if (this.#utf8.pending) {
      // A sequence cut by the chunk end is reported where it starts, as it is in one chunk.
      const open = this.#utf8.openBytes;
      i = this.#utf8.resume(buf, i);
      if (i < 0) throw this.#invalidUtf8(line, base + from - open);
    }

    while (i < n) {
      if (state === FIELD) {
        if (field === 0 && fast !== null) {
          const next = fastEnd > i ? fast(buf, i, fastEnd, context) : i;
          if (next !== i) {
            this.#rows += context.rows;
            line += context.rows;
            i = next;
            rowStart = base + i;
            this.#rowLine = line;
            if (i === n) break;
          }
        }
        if (buf[i] === QUOTE) {
          state = QUOTED;
          this.#quoteLine = line;
          cellStart = ++i;
          continue;
        }
        state = UNQUOTED;
        cellStart = i;
      }
      if (state === UNQUOTED) {
        while (i < n && (classes[buf[i]] & 1) === 0) i++;
        if (i === n) break;
        const b = buf[i];
        if (b === delimiter) {
          if (kinds[field] !== 0) cells.cell(field, buf, cellStart, i, line);
          i++;
          field++;
          state = FIELD;
          if (base + i - rowStart > maxLineBytes) throw this.#tooLong();
          if (field >= this.#maxColumns) throw this.#tooManyColumns();
        } else if (b === LF || b === CR) {
          if (field !== 0 || base + i !== rowStart) {
            if (kinds[field] !== 0) cells.cell(field, buf, cellStart, i, line);
            this.#endRow(field, base + i - rowStart);
          }
          if (b === LF) {
            line++;
            rowStart = base + i + 1;
            this.#rowLine = line;
            state = FIELD;
          } else {
            state = CR_SEEN;
          }
          field = 0;
          i++;
        } else if (b >= 0x80) {
          const next = this.#utf8.sequence(buf, i);
          if (next < 0) throw this.#unless(base + i - rowStart, this.#invalidUtf8(line, base + i));
          i = next;
        } else if (b === QUOTE) {
          throw this.#unless(base + i - rowStart, strayQuoteError(line));
        } else {
          throw this.#unless(base + i - rowStart, this.#nul(line));
        }
        continue;
      }
      if (state === QUOTED) {
        while (i < n && (classes[buf[i]] & 2) === 0) i++;
        if (i === n) break;
        const b = buf[i];
        if (b === QUOTE) {
          state = QUOTE_SEEN;
          quoteAt = i++;
        } else if (b === LF) {
          line++;
          i++;
        } else if (b >= 0x80) {
          const next = this.#utf8.sequence(buf, i);
          if (next < 0) throw this.#unless(base + i - rowStart, this.#invalidUtf8(line, base + i));
          i = next;
        } else {
          throw this.#unless(base + i - rowStart, this.#nul(line));
        }
        continue;
      }
      if (state === QUOTE_SEEN) {
        if (buf[i] === QUOTE) {
          state = QUOTED; // an escaped quote
          i++;
          continue;
        }
        if (kinds[field] !== 0) cells.cell(field, buf, cellStart, quoteAt, line);
        state = CLOSED;
      }
      if (state === CLOSED) {
        const b = buf[i];
        if (b === delimiter) {
          i++;
          field++;
          state = FIELD;
          if (base + i - rowStart > maxLineBytes) throw this.#tooLong();
          if (field >= this.#maxColumns) throw this.#tooManyColumns();
        } else if (b === LF || b === CR) {
          this.#endRow(field, base + i - rowStart);
          field = 0;
          if (b === LF) {
            line++;
            rowStart = base + i + 1;
            this.#rowLine = line;
            state = FIELD;
          } else {
            state = CR_SEEN;
          }
          i++;
        } else {
          throw this.#unless(base + i - rowStart, textAfterQuoteError(line));
        }
        continue;
      }
      // CR_SEEN
      if (buf[i] !== LF) throw loneCarriageReturnError(line);
      line++;
      i++;
      rowStart = base + i;
      this.#rowLine = line;
      state = FIELD;
    }

    this.#state = state;
    this.#field = field;
    this.#line = line;
    this.#rowStart = rowStart;
    this.#offset = base + n;
    if (state === UNQUOTED || state === QUOTED) {
      if (kinds[field] !== 0) cells.partial(field, buf, cellStart, n);
    } else if (state === QUOTE_SEEN) {
      if (kinds[field] !== 0) cells.partial(field, buf, cellStart, quoteAt);
    }
    if ((state !== FIELD || field !== 0) && state !== CR_SEEN) {
      if (base + n - rowStart > maxLineBytes) throw this.#tooLong();
    }
  }

  /** End of input: ends the last row and refuses an open sequence or quote. */
  finish(): void {
    const line = this.#line;
    if (this.#utf8.pending) throw this.#invalidUtf8(line, this.#offset);
    const state = this.#state;
    const field = this.#field;
    if (state === QUOTED) throw unclosedQuoteError(this.#quoteLine);
    if (state === CR_SEEN) throw loneCarriageReturnError(line);
    const empty = new Uint8Array(0);
    if (state === UNQUOTED || state === QUOTE_SEEN || (state === FIELD && field !== 0)) {
      if (this.#cells.kinds[field] !== 0) this.#cells.cell(field, empty, 0, 0, line);
      this.#endRow(field, this.#offset - this.#rowStart);
    } else if (state === CLOSED) {
      this.#endRow(field, this.#offset - this.#rowStart);
    }
  }

  /** A row of `length` bytes ended with `field` as its last field index. */
  #endRow(field: number, length: number): void {
    const line = this.#rowLine;
    if (length > this.#maxLineBytes) throw this.#tooLong();
    if (field + 1 !== this.#fieldCount) throw fieldCountError(line, this.#fieldCount, field + 1);
    const error = this.#cells.rowError;
    if (error !== null) throw error;
    this.#rows++;
  }

  /**
   * The error found `length` bytes into the current row, unless the row was already too long
   * there: then the length is the first problem, as it is when a chunk end comes between.
   */
  #unless(length: number, error: CsvError | ValidationError): CsvError | ValidationError {
    return length > this.#maxLineBytes ? this.#tooLong() : error;
  }

  #tooLong(): CsvError {
    return lineTooLongError(this.#rowLine, this.#maxLineBytes);
  }

  #tooManyColumns(): CsvError {
    return tooManyColumnsError(this.#rowLine, this.#maxColumns);
  }

  #nul(line: number): ValidationError {
    return new ValidationError(
      "binary_content",
      `Binary content on line ${line}: the file contains a NUL byte`,
      line,
    );
  }

  #invalidUtf8(line: number, offset: number): ValidationError {
    return new ValidationError(
      "invalid_utf8",
      `Cannot decode line ${line}: the file is not valid UTF-8 (byte ${offset})`,
      line,
    );
  }
}
