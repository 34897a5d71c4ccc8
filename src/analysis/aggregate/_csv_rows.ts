/**
 * Splits CSV bytes pushed in chunks into rows of field ranges, RFC 4180 style, without decoding,
 * by the CSV rules of `src/csv/`: the header parsed and checked by `parseHeader` (delimiter
 * sniffed, names trimmed, required columns), blank lines before it and a leading BOM skipped
 * as `headerContent` says; then quoted fields with `""` escapes and line ends inside, CRLF or
 * LF, blank lines skipped. Only a row split over chunks is copied (to a carry buffer); every
 * other row is handed over as ranges of the chunk.
 *
 * A sink may read plain rows itself (`plainRows`, see `RowReader`): in a chunk, each row is
 * offered to it first, and only a row it leaves is split here.
 *
 * Input that breaks a rule this loop meets (a stray quote, a wrong field count, an unclosed quote,
 * a bad header) throws the rule's `CsvError` naming the physical line. It leaves to the upload
 * validator what reading does not need: NUL bytes, UTF-8, lone carriage returns and the line and
 * column limits (a row over `MAX_ROW_BYTES` is refused only to bound the carry's memory).
 */
import { CR, LF, QUOTE } from "../../csv/bytes.ts";
import {
  fieldCountError,
  lineTooLongError,
  noHeaderError,
  strayQuoteError,
  textAfterQuoteError,
  unclosedQuoteError,
} from "../../csv/csv_error.ts";
import { type Delimiter, delimiterByte } from "../../csv/delimiter.ts";
import { headerContent, parseHeader } from "../../csv/header.ts";

/** Longest row kept across chunks: a bound on memory (the line limit is 1 MiB). */
export const MAX_ROW_BYTES = 16 * 1024 * 1024;

/** Receives the header and then each data row. */
export interface CsvRowSink {
  /** The trimmed header names and the sniffed delimiter (as `parseHeader` answers them). */
  header(names: string[], delimiter: Delimiter): void;
  /**
   * One data row: field `i` is `buf[start[i]..end[i])`, quotes removed and escapes undone. The
   * arrays and `buf` are reused after the call returns. `line` is the row's first physical line.
   */
  row(buf: Uint8Array, start: Int32Array, end: Int32Array, line: number): void;
  /**
   * Optionally, reads the plain rows from `buf[pos]` on itself, as `row` would receive them, and
   * answers where the first row it did not read starts (`pos` for none); `plainTaken` is then how
   * many it read, each a single line.
   */
  plainRows?(buf: Uint8Array, pos: number, end: number): number;
  readonly plainTaken?: number;
}

export class CsvRowSplitter {
  readonly #sink: CsvRowSink;
  #delimiter = delimiterByte(",");
  /** Fields per row; 0 until the header is read. */
  #fields = 0;
  #start = new Int32Array(0);
  #end = new Int32Array(0);
  #carry = new Uint8Array(4096);
  #carryLength = 0;
  /** Whether the carried bytes end inside quotes. */
  #quoted = false;
  #scratch = new Uint8Array(256);
  /** Physical line on which the next row starts. */
  #line = 1;
  #firstRow = true;
  #empty = true;
  #finished = false;

  constructor(sink: CsvRowSink) {
    this.#sink = sink;
  }

