/**
 * The control plane's two failures that callers tell apart: one that passes with time or an
 * operator's fix (answered 503 with `Retry-After`; background writers skip and retry later), and
 * a database that cannot be used at all (start-up stops with its one line).
 */

/** A failure that passes with time or an operator's fix; answered 503 with `Retry-After`. */
export class DatabaseUnavailable extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "DatabaseUnavailable";
  }
}

/**
 * The database cannot be used at all (unreachable at start-up, a wrong password, no such
 * database, missing permissions): start-up stops with this one line, which never holds a
 * password.
 */
export class DatabaseOpenError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "DatabaseOpenError";
  }
}

/** Current time as an ISO-8601 string, the format every timestamp column uses. */
export function nowIso(): string {
  return new Date().toISOString();
}
