/**
 * The HTTP application: routes, authentication, the one error boundary, request ids and the
 * per-request log line. `createApp(deps)` answers a plain `(Request) => Promise<Response>`.
 */
import type { Config } from "./config.ts";
import type { Database } from "./db/database.ts";
import { isDatabaseUnavailable } from "./db/database.ts";
import type { LastUsedRecorder } from "./db/api_keys.ts";
import type { ObjectStore } from "./storage/object_store.ts";
import { StorageError } from "./storage/object_store.ts";
import type { DeliveryHub } from "./deliveries.ts";
import type { Metrics } from "./metrics.ts";
import type { Params } from "./http/router.ts";
import { Router } from "./http/router.ts";
import { ApiError, errorResponse } from "./http/errors.ts";
import { jsonResponse } from "./http/json.ts";
import type { Principal } from "./http/auth.ts";
import { authenticate } from "./http/auth.ts";
import type { RateLimiter } from "./http/rate_limiter.ts";
import type { UploadSlots } from "./ingest/upload_slots.ts";
import { healthRoutes } from "./routes/health.ts";

export interface AppDeps {
  config: Readonly<Config>;
  db: Database;
  store: ObjectStore;
  metrics: Metrics;
  recorder: LastUsedRecorder;
  deliveries: DeliveryHub;
  rateLimiter?: RateLimiter;
  /** Caps the upload bodies streaming at once; absent: no cap. */
  uploadSlots?: UploadSlots;
  /** Extra services later features hang here (analysis, signer…). */
  services: Record<string, unknown>;
  /** Where request log lines go; default console.log. */
  log?: (line: string) => void;
}

export interface Ctx {
  req: Request;
  url: URL;
  params: Params;
  requestId: string;
  deps: AppDeps;
  /** Extra fields for the request's log line (org id, bytes in…). */
  logFields: Record<string, unknown>;
  /** Authenticates the request (401/403/429 otherwise) and answers the caller. */
  auth(): Principal;
}

export type Handler = (ctx: Ctx) => Response | Promise<Response>;
export type RouteTable = [method: string, pattern: string, handler: Handler][];

/** JSON response with the request id header. */
export function json(
  ctx: Ctx,
  body: unknown,
  status = 200,
  headers: Record<string, string> = {},
): Response {
  return jsonResponse(JSON.stringify(body), status, ctx.requestId, headers);
}

export type AppHandler = (req: Request, info?: Deno.ServeHandlerInfo) => Promise<Response>;

export function createApp(deps: AppDeps, routeTables: RouteTable[]): AppHandler {
  const router = new Router<{ pattern: string; handler: Handler }>();
  for (const table of [healthRoutes, ...routeTables]) {
    for (const [method, pattern, handler] of table) {
      router.add(method, pattern, { pattern, handler });
    }
  }
  const log = deps.log ?? ((line: string) => console.log(line));

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
      route = match.handler.pattern;
      const ctx: Ctx = {
        req,
        url,
        params: match.params,
        requestId,
        deps,
        logFields,
        auth() {
          const principal = authenticate(deps.db, req.headers.get("authorization"), deps.recorder);
          logFields.org_id = principal.orgId;
          deps.rateLimiter?.check(principal.keyId);
          return principal;
        },
      };
      response = await match.handler.handler(ctx);
      if (!response.headers.has("x-request-id")) {
        response = withHeader(response, "x-request-id", requestId);
      }
    } catch (error) {
      response = toErrorResponse(error, requestId, log);
      logFields.error_code = (error instanceof ApiError) ? error.code : "internal_error";
    }
    const seconds = (performance.now() - started) / 1000;
    deps.metrics.requests.inc({
      route,
      method: metricMethod(req.method),
      status: String(response.status),
    });
    deps.metrics.requestSeconds.observe(seconds, { route });
    log(JSON.stringify({
      level: "info",
      time: isoNow(),
      request_id: requestId,
      method: req.method,
      path: url.pathname,
      status: response.status,
      bytes_out: Number(response.headers.get("content-length") ?? 0) || undefined,
      duration_ms: Math.round(seconds * 1000 * 10) / 10,
      ...logFields,
    }));
    return response;
  };
}

/** The last ISO timestamp made: requests within one millisecond share it. */
let isoMs = NaN;
let isoText = "";

function isoNow(): string {
  const ms = Date.now();
  if (ms !== isoMs) {
    isoText = new Date(ms).toISOString();
    isoMs = ms;
  }
  return isoText;
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
export function toErrorResponse(
  error: unknown,
  requestId: string,
  log: (line: string) => void = console.log,
): Response {
  if (error instanceof ApiError) {
    return errorResponse(error.code, error.message, requestId, error.headers);
  }
  if (error instanceof StorageError) {
    log(JSON.stringify({
      level: "error",
      request_id: requestId,
      msg: error.message,
      cause: String(error.cause ?? ""),
    }));
    return errorResponse(
      "storage_error",
      "Storage failed; nothing was changed. Retry after a few seconds.",
      requestId,
    );
  }
  if (isDatabaseUnavailable(error)) {
    log(JSON.stringify({
      level: "error",
      request_id: requestId,
      msg: "database unavailable",
      error: (error as Error).message,
    }));
    return errorResponse(
      "service_unavailable",
      "The database is busy or cannot be written right now; nothing was changed. Retry after a few seconds.",
      requestId,
      { "retry-after": "5" },
    );
  }
  log(JSON.stringify({
    level: "error",
    request_id: requestId,
    msg: "unexpected error",
    error: error instanceof Error
      ? `${error.name}: ${error.message}\n${error.stack}`
      : String(error),
  }));
  return errorResponse(
    "internal_error",
    "Internal error; retry after a few seconds. Quote the request id when reporting it.",
    requestId,
  );
}
