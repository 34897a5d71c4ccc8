/**
 * `POST /api/v1/datasets/initiate/` (docs/api.md): a time-limited URL for one `PUT` of the dataset
 * straight to storage. Optional `size_bytes` binds the URL to that exact length.
 */
import type { AppCtx, AppRoutes } from "./deps.ts";
import { json } from "../http/context.ts";
import { ApiError, megabytes } from "../http/errors.ts";
import { parseExperimentId } from "../http/experiment_id.ts";
import { datasetKey } from "../storage/object_store.ts";

const MAX_JSON_BYTES = 16 * 1024;

/** Reads a small JSON object body (400 `invalid_json` otherwise). */
export async function readJsonObject(req: Request): Promise<Record<string, unknown>> {
  const length = req.headers.get("content-length");
  const declared = Number(length ?? 0);
  if (declared > MAX_JSON_BYTES) {
    req.body?.cancel().catch(() => {});
    throw new ApiError("invalid_json", `The JSON body is larger than ${MAX_JSON_BYTES} bytes`);
  }
  let text: string;
  try {
    if (length !== null) {
      // A declared small body: read it as text (invalid UTF-8 cannot form a valid request).
      text = await req.text();
      return parseJsonObject(text);
    }
    const bytes = new Uint8Array(await req.arrayBuffer());
    if (bytes.length > MAX_JSON_BYTES) {
      throw new ApiError("invalid_json", `The JSON body is larger than ${MAX_JSON_BYTES} bytes`);
    }
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (error) {
    if (error instanceof ApiError) throw error;
    throw new ApiError("invalid_json", "The request body is not valid UTF-8 JSON");
  }
  return parseJsonObject(text);
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

async function initiate(ctx: AppCtx): Promise<Response> {
  const { config, store } = ctx.deps;
  const principal = await ctx.auth();
  const body = await readJsonObject(ctx.req);
  const experimentId = parseExperimentId(body.experiment_id);
  ctx.logFields.experiment_id = experimentId;
  let sizeBytes: number | undefined;
  if (body.size_bytes !== undefined && body.size_bytes !== null) {
    if (
      typeof body.size_bytes !== "number" || !Number.isSafeInteger(body.size_bytes) ||
      body.size_bytes < 0
    ) {
      throw new ApiError("invalid_json", "size_bytes must be a whole number of bytes");
    }
    if (body.size_bytes > config.maxUploadBytes) {
      throw new ApiError(
        "payload_too_large",
        `size_bytes ${body.size_bytes} is above the limit of ${config.maxUploadBytes} bytes (${
          megabytes(config.maxUploadBytes)
        } MB): shrink the dataset, drop unneeded columns, or split it over several experiment_ids`,
      );
    }
    sizeBytes = body.size_bytes;
  }
  const key = datasetKey(principal.orgId, experimentId);
  const uploadUrl = await store.presignPut(key, {
    expiresInSeconds: config.presignTtlSeconds,
    contentLength: sizeBytes,
  });
  // The timer heads this key while the grant is open (written within 50 ms, not awaited).
  ctx.deps.grants?.record(
    key,
    principal.orgId,
    experimentId,
    Date.now() + config.presignTtlSeconds * 1000,
  );
  return json(ctx, {
    upload_url: uploadUrl,
    bucket: store.bucket,
    key,
    experiment_id: experimentId,
    expires_in: config.presignTtlSeconds,
    method: "PUT",
    headers: { "Content-Type": "text/csv" },
  });
}

export const initiateRoutes: AppRoutes = [
  ["POST", "/api/v1/datasets/initiate/", initiate],
];
