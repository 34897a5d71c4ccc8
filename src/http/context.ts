/**
 * What a route handler sees: the request, its parsed URL and path parameters, the request id, the
 * application's dependencies (typed by the application, `D`), fields for the request's log line,
 * `closeConnection()` and `auth()`. Handlers answer with `json(ctx, body)` or a `Response` of
 * their own; they never import the application module.
 */
import type { Params } from "./router.ts";
import type { Principal } from "./auth.ts";
import { jsonResponse } from "./json.ts";

export interface Ctx<D> {
  req: Request;
  url: URL;
  params: Params;
  requestId: string;
  deps: D;
  /** Extra fields for the request's log line (org id, bytes in…): recorded, never read back. */
  logFields: Record<string, unknown>;
  /** Asks the client to close the connection after the answer (`Connection: close`). */
  closeConnection(): void;
  /** Authenticates the request (401/403/429 otherwise) and answers the caller. */
  auth(): Promise<Principal>;
}

export type Handler<D> = (ctx: Ctx<D>) => Response | Promise<Response>;

/** What a key may do (docs/api.md, "Scopes"); no scope implies another. */
export type Scope = "upload" | "read" | "write" | "admin";
export const SCOPES: readonly Scope[] = ["upload", "read", "write", "admin"];

/**
 * Who may call a route: anyone (`public`: health, metrics, the UI's files, and the routes that
 * carry their own proof, an upload URL's signature or the storage events' token), or a key
 * holding any one of the listed scopes. The application authenticates before the handler runs.
 */
export type Access = "public" | readonly Scope[];

/** One route: the single place its method, path and access are stated. */
export interface Route<D> {
  method: string;
  path: string;
  access: Access;
  handler: Handler<D>;
}
export type RouteTable<D> = Route<D>[];
export type AppHandler = (req: Request, info?: Deno.ServeHandlerInfo) => Promise<Response>;

/** A JSON response with the request id header. */
export function json<D>(
  ctx: Ctx<D>,
  body: unknown,
  status = 200,
  headers: Record<string, string> = {},
): Response {
  return jsonResponse(JSON.stringify(body), status, ctx.requestId, headers);
}
