/**
 * Webhook endpoints of the caller's organization (admin scope; docs/api.md, "Webhooks"): create
 * (the signing secret shown once), list, show, update, delete, rotate the secret (the previous
 * one signs for 24 hours more), send a test, list the deliveries, retry one. Another
 * organization's ids answer 404. Every change is an audit event.
 *
 * @module
 */
import { type AppCtx, type AppRoutes, route } from "./deps.ts";
import { json } from "../http/context.ts";
import { ApiError } from "../http/errors.ts";
import { readJson } from "./json_body.ts";
import { openCursor, pageLimit, sealCursor } from "./datasets.ts";
import type { EndpointChange, WebhookDelivery, WebhookEndpoint } from "../db/control_plane.ts";
import { checkWebhookUrl, resolveAllowed } from "../webhooks/targets.ts";
import { parseEventList } from "../webhooks/events.ts";
import { newSecret } from "../webhooks/signature.ts";
import type { WebhookAuditAction } from "../webhooks/audit_hook.ts";

/** How long the previous secret keeps signing after a rotation. */
export const ROTATION_OVERLAP_SECONDS = 24 * 3600;
/** The longest description, in characters. */
const MAX_DESCRIPTION = 500;
const CURSOR_SCOPE = "WEBHOOK-DELIVERIES";

/** The endpoint as the API shows it (never a secret). */
function endpointJson(e: WebhookEndpoint) {
  return {
    webhook_id: e.webhook_id,
    url: e.url,
    description: e.description,
    events: e.events,
    enabled: e.enabled,
    disabled_reason: e.disabled_reason,
    consecutive_failures: e.consecutive_failures,
    created_at: e.created_at,
    updated_at: e.updated_at,
    previous_secret_until: e.previous_secret_until,
  };
}

function deliveryJson(d: WebhookDelivery) {
  return {
    delivery_id: d.delivery_id,
    event_id: d.event_id,
    type: d.type,
    state: d.state,
    attempts: d.attempts,
    last_status: d.last_status,
    last_error: d.last_error,
    next_attempt_at: d.next_attempt_at,
    created_at: d.created_at,
    finished_at: d.finished_at,
  };
}

function notFound(what: string): ApiError {
  return new ApiError("not_found", `No ${what} of this organization has that id`);
}

function refuseFields(body: Record<string, unknown>, allowed: readonly string[]): void {
  const unknown = Object.keys(body).filter((k) => !allowed.includes(k));
  if (unknown.length > 0) {
    throw new ApiError(
      "invalid_json",
      `Unknown field ${JSON.stringify(unknown[0])}: expected ${allowed.join(", ")}`,
    );
  }
}

function description(value: unknown): string {
  if (typeof value !== "string" || value.length > MAX_DESCRIPTION) {
    throw new ApiError(
      "invalid_json",
      `Invalid "description": give text of at most ${MAX_DESCRIPTION} characters`,
    );
  }
  return value;
}

/** A URL an endpoint may have: its shape, and its host's addresses as they resolve now. */
async function allowedUrl(ctx: AppCtx, value: unknown): Promise<string> {
  const url = checkWebhookUrl(value);
  await resolveAllowed(url, { allowPrivate: ctx.deps.config.webhookAllowPrivate });
  return url.href;
}

async function audit(
  ctx: AppCtx,
  action: WebhookAuditAction,
  details: Record<string, unknown>,
): Promise<void> {
  const principal = await ctx.auth();
  await ctx.deps.webhookAudit.record({
    orgId: principal.orgId,
    keyId: principal.keyId,
    action,
    details,
  }).catch((error) => ctx.deps.log.warn("audit event not recorded", { error: String(error) }));
}

async function owned(ctx: AppCtx): Promise<WebhookEndpoint> {
  const { orgId } = await ctx.auth();
  const endpoint = await ctx.deps.db.webhooks.get(orgId, ctx.params.webhook_id);
  if (!endpoint) throw notFound("webhook");
  ctx.logFields.webhook_id = endpoint.webhook_id;
  return endpoint;
}

async function create(ctx: AppCtx): Promise<Response> {
  const { orgId } = await ctx.auth();
  const body = await readJson(ctx);
  refuseFields(body, ["url", "events", "description"]);
  const events = parseEventList(body.events);
  const text = body.description === undefined ? "" : description(body.description);
  const url = await allowedUrl(ctx, body.url);
  const secret = newSecret();
  const endpoint = await ctx.deps.db.webhooks.create(orgId, {
    url,
    events,
    description: text,
    secret,
  });
  ctx.logFields.webhook_id = endpoint.webhook_id;
  await audit(ctx, "webhook.created", { webhook_id: endpoint.webhook_id, url, events });
  return json(ctx, { ...endpointJson(endpoint), secret }, 201);
}

async function list(ctx: AppCtx): Promise<Response> {
  const { orgId } = await ctx.auth();
  return json(ctx, { webhooks: (await ctx.deps.db.webhooks.list(orgId)).map(endpointJson) });
}

