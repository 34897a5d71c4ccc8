import { CsvError, withLine } from "../csv/csv_error.ts";
import { type ErrorCode, ServiceError } from "../errors.ts";

/** A dataset that failed a check: the code names the check, `line` the first offending line. */
export class ValidationError extends ServiceError {
  readonly line: number | null;

  /**
   * Appends ` (line N)` to the message unless the message already names that line, as in
   * `Cannot parse line 12: expected 5 fields, got 3`.
   */
  constructor(code: ErrorCode, message: string, line: number | null = null) {
    super(code, withLine(message, line));
    this.name = "ValidationError";
    this.line = line;
  }

  /** The answer to a broken CSV rule: the same code (an error code of its own name), message and line. */
  static fromCsvError(error: CsvError): ValidationError {
    return new ValidationError(error.code, error.message, error.line);
  }
}

/** `error` as the pipeline reports it: a `CsvError` becomes its `ValidationError`, anything else stays. */
export function toValidationError(error: unknown): unknown {
  return error instanceof CsvError ? ValidationError.fromCsvError(error) : error;
}
