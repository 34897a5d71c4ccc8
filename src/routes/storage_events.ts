/**
 * `POST /api/v1/storage-events/`: S3/MinIO bucket notifications (`Records[].s3.object.key`) that
 * trigger the post-delivery hook at once instead of at the next scan. Enabled by
 * `ABN_STORAGE_EVENTS_TOKEN`; the token comes as `Authorization: Bearer <token>` only (a query
 * string lands in proxy logs), compared without revealing its length.
 */
import { sameSecret } from "../crypto/same_secret.ts";
import { type AppCtx, type AppRoutes, route } from "./deps.ts";
import { json } from "../http/context.ts";
import { ApiError } from "../http/errors.ts";
import { parseDatasetKey } from "../storage/object_store.ts";
import { readJson } from "./json_body.ts";
import { nowIso } from "../db/control_plane.ts";

async function storageEvents(ctx: AppCtx): Promise<Response> {
  const expected = ctx.deps.config.storageEventsToken;
  if (!expected) {
    throw new ApiError("not_found", "Storage events are not enabled (ABN_STORAGE_EVENTS_TOKEN)");
  }
  if (ctx.url.searchParams.has("token")) {
    ctx.req.body?.cancel().catch(() => {});
    throw new ApiError(
      "unauthorized",
      "The storage events token is not accepted in the query string: send it as Authorization: Bearer <token>",
    );
  }
  const header = ctx.req.headers.get("authorization") ?? "";
  const given = header.startsWith("Bearer ") ? header.slice(7) : null;
  if (given === null || !sameSecret(given, expected)) {
    ctx.req.body?.cancel().catch(() => {});
    throw new ApiError(
      "unauthorized",
      "Invalid storage events token: send it as Authorization: Bearer <token>",
    );
  }
  const body = await readJson(ctx);
  const records = Array.isArray(body.Records) ? body.Records : [];
  let accepted = 0;
  for (const record of records) {
    const rawKey = record?.s3?.object?.key;
    if (typeof rawKey !== "string") continue;
    let key: string;
    try {
      key = decodeURIComponent(rawKey.replace(/\+/g, " "));
    } catch {
      continue;
    }
    const target = parseDatasetKey(key);
    if (!target) continue;
    const observedAt = nowIso();
    const info = await ctx.deps.store.head(key);
    if (!info) continue;
    // Recorded even over the limit (the clean-up deletes it from the catalog's list).
    await ctx.deps.deliveries.notice(info, observedAt, "event");
    if (info.size <= ctx.deps.config.maxUploadBytes) accepted++;
  }
  return json(ctx, { accepted });
}

export const storageEventRoutes: AppRoutes = [
  route("POST", "/api/v1/storage-events/", "public", storageEvents),
];
