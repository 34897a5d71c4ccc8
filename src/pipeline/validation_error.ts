import type { ErrorCode } from "../http/errors.ts";
import { ApiError } from "../http/errors.ts";

/** A dataset that failed a check: the code names the check, `line` the first offending line. */
export class ValidationError extends ApiError {
  readonly line: number | null;

  /**
   * Appends ` (line N)` to the message unless the message already names that line, as in
   * `Cannot parse line 12: expected 5 fields, got 3`.
   */
  constructor(code: ErrorCode, message: string, line: number | null = null) {
    super(code, line === null || namesLine(message, line) ? message : `${message} (line ${line})`);
    this.name = "ValidationError";
    this.line = line;
  }
}

function namesLine(message: string, line: number): boolean {
  return new RegExp(`\\bline ${line}\\b`).test(message);
}