  /** Splits `chunk`; only an incomplete last row is copied, so the caller may reuse `chunk`. */
  push(chunk: Uint8Array): void {
    if (this.#finished) throw new TypeError("Cannot read CSV: the input was already finished");
    const end = chunk.length;
    if (end > 0) this.#empty = false;
    let pos = 0;
    while (pos < end) {
      if (this.#carryLength > 0 || this.#fields === 0) {
        const lf = this.#rowEnd(chunk, pos, end);
        const stop = lf < 0 ? end : lf + 1;
        this.#keep(chunk, pos, stop);
        pos = stop;
        if (lf < 0) return;
        this.#quoted = false;
        this.#takeCarry(false);
        continue;
      }
      const sink = this.#sink;
      for (;;) {
        if (sink.plainRows !== undefined) {
          pos = sink.plainRows(chunk, pos, end);
          this.#line += sink.plainTaken!;
          if (pos === end) return;
        }
        const next = this.#row(chunk, pos, end, false);
        if (next < 0) break;
        pos = next;
        if (pos === end) return;
      }
      let quoted = false;
      for (let i = pos; i < end; i++) if (chunk[i] === QUOTE) quoted = !quoted;
      this.#quoted = quoted;
      this.#keep(chunk, pos, end);
      return;
    }
  }

  /** Reads the last row (which needs no line end); throws when there was no header. */
  finish(): void {
    if (this.#finished) return;
    this.#finished = true;
    if (this.#carryLength > 0) this.#takeCarry(true);
    if (this.#fields === 0) throw noHeaderError(this.#empty);
  }

  /** Index of the line feed ending the row that continues at `buf[pos]`, or -1. */
  #rowEnd(buf: Uint8Array, pos: number, end: number): number {
    let quoted = this.#quoted;
    for (let i = pos; i < end; i++) {
      const b = buf[i];
      if (b === QUOTE) quoted = !quoted;
      else if (b === LF && !quoted) return i;
    }
    this.#quoted = quoted;
    return -1;
  }

  #keep(buf: Uint8Array, from: number, to: number): void {
    const length = this.#carryLength + to - from;
    if (length > MAX_ROW_BYTES) throw lineTooLongError(this.#line, MAX_ROW_BYTES);
    if (length > this.#carry.length) {
      const carry = new Uint8Array(Math.max(length, 2 * this.#carry.length));
      carry.set(this.#carry.subarray(0, this.#carryLength));
      this.#carry = carry;
    }
    this.#carry.set(buf.subarray(from, to), this.#carryLength);
    this.#carryLength = length;
  }

  #takeCarry(final: boolean): void {
    const carry = this.#carry;
    const length = this.#carryLength;
    this.#carryLength = 0;
    if (this.#fields === 0) {
      this.#header(carry.subarray(0, length));
      return;
    }
    let pos = 0;
    while (pos < length) {
      const next = this.#row(carry, pos, length, final);
      if (next < 0) throw unclosedQuoteError(this.#line);
      pos = next;
    }
  }

  #header(bytes: Uint8Array): void {
    const line = this.#line;
    for (const b of bytes) if (b === LF) this.#line++;
    const end = bytes.length > 0 && bytes[bytes.length - 1] === LF
      ? bytes.length - 1
      : bytes.length;
    const content = headerContent(bytes.subarray(0, end), this.#firstRow);
    this.#firstRow = false;
    if (content.length === 0) return; // a blank line before the header
    const { names, delimiter } = parseHeader(content, line);
    this.#delimiter = delimiterByte(delimiter);
    this.#fields = names.length;
    this.#start = new Int32Array(names.length);
    this.#end = new Int32Array(names.length);
    this.#sink.header(names, delimiter);
  }

  /**
   * Reads the row starting at `buf[pos]` (pos < end) and hands it to the sink. Answers where the
   * next row starts, or -1 when the row does not end before `end` and more input may follow.
   */
  #row(buf: Uint8Array, pos: number, end: number, final: boolean): number {
    let i = pos;
    let b = buf[i];
    if (b === LF || (b === CR && (i + 1 < end ? buf[i + 1] === LF : final))) {
      this.#line++;
      return b === LF ? i + 1 : Math.min(i + 2, end);
    }
    if (b === CR && i + 1 >= end) return -1;
    const fields = this.#fields;
    const delimiter = this.#delimiter;
    const start = this.#start;
    const stop = this.#end;
    let f = 0;
    let escaped = false;
    let lines = 1;
    for (;;) {
      if (i < end && buf[i] === QUOTE) {
        let j = i + 1;
        for (;;) {
          if (j >= end) {
            if (final) throw unclosedQuoteError(this.#line);
            return -1;
          }
          b = buf[j];
          if (b === QUOTE) {
            if (j + 1 >= end) {
              if (final) break;
              return -1;
            }
            if (buf[j + 1] !== QUOTE) break;
            escaped = true;
            j += 2;
          } else {
            if (b === LF) lines++;
            j++;
          }
        }
        if (f < fields) {
          start[f] = i + 1;
          stop[f] = j;
        }
        f++;
        i = j + 1;
        if (i >= end) break;
        b = buf[i];
        if (b === delimiter) {
          i++;
          continue;
        }
        if (b === LF) {
          i++;
          break;
        }
        if (b === CR && i + 1 >= end && !final) return -1;
        if (b === CR && (i + 1 >= end || buf[i + 1] === LF)) {
          i = Math.min(i + 2, end);
          break;
        }
        throw textAfterQuoteError(this.#line + lines - 1);
      }
      let j = i;
      for (; j < end; j++) {
        b = buf[j];
        if (b > delimiter) continue; // most bytes, with a comma delimiter
        if (b === delimiter || b === LF) break;
        if (b === QUOTE) throw strayQuoteError(this.#line + lines - 1);
      }
      if (j >= end && !final) return -1;
      if (f < fields) {
        start[f] = i;
        stop[f] = j < end && b === delimiter ? j : j > i && buf[j - 1] === CR ? j - 1 : j;
      }
      f++;
      if (j >= end) {
        i = end;
        break;
      }
      i = j + 1;
      if (b === LF) break;
    }
    const line = this.#line;
    this.#line += lines;
    if (f !== fields) throw fieldCountError(line, fields, f);
    this.#sink.row(escaped ? this.#unescape(buf) : buf, start, stop, line);
    return i;
  }

  /** Copies the row's fields with `""` read as `"` into the scratch buffer and points at them. */
  #unescape(buf: Uint8Array): Uint8Array {
    const start = this.#start;
    const end = this.#end;
    let total = 0;
    for (let f = 0; f < this.#fields; f++) total += end[f] - start[f];
    if (total > this.#scratch.length) {
      this.#scratch = new Uint8Array(Math.max(total, 2 * this.#scratch.length));
    }
    const out = this.#scratch;
    let o = 0;
    for (let f = 0; f < this.#fields; f++) {
      const from = start[f];
      const to = end[f];
      start[f] = o;
      for (let k = from; k < to; k++) {
        out[o++] = buf[k];
        if (buf[k] === QUOTE) k++;
      }
      end[f] = o;
    }
    return out;
  }
}
