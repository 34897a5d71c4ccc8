import type { Delimiter } from "../csv/delimiter.ts";
import type { Header } from "../csv/header.ts";
import { MAX_COLUMNS, MAX_LINE_BYTES } from "../csv/limits.ts";
import { ColumnChecks, type MetricColumn } from "./column_checks.ts";
import { CsvScanner } from "./csv_scanner.ts";
import { HeaderReader } from "./header_reader.ts";
import { SignatureCheck } from "./signature_check.ts";
import { Utf8Check } from "./utf8_check.ts";
import { toValidationError, ValidationError } from "./validation_error.ts";

/** Options of `DatasetValidator` (and of the upload's `datasetChecks`). */
export interface DatasetValidatorOptions {
  /** Longest line (a row, line end excluded) in bytes; default `MAX_LINE_BYTES` (1 MiB). */
  maxLineBytes?: number;
  /** Most columns in the header or any row; default `MAX_COLUMNS` (1000). */
  maxColumns?: number;
}

/** What a valid dataset turned out to hold. */
export interface ValidationSummary {
  /** Bytes received, a leading BOM included. */
  bytes: number;
  /** Physical lines, blank ones included. */
  lines: number;
  /** Data rows (not the header, not blank lines). */
  rows: number;
  delimiter: Delimiter;
  /** Trimmed header names, BOM stripped. */
  columns: string[];
  /** Columns whose non-empty cells are all numbers: all 0/1 is `conversion`, else `numeric`. */
  metrics: MetricColumn[];
  /** Other columns besides `user_id`, `variant`, `date`: stored, not analysed. */
  dimensions: string[];
}

/**
 * Validates an upload as its bytes arrive: archive and encoding signatures, NUL bytes, UTF-8,
 * CSV structure, the header, the cells, and the limits (see docs/api.md, "What a direct upload
 * checks"; the CSV rules are those of `src/csv/`, whose `CsvError`s are answered as
 * `ValidationError`s of the same code, message and line). `push` is synchronous and throws a
 * `ValidationError` at the first problem; after an error every call throws it again. Chunks are
 * neither kept nor copied, apart from the first bytes while the signature is undecided, the
 * header line, and the carry-over of a cut cell.
 */
export class DatasetValidator {
  readonly #maxLineBytes: number;
  readonly #maxColumns: number;
  readonly #signature = new SignatureCheck();
  readonly #utf8 = new Utf8Check();
  readonly #header: HeaderReader;
  #scanner: CsvScanner | null = null;
  #cells: ColumnChecks | null = null;
  #bytes = 0;
  /** Bytes handed to the CSV stages so far. */
  #fed = 0;
  #error: unknown = null;
  #summary: ValidationSummary | null = null;

  constructor(options: DatasetValidatorOptions = {}) {
    this.#maxLineBytes = positive("maxLineBytes", options.maxLineBytes ?? MAX_LINE_BYTES);
    this.#maxColumns = positive("maxColumns", options.maxColumns ?? MAX_COLUMNS);
    this.#header = new HeaderReader(this.#utf8, {
      maxLineBytes: this.#maxLineBytes,
      maxColumns: this.#maxColumns,
    });
  }

  /** Checks the next chunk. Throws a `ValidationError` at the first problem. */
  push(chunk: Uint8Array): void {
    if (this.#error !== null) throw this.#error;
    if (this.#summary !== null) throw new TypeError("DatasetValidator.push called after finish");
    try {
      this.#bytes += chunk.length;
      if (this.#scanner !== null) {
        this.#fed += chunk.length;
        this.#scanner.push(chunk, 0);
        return;
      }
      let from = 0;
      if (!this.#signature.done) {
        from = this.#signature.push(chunk);
        if (from < 0) return;
        const held = this.#signature.held;
        if (held.length > 0) this.#csv(held, 0);
      }
      if (from < chunk.length) this.#csv(chunk, from);
    } catch (error) {
      throw this.#error = toValidationError(error);
    }
  }

  /** End of input: runs the checks that need all of it and answers the summary. */
  finish(): ValidationSummary {
    if (this.#error !== null) throw this.#error;
    if (this.#summary !== null) return this.#summary;
    try {
      this.#summary = this.#finish();
      return this.#summary;
    } catch (error) {
      throw this.#error = toValidationError(error);
    }
  }

  #finish(): ValidationSummary {
    if (!this.#signature.done) {
      const held = this.#signature.finish();
      if (held.length > 0) this.#csv(held, 0);
    }
    if (this.#scanner === null) {
      const header = this.#header.finish();
      if (header === null) {
        throw new ValidationError(
          "no_data_rows",
          this.#bytes === 0
            ? "No data rows: the file is empty"
            : "No data rows: the file has no header",
        );
      }
      this.#start(header, this.#fed);
    }
    const scanner = this.#scanner!;
    const cells = this.#cells!;
    scanner.finish();
    if (scanner.rows === 0) {
      throw new ValidationError("no_data_rows", "No data rows: the file has a header but no rows");
    }
    const metrics = cells.metrics();
    if (metrics.length === 0) {
      throw new ValidationError(
        "no_metric_column",
        "No metric column: at least one column besides user_id, variant and date must hold " +
          "only numbers",
      );
    }
    return {
      bytes: this.#bytes,
      lines: scanner.lines,
      rows: scanner.rows,
      delimiter: this.#header.header!.delimiter,
      columns: [...cells.names],
      metrics,
      dimensions: cells.dimensions(),
    };
  }

  /** Passes checked-signature bytes on to the header stage, then to the row scanner. */
  #csv(buf: Uint8Array, from: number): void {
    const offset = this.#fed;
    this.#fed += buf.length - from;
    if (this.#scanner === null) {
      const start = this.#header.push(buf, from);
      if (start < 0) return;
      this.#start(this.#header.header!, offset + start - from);
      from = start;
    }
    this.#scanner!.push(buf, from);
  }

  #start(header: Header, offset: number): void {
    this.#cells = new ColumnChecks(header.names, header.delimiter, this.#maxColumns);
    this.#scanner = new CsvScanner({
      delimiter: header.delimiter,
      fieldCount: header.names.length,
      cells: this.#cells,
      utf8: this.#utf8,
      line: this.#header.nextLine,
      offset,
      maxLineBytes: this.#maxLineBytes,
      maxColumns: this.#maxColumns,
    });
  }
}

function positive(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`Cannot create DatasetValidator: ${name} must be a positive integer`);
  }
  return value;
}
