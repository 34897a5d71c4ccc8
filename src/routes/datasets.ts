/**
 * The organization's datasets, read live from storage (so a two-step delivery shows at once):
 * `GET /datasets/`, `GET|DELETE /datasets/{id}/`, `GET /datasets/{id}/file/`.
 */
import type { AppCtx, AppRoutes } from "./deps.ts";
import { json } from "../http/context.ts";
import { ApiError } from "../http/errors.ts";
import { parseExperimentId } from "../http/experiment_id.ts";
import type { ObjectInfo } from "../storage/object_store.ts";
import { Buffer } from "node:buffer";
import { datasetKey, orgPrefix } from "../storage/object_store.ts";
import type { UrlSigner } from "../crypto/url_signer.ts";
import { parseDatasetKey } from "../deliveries.ts";
import type { ControlPlane } from "../db/control_plane.ts";

export function notFound(experimentId: string): ApiError {
  return new ApiError(
    "not_found",
    `No dataset for experiment_id ${experimentId} is in storage: check that the upload (or the PUT to the upload URL) finished with 200/201`,
  );
}

export function tooLarge(experimentId: string, size: number, limit: number): ApiError {
  return new ApiError(
    "dataset_too_large",
    `The dataset of ${experimentId} is ${(size / 1048576).toFixed(1)} MB, above the ${
      (limit / 1048576).toFixed(0)
    } MB limit: shrink the dataset, drop unneeded columns, or split it over several experiment_ids. It will be deleted automatically.`,
  );
}

export async function describe(
  db: ControlPlane,
  orgId: string,
  experimentId: string,
  info: ObjectInfo,
  limit: number,
) {
  return {
    experiment_id: experimentId,
    size_bytes: info.size,
    size_mb: info.size / 1048576,
    updated_at: info.lastModified.toISOString(),
    etag: info.etag,
    analysis_status: info.size > limit
      ? "too_large"
      : await db.analyses.status(orgId, experimentId, info.etag),
  };
}

/** The stored dataset of the path's experiment: 404 when none, 400 when over the limit. */
export async function requireDataset(
  ctx: AppCtx,
  orgId: string,
  options: { allowTooLarge?: boolean } = {},
): Promise<{ experimentId: string; key: string; info: ObjectInfo }> {
  const experimentId = parseExperimentId(ctx.params.experiment_id);
  ctx.logFields.experiment_id = experimentId;
  const key = datasetKey(orgId, experimentId);
  const info = await ctx.deps.store.head(key);
  if (!info) throw notFound(experimentId);
  if (!options.allowTooLarge && info.size > ctx.deps.config.maxUploadBytes) {
    throw tooLarge(experimentId, info.size, ctx.deps.config.maxUploadBytes);
  }
  return { experimentId, key, info };
}

/**
 * List cursors are the store's own (a key on disk, an S3 continuation token), sealed with the
 * service's HMAC and bound to the organization: a cursor the service did not issue to this
 * organization is refused with 400 before storage sees it (S3 would answer an invalid token
 * with an error that looks like an outage). `scope` keeps the cursors of different lists apart
 * (`LIST` for this one; the history's are its own).
 */
export function sealCursor(
  signer: UrlSigner,
  orgId: string,
  cursor: string,
  scope = "LIST",
): string {
  const signature = new URLSearchParams(signer.sign(scope, `${orgId}\n${cursor}`, 0))
    .get("signature");
  return `${Buffer.from(cursor).toString("base64url")}.${signature}`;
}

export function openCursor(
  signer: UrlSigner,
  orgId: string,
  sealed: string,
  scope = "LIST",
): string {
  const m = /^([A-Za-z0-9_-]{1,2048})\.([A-Za-z0-9_-]{43})$/.exec(sealed);
  if (m) {
    const cursor = Buffer.from(m[1], "base64url").toString();
    const params = new URLSearchParams({ expires: "0", signature: m[2] });
    // The signature matched when the only complaint is the (deliberately past) expiry.
    if (signer.verify(scope, `${orgId}\n${cursor}`, params).result === "expired") return cursor;
  }
  throw new ApiError(
    "invalid_json",
    "cursor is not valid: pass the next_cursor of the previous page unchanged",
  );
}

