/**
 * The error-code table: every error the service answers with has a stable code, an HTTP status
 * and a human message. One error type carries its response; the error boundary in `app.ts` turns
 * it into JSON and turns everything else into a generic 500.
 */
import { jsonResponse } from "./json.ts";

export const ERROR_STATUS = {
  unauthorized: 401,
  org_deactivated: 403,
  invalid_experiment_id: 400,
  invalid_json: 400,
  invalid_settings: 400,
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
  storage_error: 500,
  internal_error: 500,
  service_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** An error that carries its HTTP answer: a stable code, its status and a human sentence. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.headers = headers;
  }
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

/**
 * `bytes` in MB (1,048,576 bytes, as `size_mb`) for an error message: `decimals` places from 1 MB
 * on, two significant digits below it (a limit lowered to 100,000 bytes reads 0.095 MB, not 0).
 */
export function megabytes(bytes: number, decimals = 0): string {
  const mb = bytes / 1048576;
  return mb >= 1 || mb === 0 ? mb.toFixed(decimals) : String(Number(mb.toPrecision(2)));
}
