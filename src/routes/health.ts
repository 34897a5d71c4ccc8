import type { AppRoutes } from "./deps.ts";
import { json } from "../http/context.ts";
import { databaseReachable } from "../db/database.ts";
import { ApiError } from "../http/errors.ts";

export const healthRoutes: AppRoutes = [
  ["GET", "/healthz", (ctx) => {
    if (!databaseReachable(ctx.deps.db)) {
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
