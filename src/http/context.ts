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
export type RouteTable<D> = [method: string, pattern: string, handler: Handler<D>][];
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
