/**
 * `PUT {ABN_PUBLIC_URL}/storage/{key}?expires=…&signature=…`: the local driver's upload URL,
 * served by this process. No Authorization header: the HMAC signature is the permission.
 */
import { type AppCtx, type AppRoutes, route } from "./deps.ts";
import { ApiError } from "../http/errors.ts";
import { parseDatasetKey } from "../storage/object_store.ts";

async function storagePut(ctx: AppCtx): Promise<Response> {
  const { store, db, signer, uploads } = ctx.deps;
  if (store.driver !== "local") {
    throw new ApiError("not_found", "Uploads go straight to the S3 storage on this service");
  }
  const key = ctx.params.key;
  const target = parseDatasetKey(key);
  const check = target
    ? signer.verify("PUT", key, ctx.url.searchParams)
    : { result: "invalid" as const, size: undefined };
  try {
    if (!target || check.result === "invalid") {
      throw new ApiError(
        "invalid_signature",
        "The upload URL is not valid: its signature does not match",
      );
    }
    ctx.logFields.org_id = target.orgId;
    ctx.logFields.experiment_id = target.experimentId;
    if (check.result === "expired") {
      throw new ApiError(
        "url_expired",
        "The upload URL has expired: obtain a new one from POST /api/v1/datasets/initiate/ and repeat the PUT",
      );
    }
    const org = await db.orgs.get(target.orgId);
    if (!org) throw new ApiError("invalid_signature", "The upload URL is not valid");
    if (!org.active) {
      throw new ApiError("org_deactivated", "The organization of this upload URL is deactivated");
    }
  } catch (error) {
    uploads.refuse(ctx, error);
    throw error;
  }
  const info = await uploads.put(ctx, key, target, check.size);
  return new Response(null, {
    status: 200,
    headers: { etag: `"${info.etag}"`, "x-request-id": ctx.requestId },
  });
}

export const storagePutRoutes: AppRoutes = [
  route("PUT", "/storage/*key", "public", storagePut),
];
