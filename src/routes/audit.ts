/**
 * `GET /api/v1/audit/?limit=&cursor=&action=` (admin; docs/api.md, "Audit trail"): the
 * organization's own events, newest first, `limit` (1 to 200, default 50) a page, optionally of
 * one action. The cursor is the last event's position, sealed for this organization (as the
 * dataset list's): another organization's, or an altered one, is refused with 400.
 */
import { type AppCtx, type AppRoutes, route } from "./deps.ts";
import { json } from "../http/context.ts";
import { ApiError } from "../http/errors.ts";
import { openCursor, sealCursor } from "./datasets.ts";
import type { AuditPosition } from "../db/control_plane.ts";

const CURSOR_SCOPE = "AUDIT";
const ACTION = /^[a-z][a-z_]{0,31}\.[a-z][a-z_]{0,31}$/;

/** `limit`: 1 to 200, default 50 (400 `invalid_json` otherwise). */
function auditLimit(url: URL): number {
  const text = url.searchParams.get("limit");
  const limit = text === null ? 50 : Number(text);
  if (!Number.isInteger(limit) || limit < 1 || limit > 200) {
    throw new ApiError("invalid_json", "limit must be a whole number from 1 to 200");
  }
  return limit;
}

function auditAction(url: URL): string | null {
  const action = url.searchParams.get("action") || null;
  if (action !== null && !ACTION.test(action)) {
    throw new ApiError(
      "invalid_json",
      `action ${
        JSON.stringify(action)
      } is not an audit action, e.g. dataset.delivered or key.revoked`,
    );
  }
  return action;
}

function position(text: string): AuditPosition {
  const [at, id] = text.split("\n");
  return { at, id };
}

async function list(ctx: AppCtx): Promise<Response> {
  const principal = await ctx.auth();
  const limit = auditLimit(ctx.url);
  const action = auditAction(ctx.url);
  const { signer, db, audit } = ctx.deps;
  const given = ctx.url.searchParams.get("cursor") || null;
  const before = given === null
    ? null
    : position(openCursor(signer, principal.orgId, given, CURSOR_SCOPE));
  await audit.flush(); // this instance's events of the last moments too
  const events = await db.audit.page(principal.orgId, { limit: limit + 1, before, action });
  const page = events.slice(0, limit);
  const last = events.length > limit ? page[limit - 1] : null;
  return json(ctx, {
    events: page.map((e) => ({
      id: e.id,
      at: e.at,
      action: e.action,
      key_id: e.key_id,
      experiment_id: e.experiment_id,
      details: e.details,
    })),
    next_cursor: last === null
      ? null
      : sealCursor(signer, principal.orgId, `${last.at}\n${last.id}`, CURSOR_SCOPE),
  });
}

export const auditRoutes: AppRoutes = [
  route("GET", "/api/v1/audit/", ["admin"], list),
];
