/**
 * The organization's API keys (docs/api.md, "Keys"): `GET /api/v1/keys/` (the organization and
 * its keys, never a secret), and for an admin key `POST /api/v1/keys/` (a new key, shown once),
 * `DELETE /api/v1/keys/{key_id}/` (revoke; never the last active admin key) and
 * `POST /api/v1/keys/{key_id}/rotate/` (a new key; the old one works for the overlap). Each
 * change is an audit event, written before the answer.
 */
import { type AppCtx, type AppRoutes, route } from "./deps.ts";
import { json } from "../http/context.ts";
import { ApiError } from "../http/errors.ts";
import { forgetKey } from "../http/auth.ts";
import type { ApiKeyInfo } from "../db/control_plane.ts";
import { readJson } from "./json_body.ts";
import { parseKeyRequest, parseRotateRequest } from "./key_requests.ts";

/** What a key looks like to the API: never its secret or hash. */
function describeKey(k: ApiKeyInfo) {
  return {
    key_id: k.key_id,
    name: k.name,
    prefix: k.prefix,
    scopes: k.scopes,
    status: k.status,
    created_at: k.created_at,
    expires_at: k.expires_at,
    last_used_at: k.last_used_at,
    revoked_at: k.revoked_at,
  };
}

const KEY_ID = /^key_[0-9A-Za-z]{16}$/;

/** The path's key id: 404 when it is not one (as for another organization's key). */
function pathKeyId(ctx: AppCtx): string {
  const keyId = ctx.params.key_id;
  if (!KEY_ID.test(keyId)) throw noSuchKey(keyId);
  return keyId;
}

function noSuchKey(keyId: string): ApiError {
  return new ApiError("not_found", `No API key ${keyId} in this organization`);
}

/** A request body that may be left out (no body, or an empty one): `{}` then. */
function readOptionalJson(ctx: AppCtx): Promise<Record<string, unknown>> {
  const length = ctx.req.headers.get("content-length");
  if (ctx.req.body === null || length === "0") return Promise.resolve({});
  return readJson(ctx);
}

async function list(ctx: AppCtx): Promise<Response> {
  const principal = await ctx.auth();
  const org = await ctx.deps.db.orgs.get(principal.orgId);
  return json(ctx, {
    organization: org &&
      { org_id: org.id, name: org.name, active: org.active, created_at: org.created_at },
    current_key_id: principal.keyId,
    keys: (await ctx.deps.db.keys.list(principal.orgId)).map(describeKey),
  });
}

async function create(ctx: AppCtx): Promise<Response> {
  const principal = await ctx.auth();
  const request = parseKeyRequest(await readJson(ctx));
  const { api_key, info } = await ctx.deps.db.keys.create(principal.orgId, request);
  await ctx.deps.audit.write({
    orgId: principal.orgId,
    action: "key.created",
    keyId: principal.keyId,
    details: {
      target_key_id: info.key_id,
      name: info.name,
      prefix: info.prefix,
      scopes: info.scopes,
      expires_at: info.expires_at,
    },
  });
  return json(ctx, {
    api_key,
    key_id: info.key_id,
    name: info.name,
    scopes: info.scopes,
    expires_at: info.expires_at,
  }, 201);
}

async function revoke(ctx: AppCtx): Promise<Response> {
  const principal = await ctx.auth();
  const keyId = pathKeyId(ctx);
  const { db, audit } = ctx.deps;
  const result = await db.keys.revoke(keyId, { orgId: principal.orgId, keepLastAdmin: true });
  if (result.outcome === "not_found") throw noSuchKey(keyId);
  if (result.outcome === "last_admin_key") {
    throw new ApiError(
      "last_admin_key",
      `${keyId} is the organization's last active key with the 'admin' scope: create another admin key first, or rotate this one`,
    );
  }
  forgetKey(db, keyId);
  if (result.outcome === "revoked") {
    await audit.write({
      orgId: principal.orgId,
      action: "key.revoked",
      keyId: principal.keyId,
      details: { target_key_id: keyId, name: result.key.name, prefix: result.key.prefix },
    });
  }
  return new Response(null, { status: 204, headers: { "x-request-id": ctx.requestId } });
}

async function rotate(ctx: AppCtx): Promise<Response> {
  const principal = await ctx.auth();
  const keyId = pathKeyId(ctx);
  const { overlapHours } = parseRotateRequest(await readOptionalJson(ctx));
  const { db, audit } = ctx.deps;
  const result = await db.keys.rotate(keyId, {
    orgId: principal.orgId,
    overlapSeconds: overlapHours * 3600,
  });
  if (result.outcome === "not_found") throw noSuchKey(keyId);
  if (result.outcome === "not_active") {
    throw new ApiError(
      "invalid_key_request",
      `${keyId} is ${result.key.status}: only an active key can be rotated; create a new key instead`,
    );
  }
  forgetKey(db, keyId);
  const { created, old } = result;
  await audit.write({
    orgId: principal.orgId,
    action: "key.rotated",
    keyId: principal.keyId,
    details: {
      target_key_id: keyId,
      new_key_id: created.info.key_id,
      name: old.name,
      scopes: old.scopes,
      overlap_hours: overlapHours,
      old_expires_at: old.expires_at,
      expires_at: created.info.expires_at,
    },
  });
  return json(ctx, {
    api_key: created.api_key,
    key_id: created.info.key_id,
    name: created.info.name,
    scopes: created.info.scopes,
    expires_at: created.info.expires_at,
  }, 201);
}

export const keyRoutes: AppRoutes = [
  route("GET", "/api/v1/keys/", ["read", "admin"], list),
  route("POST", "/api/v1/keys/", ["admin"], create),
  route("DELETE", "/api/v1/keys/:key_id/", ["admin"], revoke),
  route("POST", "/api/v1/keys/:key_id/rotate/", ["admin"], rotate),
];