async function update(ctx: AppCtx): Promise<Response> {
  const before = await owned(ctx);
  const body = await readJson(ctx);
  refuseFields(body, ["url", "events", "enabled", "description"]);
  const change: EndpointChange = {};
  if (body.events !== undefined) change.events = parseEventList(body.events);
  if (body.description !== undefined) change.description = description(body.description);
  if (body.enabled !== undefined) {
    if (typeof body.enabled !== "boolean") {
      throw new ApiError("invalid_json", 'Invalid "enabled": give true or false');
    }
    change.enabled = body.enabled;
    const { keyId } = await ctx.auth();
    change.reason = `Disabled by key ${keyId}`;
  }
  if (body.url !== undefined) change.url = await allowedUrl(ctx, body.url);
  const { orgId } = await ctx.auth();
  const after = await ctx.deps.db.webhooks.update(orgId, before.webhook_id, change);
  if (!after) throw notFound("webhook");
  const { reason: _, enabled, ...fields } = change;
  if (Object.keys(fields).length > 0) {
    await audit(ctx, "webhook.updated", {
      webhook_id: before.webhook_id,
      changed: Object.keys(fields),
      ...(fields.url ? { url: fields.url } : {}),
      ...(fields.events ? { events: fields.events } : {}),
    });
  }
  if (enabled !== undefined && enabled !== before.enabled) {
    await audit(ctx, enabled ? "webhook.enabled" : "webhook.disabled", {
      webhook_id: before.webhook_id,
      ...(enabled ? {} : { reason: after.disabled_reason }),
    });
  }
  return json(ctx, endpointJson(after));
}

async function remove(ctx: AppCtx): Promise<Response> {
  const endpoint = await owned(ctx);
  const { orgId } = await ctx.auth();
  if (!(await ctx.deps.db.webhooks.delete(orgId, endpoint.webhook_id))) {
    throw notFound("webhook");
  }
  await audit(ctx, "webhook.deleted", { webhook_id: endpoint.webhook_id, url: endpoint.url });
  return new Response(null, { status: 204, headers: { "x-request-id": ctx.requestId } });
}

async function rotate(ctx: AppCtx): Promise<Response> {
  const endpoint = await owned(ctx);
  const { orgId } = await ctx.auth();
  const secret = newSecret();
  const after = await ctx.deps.db.webhooks.rotateSecret(
    orgId,
    endpoint.webhook_id,
    secret,
    ROTATION_OVERLAP_SECONDS,
  );
  if (!after) throw notFound("webhook");
  await audit(ctx, "webhook.secret_rotated", {
    webhook_id: endpoint.webhook_id,
    previous_secret_until: after.previous_secret_until,
  });
  return json(ctx, {
    webhook_id: after.webhook_id,
    secret,
    previous_secret_until: after.previous_secret_until,
  });
}

async function test(ctx: AppCtx): Promise<Response> {
  const endpoint = await owned(ctx);
  const { orgId } = await ctx.auth();
  const delivery = await ctx.deps.db.webhooks.sendTest(orgId, endpoint.webhook_id);
  if (!delivery) throw notFound("webhook");
  await audit(ctx, "webhook.test_sent", {
    webhook_id: endpoint.webhook_id,
    delivery_id: delivery.delivery_id,
  });
  return json(ctx, deliveryJson(delivery), 202);
}

async function deliveries(ctx: AppCtx): Promise<Response> {
  const endpoint = await owned(ctx);
  const { orgId } = await ctx.auth();
  const limit = Math.min(pageLimit(ctx.url), 100);
  const given = ctx.url.searchParams.get("cursor") || null;
  let after: { created_at: string; id: string } | null = null;
  if (given !== null) {
    const m = /^([^\n]+)\n([^\n]+)\n([^\n]+)$/.exec(
      openCursor(ctx.deps.signer, orgId, given, CURSOR_SCOPE),
    );
    if (!m || m[1] !== endpoint.webhook_id) {
      throw new ApiError(
        "invalid_json",
        "cursor is not valid: pass the next_cursor of the previous page unchanged",
      );
    }
    after = { created_at: m[2], id: m[3] };
  }
  const rows = await ctx.deps.db.webhooks.deliveries(orgId, endpoint.webhook_id, {
    limit: limit + 1,
    after,
  });
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  const next = rows.length > limit && last
    ? sealCursor(
      ctx.deps.signer,
      orgId,
      `${endpoint.webhook_id}\n${last.created_at}\n${last.delivery_id}`,
      CURSOR_SCOPE,
    )
    : null;
  return json(ctx, { deliveries: page.map(deliveryJson), next_cursor: next });
}

async function retry(ctx: AppCtx): Promise<Response> {
  const endpoint = await owned(ctx);
  const { orgId } = await ctx.auth();
  const delivery = await ctx.deps.db.webhooks.retry(
    orgId,
    endpoint.webhook_id,
    ctx.params.delivery_id,
  );
  if (!delivery) throw notFound("delivery");
  await audit(ctx, "webhook.delivery_retried", {
    webhook_id: endpoint.webhook_id,
    delivery_id: delivery.delivery_id,
  });
  return json(ctx, deliveryJson(delivery), 202);
}

const ADMIN = ["admin"] as const;
const ONE = "/api/v1/webhooks/:webhook_id/";

export const webhookRoutes: AppRoutes = [
  route("POST", "/api/v1/webhooks/", ADMIN, create),
  route("GET", "/api/v1/webhooks/", ADMIN, list),
  route("GET", ONE, ADMIN, async (ctx) => json(ctx, endpointJson(await owned(ctx)))),
  route("PATCH", ONE, ADMIN, update),
  route("DELETE", ONE, ADMIN, remove),
  route("POST", `${ONE}rotate-secret/`, ADMIN, rotate),
  route("POST", `${ONE}test/`, ADMIN, test),
  route("GET", `${ONE}deliveries/`, ADMIN, deliveries),
  route("POST", `${ONE}deliveries/:delivery_id/retry/`, ADMIN, retry),
];
