/**
 * `GET /api/v1/openapi.json`: the OpenAPI 3.1 document of every route (`src/openapi/`), without
 * authentication. Its bytes are computed once per configuration (they depend on the route table,
 * which is code, and on the upload limit) and answered with an ETag and `Cache-Control: public`,
 * so clients and proxies may keep it and revalidate (304).
 *
 * @module
 */
import type { Config } from "../config.ts";
import { buildDocument, OPERATIONS } from "../openapi/mod.ts";
import type { AppCtx, AppRoutes } from "./deps.ts";
import { route } from "./deps.ts";

interface Served {
  body: Uint8Array<ArrayBuffer>;
  etag: string;
}

const CACHE_CONTROL = "public, max-age=300";

async function serialize(document: unknown): Promise<Served> {
  const body = new TextEncoder().encode(JSON.stringify(document));
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", body));
  const hex = Array.from(digest.subarray(0, 16), (b) => b.toString(16).padStart(2, "0")).join("");
  return { body, etag: `"${hex}"` };
}

function matches(header: string | null, etag: string): boolean {
  if (header === null) return false;
  return header.split(",").some((tag) => {
    const t = tag.trim();
    return t === "*" || t === etag || t === `W/${etag}`;
  });
}

/**
 * The route of the document of `tables` (a function: the table that lists this route is the one
 * it describes).
 */
export function openapiRoutes(tables: () => readonly AppRoutes[]): AppRoutes {
  const served = new WeakMap<Readonly<Config>, Promise<Served>>();
  const documentOf = (config: Readonly<Config>): Promise<Served> => {
    let found = served.get(config);
    if (!found) {
      const document = buildDocument(tables().flat(), OPERATIONS, {
        maxUploadBytes: config.maxUploadBytes,
      });
      found = serialize(document);
      served.set(config, found);
    }
    return found;
  };
  const handler = async (ctx: AppCtx): Promise<Response> => {
    const { body, etag } = await documentOf(ctx.deps.config);
    const headers = new Headers({
      "cache-control": CACHE_CONTROL,
      etag,
      "x-request-id": ctx.requestId,
    });
    if (matches(ctx.req.headers.get("if-none-match"), etag)) {
      return new Response(null, { status: 304, headers });
    }
    headers.set("content-type", "application/json; charset=utf-8");
    headers.set("content-length", String(body.byteLength));
    return new Response(ctx.req.method === "HEAD" ? null : body, { headers });
  };
  return [route("GET", "/api/v1/openapi.json", "public", handler)];
}
