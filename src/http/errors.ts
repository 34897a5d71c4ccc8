/**
 * The error-code table: every error code (`src/errors.ts`) has its HTTP status here, and only
 * here. `ApiError` is the HTTP layer's own `ServiceError`, which may carry response headers; the
 * error boundary in `app.ts` answers every `ServiceError` as JSON (`errorHeaders` adds what its
 * code implies) and everything else as a generic 500.
 */
import { type ErrorCode, ServiceError } from "../errors.ts";
import { jsonResponse } from "./json.ts";

export type { ErrorCode };

export const ERROR_STATUS: Readonly<Record<ErrorCode, number>> = {
  unauthorized: 401,
  org_deactivated: 403,
  insufficient_scope: 403,
  invalid_experiment_id: 400,
  invalid_json: 400,
  invalid_settings: 400,
  invalid_key_request: 400,
  last_admin_key: 409,
  invalid_webhook_url: 400,
  multipart_not_supported: 400,
  archive_detected: 400,
  binary_content: 400,
  invalid_utf8: 400,
  invalid_csv: 400,
  missing_columns: 400,
  no_metric_column: 400,
  invalid_date: 400,
  no_data_rows: 400,
  dataset_too_large: 400,
  payload_too_large: 413,
  body_timeout: 408,
  request_aborted: 400,
  url_expired: 403,
  invalid_signature: 403,
  not_found: 404,
  method_not_allowed: 405,
  rate_limited: 429,
  too_many_uploads: 429,
  quota_exceeded: 403,
  storage_error: 500,
  internal_error: 500,
  service_unavailable: 503,
};

/** An error of the HTTP layer that carries headers of its answer besides its code. */
export class ApiError extends ServiceError {
  readonly status: number;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message: string, headers: Record<string, string> = {}) {
    super(code, message);
    this.name = "ApiError";
    this.status = ERROR_STATUS[code];
    this.headers = headers;
  }
}

/**
 * Codes answered before the whole request body was read: the connection is closed after the
 * answer, since the rest of the body may still come.
 */
const CLOSING_CODES: ReadonlySet<ErrorCode> = new Set([
  "payload_too_large",
  "body_timeout",
  "too_many_uploads",
  "quota_exceeded",
]);

/** The headers `error`'s answer carries: its own, `Retry-After`, `Connection: close`. */
export function errorHeaders(error: ServiceError): Record<string, string> {
  const headers: Record<string, string> = error instanceof ApiError ? { ...error.headers } : {};
  if (error.retryAfterSeconds !== undefined) {
    headers["retry-after"] ??= String(error.retryAfterSeconds);
  }
  if (CLOSING_CODES.has(error.code)) headers.connection ??= "close";
  return headers;
}

/** Builds the JSON error response `{"error": {"code", "message", "request_id"}}`. */
export function errorResponse(
  code: ErrorCode,
  message: string,
  requestId: string,
  headers: Record<string, string> = {},
): Response {
  const body = JSON.stringify({ error: { code, message, request_id: requestId } });
  return jsonResponse(body, ERROR_STATUS[code], requestId, headers);
}
