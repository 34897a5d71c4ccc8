/**
 * What the upload client makes of a server's answer: the service's JSON error
 * `{"error": {"code", "message", "request_id"}}`, an S3 XML error, or plain text.
 */
import type { HttpAnswer } from "./_send_file.ts";

/** A refused or failed upload; `status`, `code` and the message come from the server. */
export class UploadFailed extends Error {
  readonly status?: number;
  readonly code?: string;
  readonly requestId?: string;

  constructor(
    message: string,
    details: { status?: number; code?: string; requestId?: string } = {},
  ) {
    super(message);
    this.name = "UploadFailed";
    this.status = details.status;
    this.code = details.code;
    this.requestId = details.requestId;
  }
}

interface ErrorDetails {
  code?: string;
  message: string;
  requestId?: string;
}

/** Reads the service's JSON error or an S3 XML error; falls back to the start of the text. */
export function errorDetails(answer: HttpAnswer): ErrorDetails {
  try {
    const error = JSON.parse(answer.text)?.error;
    if (error && typeof error.message === "string") {
      return {
        code: typeof error.code === "string" ? error.code : undefined,
        message: error.message,
        requestId: typeof error.request_id === "string" ? error.request_id : undefined,
      };
    }
  } catch { /* not JSON */ }
  const tag = (name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(answer.text)?.[1];
  if (tag("Code")) {
    return { code: tag("Code"), message: tag("Message") ?? "", requestId: tag("RequestId") };
  }
  const text = answer.text.trim().slice(0, 200);
  return {
    message: text || `HTTP ${answer.status}`,
    requestId: answer.headers.get("x-request-id") ?? undefined,
  };
}

/** The error for a final answer: `upload refused: HTTP 400 invalid_csv: … (request id …)`. */
export function failure(answer: HttpAnswer, what: string): UploadFailed {
  const { code, message, requestId } = errorDetails(answer);
  const id = requestId ?? answer.headers.get("x-request-id") ?? undefined;
  const verb = answer.status >= 500 ? "failed" : "refused";
  return new UploadFailed(
    `${what} ${verb}: HTTP ${answer.status}${code ? ` ${code}` : ""}: ${message}${
      id ? ` (request id ${id})` : ""
    }`,
    { status: answer.status, code, requestId: id },
  );
}

export function describe(answer: HttpAnswer): string {
  const { code, message } = errorDetails(answer);
  return `HTTP ${answer.status}${code ? ` ${code}` : ""}: ${message}`;
}
