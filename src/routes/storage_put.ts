/**
 * `PUT {ABN_PUBLIC_URL}/storage/{key}?expires=…&signature=…`: the local driver's upload URL,
 * served by this process. No Authorization header: the HMAC signature is the permission.
 */
import type { Ctx, RouteTable } from "../app.ts";
import { ApiError } from "../http/errors.ts";
import { parseDatasetKey } from "../deliveries.ts";
import { getOrg } from "../db/orgs.ts";
import type { UrlSigner } from "../crypto/url_signer.ts";
import { receiveBody } from "../ingest/receive.ts";
import { checkDeclaredLength, rejectionReason } from "./upload.ts";

async function storagePut(ctx: Ctx): Promise<Response> {
  const { config, store, metrics, deliveries, db } = ctx.deps;
  if (store.driver !== "local") {
    throw new ApiError("not_found", "Uploads go straight to the S3 storage on this service");
  }
  const signer = ctx.deps.services.signer as UrlSigner;
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
    const org = getOrg(db, target.orgId);
    if (!org) throw new ApiError("invalid_signature", "The upload URL is not valid");
    if (!org.active) {
      throw new ApiError("org_deactivated", "The organization of this upload URL is deactivated");
    }
    checkDeclaredLength(ctx.req, config.maxUploadBytes);
    const declared = ctx.req.headers.get("content-length");
    if (check.size !== undefined && declared !== null && Number(declared) !== check.size) {
      throw new ApiError(
        "invalid_signature",
        `This upload URL only accepts a body of ${check.size} bytes; Content-Length is ${declared}`,
      );
    }
    const release = ctx.deps.uploadSlots?.take(ctx.req);
    try {
      const writer = await store.createWriter(key);
      let bytes = 0;
      try {
        bytes = await receiveBody(ctx.req.body, writer, {
          maxBytes: check.size !== undefined
            ? Math.min(check.size, config.maxUploadBytes)
            : config.maxUploadBytes,
          idleTimeoutMs: config.bodyIdleTimeoutSeconds * 1000,
          minBytesPerSecond: config.bodyMinBytesPerSecond,
          onChunk: (chunk) => metrics.bytesReceived.inc({ route: "presigned_put" }, chunk.length),
        });
        if (check.size !== undefined && bytes !== check.size) {
          throw new ApiError(
            "invalid_signature",
            `This upload URL only accepts a body of ${check.size} bytes; received ${bytes}`,
          );
        }
        const info = await writer.commit();
        ctx.logFields.bytes_in = bytes;
        metrics.uploadsStored.inc({ route: "presigned_put" });
        deliveries.publish({
          orgId: target.orgId,
          experimentId: target.experimentId,
          key,
          info,
          validated: false,
          source: "presigned_put",
        });
        return new Response(null, {
          status: 200,
          headers: { etag: `"${info.etag}"`, "x-request-id": ctx.requestId },
        });
      } catch (error) {
        ctx.logFields.bytes_in = bytes;
        await writer.abort();
        throw error;
      }
    } finally {
      release?.();
    }
  } catch (error) {
    ctx.req.body?.cancel().catch(() => {});
    metrics.uploadsRejected.inc({ reason: rejectionReason(error) });
    throw error;
  }
}

export const storagePutRoutes: RouteTable = [
  ["PUT", "/storage/*key", storagePut],
];
