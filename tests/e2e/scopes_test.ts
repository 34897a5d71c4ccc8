/**
 * The scope matrix, on both storage drivers: every route of the application called with a key
 * of each single scope answers either its normal answer or 403 `insufficient_scope` naming the
 * scope it needs. Who may call what is written here as a literal table from DESIGN's "Keys,
 * scopes and tenants" (not read from the route table), so a route given the wrong access fails.
 */
import { assert, assertApiError, assertEquals } from "../_assert.ts";
import { type DriverServer, driverTest, startDriverServer } from "../_drivers.ts";
import { postgresTest, withDatabase } from "../_postgres.ts";
import { apiRoutes } from "../../src/routes/mod.ts";
import type { Scope } from "../../src/scopes.ts";
import { newSecret } from "../../src/webhooks/signature.ts";

const VALID = await Deno.readFile(new URL("../testdata/small.csv", import.meta.url));
const ALL: readonly Scope[] = ["upload", "read", "write", "admin"];

/**
 * DESIGN: `upload`: initiate and direct upload; `read`: every GET under /api/v1 but /audit/ (and
 * /webhooks/); `write`: PUT settings, DELETE a dataset; `admin`: key management (GET /keys/ too),
 * GET /audit/. Routes with a proof of their own (an upload URL's signature, the storage events'
 * token) and those without organization data are public: a key changes nothing there.
 */
const EXPECTED: Readonly<Record<string, readonly Scope[] | "public">> = {
  "POST /api/v1/datasets/upload/": ["upload"],
  "POST /api/v1/datasets/initiate/": ["upload"],
  "GET /api/v1/datasets/": ["read"],
  "GET /api/v1/datasets/:experiment_id/": ["read"],
  "DELETE /api/v1/datasets/:experiment_id/": ["write"],
  "GET /api/v1/datasets/:experiment_id/file/": ["read"],
  "GET /api/v1/datasets/:experiment_id/analysis/": ["read"],
  "GET /api/v1/datasets/:experiment_id/history/": ["read"],
  "GET /api/v1/datasets/:experiment_id/settings/": ["read"],
  "PUT /api/v1/datasets/:experiment_id/settings/": ["write"],
  "GET /api/v1/keys/": ["read", "admin"],
  "POST /api/v1/keys/": ["admin"],
  "DELETE /api/v1/keys/:key_id/": ["admin"],
  "POST /api/v1/keys/:key_id/rotate/": ["admin"],
  "GET /api/v1/audit/": ["admin"],
  "POST /api/v1/webhooks/": ["admin"],
  "GET /api/v1/webhooks/": ["admin"],
  "GET /api/v1/webhooks/:webhook_id/": ["admin"],
  "PATCH /api/v1/webhooks/:webhook_id/": ["admin"],
  "DELETE /api/v1/webhooks/:webhook_id/": ["admin"],
  "POST /api/v1/webhooks/:webhook_id/rotate-secret/": ["admin"],
  "POST /api/v1/webhooks/:webhook_id/test/": ["admin"],
  "GET /api/v1/webhooks/:webhook_id/deliveries/": ["admin"],
  "POST /api/v1/webhooks/:webhook_id/deliveries/:delivery_id/retry/": ["admin"],
  "PUT /storage/*key": "public",
  "POST /api/v1/storage-events/": "public",
  "GET /healthz": "public",
  "GET /metrics": "public",
  "GET /api/v1/openapi.json": "public",
  "GET /": "public",
  "GET /ui/:file": "public",
};

interface Call {
  path: string;
  init?: RequestInit;
  /** The answer when the scope allows the call. */
  status: number;
}

/**
 * A fresh call of each route for `scope` (resources it changes are made for it beforehand).
 * `admin` stands for a full key of the organization, for the set-up.
 */
type CallMaker = (server: DriverServer, scope: Scope) => Promise<Call>;

const json = (method: string, body: unknown): RequestInit => ({
  method,
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});