/** The `limit` of a paged list: 1 to 1000, 1000 when absent (400 `invalid_json` otherwise). */
export function pageLimit(url: URL): number {
  const limitText = url.searchParams.get("limit");
  const limit = limitText === null ? 1000 : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
    throw new ApiError("invalid_json", "limit must be a whole number from 1 to 1000");
  }
  return limit;
}

async function list(ctx: AppCtx): Promise<Response> {
  const principal = await ctx.auth();
  const limit = pageLimit(ctx.url);
  const signer = ctx.deps.signer;
  const given = ctx.url.searchParams.get("cursor") || null;
  const cursor = given === null ? null : openCursor(signer, principal.orgId, given);
  const page = await ctx.deps.store.list(orgPrefix(principal.orgId), { limit, cursor });
  const datasets = [];
  for (const info of page.objects) {
    const parsed = parseDatasetKey(info.key);
    if (!parsed || parsed.orgId !== principal.orgId) continue;
    datasets.push(
      await describe(
        ctx.deps.db,
        principal.orgId,
        parsed.experimentId,
        info,
        ctx.deps.config.maxUploadBytes,
      ),
    );
  }
  return json(ctx, {
    datasets,
    next_cursor: page.nextCursor === null
      ? null
      : sealCursor(signer, principal.orgId, page.nextCursor),
  });
}

async function show(ctx: AppCtx): Promise<Response> {
  const principal = await ctx.auth();
  const { experimentId, key, info } = await requireDataset(ctx, principal.orgId);
  return json(ctx, {
    ...await describe(
      ctx.deps.db,
      principal.orgId,
      experimentId,
      info,
      ctx.deps.config.maxUploadBytes,
    ),
    key,
  });
}

async function download(ctx: AppCtx): Promise<Response> {
  const principal = await ctx.auth();
  const experimentId = parseExperimentId(ctx.params.experiment_id);
  const object = await ctx.deps.store.get(datasetKey(principal.orgId, experimentId));
  if (!object) throw notFound(experimentId);
  // A HEAD sends no body: release the opened file (or storage connection) at once instead of
  // leaving it open until garbage collection.
  if (ctx.req.method === "HEAD") await object.body.cancel().catch(() => {});
  return new Response(ctx.req.method === "HEAD" ? null : object.body, {
    headers: {
      "content-type": "text/csv; charset=utf-8",
      "content-length": String(object.info.size),
      "content-disposition": `attachment; filename="${experimentId}.csv"`,
      etag: `"${object.info.etag}"`,
      "x-request-id": ctx.requestId,
    },
  });
}

async function remove(ctx: AppCtx): Promise<Response> {
  const principal = await ctx.auth();
  const { experimentId, key } = await requireDataset(ctx, principal.orgId, { allowTooLarge: true });
  // The analysis and the history first: when the database cannot be written, nothing is deleted
  // (503, retry); when storage then fails, the file stays and the timer analyses it again.
  await ctx.deps.db.analyses.delete(principal.orgId, experimentId);
  await ctx.deps.db.history.delete(principal.orgId, experimentId);
  await ctx.deps.db.deliverySummaries.delete(principal.orgId, experimentId);
  await ctx.deps.store.delete(key);
  return json(ctx, { deleted: true, experiment_id: experimentId });
}

export const datasetRoutes: AppRoutes = [
  ["GET", "/api/v1/datasets/", list],
  ["GET", "/api/v1/datasets/:experiment_id/", show],
  ["DELETE", "/api/v1/datasets/:experiment_id/", remove],
  ["GET", "/api/v1/datasets/:experiment_id/file/", download],
];
