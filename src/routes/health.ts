import { type AppRoutes, route } from "./deps.ts";
import { json } from "../http/context.ts";
import { ApiError } from "../http/errors.ts";

export const healthRoutes: AppRoutes = [
  route("GET", "/healthz", "public", async (ctx) => {
    if (!(await ctx.deps.db.reachable())) {
      throw new ApiError("service_unavailable", "The database is not reachable");
    }
    return json(ctx, { status: "ok" });
  }),
  route("GET", "/metrics", "public", async (ctx) => {
    await ctx.deps.metrics.collect();
    return new Response(ctx.deps.metrics.render(), {
      headers: {
        "content-type": "text/plain; version=0.0.4; charset=utf-8",
        "x-request-id": ctx.requestId,
      },
    });
  }),
];