async function uploadAs(server: DriverServer, id: string): Promise<void> {
  const res = await fetch(`${server.api}/datasets/upload/?experiment_id=${id}`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.apiKey}` },
    body: VALID,
  });
  assertEquals(res.status, 201, await res.text());
}

/** A webhook endpoint of the organization (192.0.2.10: a documentation address, never reached). */
async function endpoint(server: DriverServer): Promise<string> {
  return (await server.service.db.webhooks.create(server.orgId, {
    url: "https://192.0.2.10/hook",
    events: ["webhook.test"],
    description: "",
    secret: newSecret(),
  })).webhook_id;
}

/** `path` below a fresh endpoint's, and the normal answer. */
function onEndpoint(path: string, status: number, init?: RequestInit): CallMaker {
  return async (server) => ({
    path: `/api/v1/webhooks/${await endpoint(server)}/${path}`,
    init,
    status,
  });
}

async function victimKey(server: DriverServer): Promise<string> {
  return (await server.service.db.keys.create(server.orgId, { scopes: ["read"] })).info.key_id;
}

const CALLS: Readonly<Record<string, CallMaker>> = {
  "POST /api/v1/datasets/upload/": () =>
    Promise.resolve({
      path: "/api/v1/datasets/upload/?experiment_id=scoped",
      init: { method: "POST", body: VALID },
      status: 201,
    }),
  "POST /api/v1/datasets/initiate/": () =>
    Promise.resolve({
      path: "/api/v1/datasets/initiate/",
      init: json("POST", { experiment_id: "scoped" }),
      status: 200,
    }),
  "GET /api/v1/datasets/": () => Promise.resolve({ path: "/api/v1/datasets/", status: 200 }),
  "GET /api/v1/datasets/:experiment_id/": () =>
    Promise.resolve({ path: "/api/v1/datasets/base/", status: 200 }),
  "DELETE /api/v1/datasets/:experiment_id/": async (server, scope) => {
    await uploadAs(server, `gone-${scope}`);
    return { path: `/api/v1/datasets/gone-${scope}/`, init: { method: "DELETE" }, status: 200 };
  },
  "GET /api/v1/datasets/:experiment_id/file/": () =>
    Promise.resolve({ path: "/api/v1/datasets/base/file/", status: 200 }),
  "GET /api/v1/datasets/:experiment_id/analysis/": () =>
    Promise.resolve({ path: "/api/v1/datasets/base/analysis/", status: 200 }),
  "GET /api/v1/datasets/:experiment_id/history/": () =>
    Promise.resolve({ path: "/api/v1/datasets/base/history/", status: 200 }),
  "GET /api/v1/datasets/:experiment_id/settings/": () =>
    Promise.resolve({ path: "/api/v1/datasets/base/settings/", status: 200 }),
  "PUT /api/v1/datasets/:experiment_id/settings/": () =>
    Promise.resolve({
      path: "/api/v1/datasets/base/settings/",
      init: json("PUT", { mde: 0.1 }),
      status: 200,
    }),
  "GET /api/v1/keys/": () => Promise.resolve({ path: "/api/v1/keys/", status: 200 }),
  "POST /api/v1/keys/": () =>
    Promise.resolve({
      path: "/api/v1/keys/",
      init: json("POST", { scopes: ["read"] }),
      status: 201,
    }),
  "DELETE /api/v1/keys/:key_id/": async (server) => ({
    path: `/api/v1/keys/${await victimKey(server)}/`,
    init: { method: "DELETE" },
    status: 204,
  }),
  "POST /api/v1/keys/:key_id/rotate/": async (server) => ({
    path: `/api/v1/keys/${await victimKey(server)}/rotate/`,
    init: json("POST", { overlap_hours: 1 }),
    status: 201,
  }),
  "GET /api/v1/audit/": () => Promise.resolve({ path: "/api/v1/audit/", status: 200 }),
  "POST /api/v1/webhooks/": () =>
    Promise.resolve({
      path: "/api/v1/webhooks/",
      init: json("POST", { url: "https://192.0.2.10/new", events: ["*"] }),
      status: 201,
    }),
  "GET /api/v1/webhooks/": () => Promise.resolve({ path: "/api/v1/webhooks/", status: 200 }),
  "GET /api/v1/webhooks/:webhook_id/": onEndpoint("", 200),
  "PATCH /api/v1/webhooks/:webhook_id/": onEndpoint("", 200, json("PATCH", { enabled: false })),
  "DELETE /api/v1/webhooks/:webhook_id/": onEndpoint("", 204, { method: "DELETE" }),
  "POST /api/v1/webhooks/:webhook_id/rotate-secret/": onEndpoint("rotate-secret/", 200, {
    method: "POST",
  }),
  "POST /api/v1/webhooks/:webhook_id/test/": onEndpoint("test/", 202, { method: "POST" }),
  "GET /api/v1/webhooks/:webhook_id/deliveries/": onEndpoint("deliveries/", 200),
  "POST /api/v1/webhooks/:webhook_id/deliveries/:delivery_id/retry/": async (server) => {
    const id = await endpoint(server);
    const test = await server.service.db.webhooks.sendTest(server.orgId, id);
    return {
      path: `/api/v1/webhooks/${id}/deliveries/${test!.delivery_id}/retry/`,
      init: { method: "POST" },
      status: 202,
    };
  },
  // Public: the answer without a key is the normal one (`status` is unused).
  "PUT /storage/*key": (server) =>
    Promise.resolve({
      path: `/storage/org/${server.orgId}/experiments/base/latest.csv?expires=1&signature=x`,
      init: { method: "PUT", body: VALID },
      status: 0,
    }),
  "POST /api/v1/storage-events/": () =>
    Promise.resolve({ path: "/api/v1/storage-events/", init: json("POST", {}), status: 0 }),
  "GET /healthz": () => Promise.resolve({ path: "/healthz", status: 0 }),
  "GET /metrics": () => Promise.resolve({ path: "/metrics", status: 0 }),
  "GET /api/v1/openapi.json": () => Promise.resolve({ path: "/api/v1/openapi.json", status: 0 }),
  "GET /": () => Promise.resolve({ path: "/", status: 0 }),
  "GET /ui/:file": () => Promise.resolve({ path: "/ui/main.js", status: 0 }),
};

function routeNames(): string[] {
  return apiRoutes.flat().map((r) => `${r.method} ${r.path}`);
}

Deno.test("the scope matrix states every route, and only those", () => {
  assertEquals(routeNames().filter((r) => !(r in EXPECTED)), [], "add these routes to EXPECTED");
  assertEquals(Object.keys(EXPECTED).filter((r) => !routeNames().includes(r)), []);
  assertEquals(Object.keys(CALLS).sort(), Object.keys(EXPECTED).sort());
});

async function send(server: DriverServer, call: Call, apiKey: string | null): Promise<Response> {
  const headers = new Headers(call.init?.headers);
  if (apiKey !== null) headers.set("authorization", `Bearer ${apiKey}`);
  return await fetch(`${server.url}${call.path}`, { ...call.init, headers });
}

const MATRIX =
  "every route answers a key of each single scope normally or 403 insufficient_scope naming what it needs";

/** Every route with a key of each single scope (see `EXPECTED`), on `server`. */
async function scopeMatrix(server: DriverServer): Promise<void> {
  await uploadAs(server, "base");
  const keys = new Map<Scope, string>();
  for (const scope of ALL) {
    keys.set(
      scope,
      (await server.service.db.keys.create(server.orgId, { scopes: [scope] })).api_key,
    );
  }
  const seen: string[] = [];
  for (const name of routeNames()) {
    const expected = EXPECTED[name];
    for (const scope of ALL) {
      const call = await CALLS[name](server, scope);
      const res = await send(server, call, keys.get(scope)!);
      const where = `${name} with a '${scope}' key`;
      if (expected === "public") {
        const text = await res.text();
        const without = await send(server, await CALLS[name](server, scope), null);
        await without.body?.cancel();
        assertEquals(res.status, without.status, `${where}: ${text}`);
        // (The OpenAPI document names the code in its descriptions: no error answer does.)
        assert(!/"code":\s*"insufficient_scope"/.test(text), `${where}: ${text.slice(0, 300)}`);
      } else if (expected.includes(scope)) {
        const text = await res.text();
        assertEquals(res.status, call.status, `${where}: ${text}`);
        seen.push(`${name} ${scope}`);
      } else {
        const error = await assertApiError(res, 403, "insufficient_scope");
        for (const needed of expected) {
          assert(error.message.includes(`'${needed}'`), `${where}: ${error.message}`);
        }
      }
    }
  }
  // Each scope was allowed somewhere, and refused the rest: the matrix ran, not just its shape.
  assertEquals(
    ALL.map((scope) => seen.filter((s) => s.endsWith(` ${scope}`)).length),
    [2, 7, 2, 14],
  );
  // What the denied calls would have changed is unchanged: the datasets of the other scopes.
  for (const scope of ["upload", "read", "admin"]) {
    assert(await server.stored(server.orgId, `gone-${scope}`), `gone-${scope} was deleted`);
  }
  assertEquals(await server.stored(server.orgId, "gone-write"), null);
}

driverTest(MATRIX, scopeMatrix);

// The same on the PostgreSQL control plane (keys, scopes and expiry read from there).
postgresTest(`${MATRIX} (local, PostgreSQL)`, () =>
  withDatabase(async (database) => {
    const server = await startDriverServer("local", { ABN_DATABASE_URL: database.url });
    try {
      await scopeMatrix(server);
    } finally {
      await server.close();
    }
  }));
