/**
 * `POST /api/v1/datasets/initiate/` (docs/api.md): a time-limited URL for one `PUT` of the dataset
 * straight to storage. Optional `size_bytes` binds the URL to that exact length. Refused while the
 * organization is at its storage quota, or when `size_bytes` would take it over.
 */
import { type AppCtx, type AppRoutes, route } from "./deps.ts";
import { json } from "../http/context.ts";
import { ApiError } from "../http/errors.ts";
import { megabytes } from "../errors.ts";
import { parseExperimentId } from "../http/experiment_id.ts";
import { datasetKey } from "../storage/object_store.ts";
import { readJson } from "./json_body.ts";

async function initiate(ctx: AppCtx): Promise<Response> {
  const { config, store } = ctx.deps;
  const principal = await ctx.auth();
  const body = await readJson(ctx);
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
  await ctx.deps.quotas.refuseGrant({ orgId: principal.orgId, experimentId }, sizeBytes);
  const key = datasetKey(principal.orgId, experimentId);
  const uploadUrl = await store.presignPut(key, {
    expiresInSeconds: config.presignTtlSeconds,
    contentLength: sizeBytes,
    keyId: principal.keyId,
  });
  // The timer heads this key while the grant is open (written within 50 ms, not awaited).
  ctx.deps.grants?.record(
    key,
    principal.orgId,
    experimentId,
    Date.now() + config.presignTtlSeconds * 1000,
    principal.keyId,
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
  route("POST", "/api/v1/datasets/initiate/", ["upload"], initiate),
];
