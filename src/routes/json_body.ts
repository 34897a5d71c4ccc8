/**
 * The one reader of JSON request bodies (initiate, settings, storage events, and every later JSON
 * route): the body is read through `limitSource`, so it is refused at the first byte past 16 KiB
 * (413 `payload_too_large`, chunked or not, and at once when a larger `Content-Length` is
 * declared) and must arrive whole within the upload's idle timeout (408 `body_timeout`). Nothing
 * buffers a body before it was counted.
 *
 * @module
 */
import { ApiError } from "../http/errors.ts";
import { limitSource } from "../upload/limits.ts";
import type { AppCtx } from "./deps.ts";

/** The largest JSON body accepted, in bytes. */
export const MAX_JSON_BYTES = 16 * 1024;

/** Options of `readJsonObject`. */
export interface JsonBodyOptions {
  /** The whole body must arrive within this long, and never pause longer (408). */
  timeoutMs: number;
  /** Largest body accepted; default `MAX_JSON_BYTES`. */
  maxBytes?: number;
}

function tooLarge(maxBytes: number): ApiError {
  return new ApiError("payload_too_large", `The JSON body is larger than ${maxBytes} bytes`);
}

/** Reads a small JSON object body: 400 `invalid_json` when it is not one, 413 and 408 as above. */
export async function readJsonObject(
  req: Request,
  options: JsonBodyOptions,
): Promise<Record<string, unknown>> {
  const maxBytes = options.maxBytes ?? MAX_JSON_BYTES;
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > maxBytes) {
    req.body?.cancel().catch(() => {});
    throw tooLarge(maxBytes);
  }
  let bytes = new Uint8Array(0);
  if (req.body !== null) {
    const source = limitSource(req.body, {
      maxBytes,
      idleTimeoutMs: options.timeoutMs,
      deadlineMs: options.timeoutMs,
      tooLarge: () => tooLarge(maxBytes),
    });
    // Read into one buffer: the declared length and a byte more (to see the end), else the limit
    // and a byte more (the limit refuses the body before it is full).
    const size = Number(declared ?? maxBytes);
    const buffer = new Uint8Array((Number.isSafeInteger(size) && size >= 0 ? size : maxBytes) + 1);
    let length = 0;
    for (let done = false; !done && length < buffer.length;) {
      const read = await source.read(buffer.subarray(length));
      length += read.bytes.length;
      done = read.done;
    }
    if (length === buffer.length) { // longer than declared
      await source.cancel();
      throw tooLarge(maxBytes);
    }
    bytes = buffer.subarray(0, length);
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new ApiError("invalid_json", "The request body is not valid UTF-8 JSON");
  }
  return parseJsonObject(text);
}

/** The request's JSON object body, under the service's body timeout (see `readJsonObject`). */
export function readJson(ctx: AppCtx): Promise<Record<string, unknown>> {
  return readJsonObject(ctx.req, { timeoutMs: ctx.deps.config.bodyIdleTimeoutSeconds * 1000 });
}

function parseJsonObject(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ApiError(
      "invalid_json",
      'The request body is not valid JSON: send {"experiment_id": "…"} with Content-Type: application/json',
    );
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ApiError("invalid_json", "The request body must be a JSON object");
  }
  return value as Record<string, unknown>;
}
