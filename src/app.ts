/**
 * The HTTP application: routes, authentication, the one error boundary, request ids and the
 * per-request log line. `createApp(deps)` answers a plain `(Request) => Promise<Response>`.
 */
import { DatabaseUnavailable } from "./db/control_plane.ts";
import { StorageError } from "./storage/object_store.ts";
import { Router } from "./http/router.ts";
import { ApiError, errorHeaders, errorResponse } from "./http/errors.ts";
import { ServiceError } from "./errors.ts";
import type { AppHandler, Ctx, Route } from "./http/context.ts";
import { authenticate, type Principal, requireScope } from "./http/auth.ts";
import type { Logger } from "./log.ts";
import { describeError } from "./log.ts";
import type { AppDeps, AppRoutes } from "./routes/deps.ts";

export function createApp(deps: AppDeps, routeTables: AppRoutes[]): AppHandler {
  const router = new Router<Route<AppDeps>>();
  for (const table of routeTables) {
    for (const entry of table) router.add(entry.method, entry.path, entry);
  }
  const log = deps.log;

  return async function handle(req: Request): Promise<Response> {
    const started = performance.now();
    const requestId = crypto.randomUUID();
    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      return errorResponse("not_found", "Not found", requestId);
    }
    const logFields: Record<string, unknown> = {};
    let closing = false;
    let route = "unmatched";
    let response: Response;
    try {
      const match = router.match(req.method, url.pathname);
      if (match.kind === "not_found") {
        throw new ApiError("not_found", `Not found: ${req.method} ${url.pathname}`);
      }
      if (match.kind === "method_not_allowed") {
        throw new ApiError(
          "method_not_allowed",
          `Method ${req.method} is not allowed here; allowed: ${match.allow.join(", ")}`,
          { allow: match.allow.join(", ") },
        );
      }
      const entry = match.handler;
      route = entry.path;
      let principal: Principal | undefined;
      const ctx: Ctx<AppDeps> = {
        req,
        url,
        params: match.params,
        requestId,
        deps,
        logFields,
        closeConnection() {
          closing = true;
        },
        async auth() {
          if (principal) return principal;
          const caller = await authenticate(
            deps.db,
            req.headers.get("authorization"),
            deps.recorder,
          );
          logFields.org_id = caller.orgId;
          deps.rateLimiter?.check(caller.keyId);
          if (entry.access !== "public") requireScope(caller, entry.access);
          principal = caller;
          return caller;
        },
      };
      // Every route that needs a key is authenticated and its scope checked here, before its
      // handler runs: the route table is the one place that says who may call what.
      if (entry.access !== "public") await ctx.auth();
      response = await entry.handler(ctx);
      if (!response.headers.has("x-request-id")) {
        response = withHeader(response, "x-request-id", requestId);
      }
    } catch (error) {
      response = toErrorResponse(error, requestId, log);
      logFields.error_code = (error instanceof ServiceError) ? error.code : "internal_error";
    }
    if (closing) response = withHeader(response, "connection", "close");
    const seconds = (performance.now() - started) / 1000;
    deps.metrics.requests.inc({
      route,
      method: metricMethod(req.method),
      status: String(response.status),
    });
    deps.metrics.requestSeconds.observe(seconds, { route });
    log.info("request", {
      request_id: requestId,
      method: req.method,
      path: url.pathname,
      status: response.status,
      bytes_out: Number(response.headers.get("content-length") ?? 0) || undefined,
      duration_ms: Math.round(seconds * 1000 * 10) / 10,
      ...logFields,
    });
    return response;
  };
}

const KNOWN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]);

/** The method as a metrics label: any other token is `OTHER`, so clients cannot grow the registry. */
function metricMethod(method: string): string {
  return KNOWN_METHODS.has(method) ? method : "OTHER";
}

function withHeader(response: Response, name: string, value: string): Response {
  try {
    response.headers.set(name, value);
    return response;
  } catch {
    const headers = new Headers(response.headers);
    headers.set(name, value);
    return new Response(response.body, { status: response.status, headers });
  }
}

/** The error boundary: known errors answer their JSON; anything else a logged, generic 500. */
export function toErrorResponse(error: unknown, requestId: string, log: Logger): Response {
  if (error instanceof ServiceError) {
    return errorResponse(error.code, error.message, requestId, errorHeaders(error));
  }
  if (error instanceof StorageError) {
    log.error(error.message, { request_id: requestId, cause: String(error.cause ?? "") });
    return errorResponse(
      "storage_error",
      "Storage failed; nothing was changed. Retry after a few seconds.",
      requestId,
    );
  }
  if (error instanceof DatabaseUnavailable) {
    log.error("database unavailable", {
      request_id: requestId,
      error: error.message,
    });
    return errorResponse(
      "service_unavailable",
      "The database is busy or cannot be written right now; nothing was changed. Retry after a few seconds.",
      requestId,
      { "retry-after": "5" },
    );
  }
  log.error("unexpected error", { request_id: requestId, error: describeError(error) });
  return errorResponse(
    "internal_error",
    "Internal error; retry after a few seconds. Quote the request id when reporting it.",
    requestId,
  );
}
