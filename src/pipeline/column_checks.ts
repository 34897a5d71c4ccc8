import { invalidDateError, isDate } from "../csv/calendar_date.ts";
import type { CsvError } from "../csv/csv_error.ts";
import { decimalComma, type Delimiter } from "../csv/delimiter.ts";
import { emptyCellError, hasText } from "../csv/has_text.ts";
import { MAX_CHECKED_CELL } from "../csv/limits.ts";
import { BINARY, NUMBER, numberKind, TEXT } from "../csv/number_kind.ts";

/** What a column's cells are checked for; the CSV scanner skips `SKIP` columns. */
export const SKIP = 0;
export const REQUIRED = 1;
export const DATE = 2;
export const METRIC = 3;

/** Per-column findings of metric candidates. */
const HAS_VALUE = 1;
const NOT_BINARY = 2;

/** A metric column found in the data. */
export interface MetricColumn {
  name: string;
  kind: "conversion" | "numeric";
}

/**
 * Runs the cell checks column by column and learns which columns are metrics: `user_id` and
 * `variant` must not be empty, `date` must be a calendar date, and every other column stays a
 * metric candidate until a cell holds text. A cell split over chunks is carried over (at most
 * `MAX_CHECKED_CELL` bytes; only whether it has text for `user_id` and `variant`).
 *
 * A failed check is kept as `rowError` until the row ends, so that a row with the wrong number
 * of fields is reported as such rather than by a shifted cell.
 */
export class ColumnChecks {
  /** Check per field index; fields past the header's count are `SKIP`. */
  readonly kinds: Uint8Array;
  readonly names: readonly string[];
  /** The first failed check of the current row, if any. */
  rowError: CsvError | null = null;

  /** A decimal comma is accepted in numbers (semicolon-delimited files). */
  readonly decimalComma: boolean;
  /** Per metric candidate: bit 1 a value was seen, bit 2 a value other than 0/1. */
  readonly found: Uint8Array;
  readonly #text: Uint8Array;
  #carry = new Uint8Array(MAX_CHECKED_CELL);
  #carryLength = 0;
  #carryTooLong = false;
  #carryHasText = false;
  #partial = false;

  /** `names` are the trimmed header names; `maxColumns` bounds the field index the scanner passes. */
  constructor(names: readonly string[], delimiter: Delimiter, maxColumns: number) {
    this.names = names;
    this.decimalComma = decimalComma(delimiter);
    this.kinds = new Uint8Array(Math.max(maxColumns, names.length) + 2);
    this.found = new Uint8Array(names.length);
    this.#text = new Uint8Array(names.length);
    names.forEach((name, field) => {
      this.kinds[field] = name === "user_id" || name === "variant"
        ? REQUIRED
        : name === "date"
        ? DATE
        : METRIC;
    });
  }

  /** Checks the complete cell `buf[start..end)` of `field`, found on `line`. */
  cell(field: number, buf: Uint8Array, start: number, end: number, line: number): void {
    if (this.#partial) {
      this.#cellFromCarry(field, buf, start, end, line);
      return;
    }
    const kind = this.kinds[field];
    if (kind === METRIC) {
      this.metric(field, numberKind(buf, start, end, this.decimalComma));
    } else if (kind === DATE) {
      if (!isDate(buf, start, end)) this.#badDate(buf.subarray(start, end), line);
    } else if (kind === REQUIRED) {
      if (!hasText(buf, start, end)) this.#empty(field, line);
    }
  }

  /** Keeps the part `buf[start..end)` of a cell of `field` that continues in the next chunk. */
  partial(field: number, buf: Uint8Array, start: number, end: number): void {
    this.#partial = true;
    if (this.kinds[field] === REQUIRED) {
      this.#carryHasText ||= hasText(buf, start, end);
      return;
    }
    const length = end - start;
    if (this.#carryTooLong || this.#carryLength + length > MAX_CHECKED_CELL) {
      this.#carryTooLong = true;
      return;
    }
    this.#carry.set(buf.subarray(start, end), this.#carryLength);
    this.#carryLength += length;
  }

  #cellFromCarry(field: number, buf: Uint8Array, start: number, end: number, line: number): void {
    const hadText = this.#carryHasText;
    this.partial(field, buf, start, end);
    const kept = this.#carry.subarray(0, this.#carryLength);
    const carry = this.#carryTooLong ? null : kept;
    this.#partial = false;
    this.#carryLength = 0;
    this.#carryTooLong = false;
    this.#carryHasText = false;
    const kind = this.kinds[field];
    if (kind === REQUIRED) {
      if (!hadText && !hasText(buf, start, end)) this.#empty(field, line);
    } else if (carry === null) {
      if (kind === METRIC) this.metric(field, TEXT);
      else this.#badDate(kept, line);
    } else {
      this.cell(field, carry, 0, carry.length, line);
    }
  }

  /** Records the `numberKind` of a metric candidate's cell; text makes it a dimension. */
  metric(field: number, kind: number): void {
    if (kind === TEXT) {
      this.#text[field] = 1;
      this.kinds[field] = SKIP;
    } else if (kind === BINARY) {
      this.found[field] |= HAS_VALUE;
    } else if (kind === NUMBER) {
      this.found[field] = HAS_VALUE | NOT_BINARY;
    }
  }

  #badDate(value: Uint8Array, line: number): void {
    this.rowError ??= invalidDateError(value, line);
  }

  #empty(field: number, line: number): void {
    this.rowError ??= emptyCellError(this.names[field], line);
  }

  /** Columns (other than `user_id`, `variant`, `date`) whose non-empty cells are all numbers, with at least one. */
  metrics(): MetricColumn[] {
    const metrics: MetricColumn[] = [];
    this.names.forEach((name, field) => {
      const found = this.found[field];
      if (this.#isCandidate(field) && this.#text[field] === 0 && (found & HAS_VALUE) !== 0) {
        metrics.push({ name, kind: (found & NOT_BINARY) !== 0 ? "numeric" : "conversion" });
      }
    });
    return metrics;
  }

  /** The other columns: text in some cell, or no value at all. */
  dimensions(): string[] {
    return this.names.filter((_, field) =>
      this.#isCandidate(field) && (this.#text[field] === 1 || this.found[field] === 0)
    );
  }

  #isCandidate(field: number): boolean {
    const name = this.names[field];
    return name !== "user_id" && name !== "variant" && name !== "date";
  }
}
