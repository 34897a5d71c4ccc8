import type { ErrorCode } from "../http/errors.ts";
import { ApiError } from "../http/errors.ts";

/** A dataset that failed a check: the code names the check, `line` the first offending line. */
export class ValidationError extends ApiError {
  readonly line: number | null;

  constructor(code: ErrorCode, message: string, line: number | null = null) {
    super(code, line === null ? message : `${message} (line ${line})`);
    this.name = "ValidationError";
    this.line = line;
  }
}
