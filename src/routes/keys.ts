import type { AppRoutes } from "./deps.ts";
import { json } from "../http/context.ts";
import { listKeys } from "../db/api_keys.ts";
import { getOrg } from "../db/orgs.ts";

/** `GET /api/v1/keys/`: the caller's organization and the status of its keys (no secrets). */
export const keyRoutes: AppRoutes = [
  ["GET", "/api/v1/keys/", (ctx) => {
    const principal = ctx.auth();
    const org = getOrg(ctx.deps.db, principal.orgId);
    return json(ctx, {
      organization: org &&
        { org_id: org.id, name: org.name, active: org.active, created_at: org.created_at },
      current_key_id: principal.keyId,
      keys: listKeys(ctx.deps.db, principal.orgId).map((k) => ({
        key_id: k.key_id,
        prefix: k.prefix,
        created_at: k.created_at,
        last_used_at: k.last_used_at,
        revoked_at: k.revoked_at,
        status: k.active ? "active" : "revoked",
      })),
    });
  }],
];
