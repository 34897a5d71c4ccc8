/**
 * The web UI: `GET /` answers the page, `GET /ui/{file}` its assets (plain JavaScript modules,
 * CSS, an icon), all read from `src/ui/` beside this folder, so `deno compile --include src/ui`
 * embeds them and no asset comes from anywhere else, bar `event_types.json`, which the service
 * writes from its own list of webhook event names so the UI keeps no copy. Every answer carries a
 * strict Content-Security-Policy (same origin only), an ETag, and `Cache-Control: no-cache` so
 * browsers revalidate (a 304 when nothing changed) and a new release is picked up at once.
 */
import { type AppCtx, type AppRoutes, route } from "./deps.ts";
import { ApiError } from "../http/errors.ts";
import { EVENT_TYPES } from "../webhooks/events.ts";

const CONTENT_TYPES: Record<string, string> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  svg: "image/svg+xml",
  json: "application/json; charset=utf-8",
};

/** Asset names are flat: lower-case words, one extension of the table above. */
const ASSET_NAME = /^[a-z0-9_]+\.(html|js|css|svg|json)$/;

export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

interface Asset {
  body: Uint8Array<ArrayBuffer>;
  etag: string;
  type: string;
}

const assets = new Map<string, Promise<Asset | null>>();

/** Assets the service writes from its own definitions instead of reading them from `src/ui/`. */
const WRITTEN_ASSETS: Record<string, () => string> = {
  "event_types.json": () => JSON.stringify(EVENT_TYPES),
};

async function readAsset(name: string): Promise<Asset | null> {
  let body: Uint8Array<ArrayBuffer>;
  try {
    body = Object.hasOwn(WRITTEN_ASSETS, name)
      ? new TextEncoder().encode(WRITTEN_ASSETS[name]())
      : await Deno.readFile(new URL(`../ui/${name}`, import.meta.url));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", body));
  const hex = Array.from(digest.subarray(0, 16), (b) => b.toString(16).padStart(2, "0")).join("");
  return { body, etag: `"${hex}"`, type: CONTENT_TYPES[name.slice(name.lastIndexOf(".") + 1)] };
}

/** The asset, read once per process (the files cannot change inside a compiled binary). */
function asset(name: string): Promise<Asset | null> {
  let found = assets.get(name);
  if (!found) {
    found = readAsset(name);
    assets.set(name, found);
    // Only files that exist stay cached: invented names must not grow the map.
    found.then((a) => a === null && assets.delete(name), () => assets.delete(name));
  }
  return found;
}

function etagMatches(header: string | null, etag: string): boolean {
  if (header === null) return false;
  return header.split(",").some((tag) => {
    const t = tag.trim();
    return t === "*" || t === etag || t === `W/${etag}`;
  });
}

async function serve(ctx: AppCtx, name: string): Promise<Response> {
  const found = ASSET_NAME.test(name) ? await asset(name) : null;
  if (!found) throw new ApiError("not_found", `Not found: ${ctx.url.pathname}`);
  const headers = new Headers({
    "content-type": found.type,
    "cache-control": "no-cache",
    etag: found.etag,
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "x-request-id": ctx.requestId,
  });
  if (etagMatches(ctx.req.headers.get("if-none-match"), found.etag)) {
    return new Response(null, { status: 304, headers });
  }
  headers.set("content-length", String(found.body.byteLength));
  return new Response(ctx.req.method === "HEAD" ? null : found.body, { headers });
}

export const uiRoutes: AppRoutes = [
  route("GET", "/", "public", (ctx) => serve(ctx, "index.html")),
  route("GET", "/ui/:file", "public", (ctx) => serve(ctx, ctx.params.file)),
];
