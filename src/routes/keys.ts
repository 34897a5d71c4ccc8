import { type AppRoutes, route } from "./deps.ts";
import { json } from "../http/context.ts";

/** `GET /api/v1/keys/`: the caller's organization and the status of its keys (no secrets). */
export const keyRoutes: AppRoutes = [
  route("GET", "/api/v1/keys/", ["read", "admin"], async (ctx) => {
    const principal = await ctx.auth();
    const org = await ctx.deps.db.orgs.get(principal.orgId);
    return json(ctx, {
      organization: org &&
        { org_id: org.id, name: org.name, active: org.active, created_at: org.created_at },
      current_key_id: principal.keyId,
      keys: (await ctx.deps.db.keys.list(principal.orgId)).map((k) => ({
        key_id: k.key_id,
        prefix: k.prefix,
        created_at: k.created_at,
        last_used_at: k.last_used_at,
        revoked_at: k.revoked_at,
        status: k.active ? "active" : "revoked",
      })),
    });
  }),
];
