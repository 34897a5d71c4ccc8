/**
 * The service's error codes and its one domain error type. Every refusal or failure the service
 * answers with has a stable code; code outside the HTTP layer throws a `ServiceError` (or a
 * subclass: `ValidationError`, `SettingsError`) naming one, and the HTTP layer alone decides
 * what status and headers a code is answered with (`src/http/errors.ts`).
 *
 * @module
 */

/** Every error code the service answers with (docs/api.md, "Errors"). */
export type ErrorCode =
  | "unauthorized"
  | "org_deactivated"
  | "insufficient_scope"
  | "invalid_experiment_id"
  | "invalid_json"
  | "invalid_settings"
  | "invalid_key_request"
  | "last_admin_key"
  | "invalid_webhook_url"
  | "multipart_not_supported"
  | "archive_detected"
  | "binary_content"
  | "invalid_utf8"
  | "invalid_csv"
  | "missing_columns"
  | "no_metric_column"
  | "invalid_date"
  | "no_data_rows"
  | "dataset_too_large"
  | "payload_too_large"
  | "body_timeout"
  | "request_aborted"
  | "url_expired"
  | "invalid_signature"
  | "not_found"
  | "method_not_allowed"
  | "rate_limited"
  | "too_many_uploads"
  | "quota_exceeded"
  | "storage_error"
  | "internal_error"
  | "service_unavailable";

/** Options of `ServiceError`. */
export interface ServiceErrorOptions extends ErrorOptions {
  /** When the caller may try again, in seconds (a busy service, a rate limit). */
  retryAfterSeconds?: number;
}

/** A refusal or failure with a stable code and a human sentence saying what to do next. */
export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly retryAfterSeconds: number | undefined;

  constructor(code: ErrorCode, message: string, options: ServiceErrorOptions = {}) {
    super(message, options);
    this.name = "ServiceError";
    this.code = code;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/**
 * `bytes` in MB (1,048,576 bytes, as `size_mb`) for an error message: `decimals` places from 1 MB
 * on, two significant digits below it (a limit lowered to 100,000 bytes reads 0.095 MB, not 0).
 */
export function megabytes(bytes: number, decimals = 0): string {
  const mb = bytes / 1048576;
  return mb >= 1 || mb === 0 ? mb.toFixed(decimals) : String(Number(mb.toPrecision(2)));
}
