import type { AppRoutes } from "./deps.ts";
import { json } from "../http/context.ts";
import { ApiError } from "../http/errors.ts";

export const healthRoutes: AppRoutes = [
  ["GET", "/healthz", async (ctx) => {
    if (!(await ctx.deps.db.reachable())) {
      throw new ApiError("service_unavailable", "The database is not reachable");
    }
    return json(ctx, { status: "ok" });
  }],
  ["GET", "/metrics", (ctx) =>
    new Response(ctx.deps.metrics.render(), {
      headers: {
        "content-type": "text/plain; version=0.0.4; charset=utf-8",
        "x-request-id": ctx.requestId,
      },
    })],
];
