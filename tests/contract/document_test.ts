import { assert, assertEquals, assertThrows } from "../_assert.ts";
import { startTestServer } from "../_server.ts";
import { apiRoutes } from "../../src/routes/mod.ts";
import {
  buildDocument,
  openapiPath,
  type OperationDoc,
  OPERATIONS,
  undescribed,
} from "../../src/openapi/mod.ts";

type Json = Record<string, unknown>;
// deno-lint-ignore no-explicit-any
type Loose = any;

const routes = apiRoutes.flat();
const document = buildDocument(routes, OPERATIONS) as Loose;

Deno.test("OPERATIONS describes every route of the route table, and no other", () => {
  assertEquals(undescribed(routes, OPERATIONS), { routes: [], descriptions: [] });
});

const teapot: OperationDoc = {
  operationId: "teapot",
  summary: "A teapot",
  description: "Brews",
  tags: ["Service"],
  responses: { 200: { description: "Tea" } },
  errors: [],
};

Deno.test("buildDocument refuses a route without a description and a description of no route", () => {
  const extraRoute = { method: "GET", path: "/api/v1/teapot/", access: "public" as const };
  const error = assertThrows(() => buildDocument([...routes, extraRoute], OPERATIONS), TypeError);
  assert(error.message.includes("GET /api/v1/teapot/"), error.message);
  const extraDoc = { ...OPERATIONS, "GET /api/v1/kettle/": teapot };
  const other = assertThrows(() => buildDocument(routes, extraDoc), TypeError);
  assert(other.message.includes("descriptions of no route: GET /api/v1/kettle/"), other.message);
  assertEquals(undescribed([extraRoute], {}).routes, ["GET /api/v1/teapot/"]);
});

Deno.test("buildDocument refuses a route whose path parameter is not declared", () => {
  const route = { method: "GET", path: "/api/v1/pots/:pot_id/", access: "public" as const };
  const error = assertThrows(
    () => buildDocument([route], { "GET /api/v1/pots/:pot_id/": teapot }),
    TypeError,
  );
  assert(error.message.includes('"pot_id"'), error.message);
});

Deno.test("openapiPath writes the route table's parameters in OpenAPI's braces", () => {
  assertEquals(
    openapiPath("/api/v1/datasets/:experiment_id/file/"),
    "/api/v1/datasets/{experiment_id}/file/",
  );
  assertEquals(openapiPath("/storage/*key"), "/storage/{key}");
  assertEquals(openapiPath("/"), "/");
});

Deno.test("the document states each route's method, path and scopes as the route table does", () => {
  assertEquals(document.openapi, "3.1.0");
  let operations = 0;
  for (const route of routes) {
    const operation = document.paths[openapiPath(route.path)]?.[route.method.toLowerCase()];
    assert(operation, `${route.method} ${route.path} is missing`);
    operations++;
    if (route.access === "public") {
      assertEquals(operation["x-scopes"], undefined);
      const expected = route.path === "/api/v1/storage-events/" ? [{ storageEventsToken: [] }] : [];
      assertEquals(operation.security, expected, `${route.method} ${route.path}`);
    } else {
      assertEquals(operation["x-scopes"], [...route.access]);
      assertEquals(operation.security, route.access.map((scope) => ({ bearerAuth: [scope] })));
    }
  }
  const documented = Object.values(document.paths as Record<string, Json>)
    .reduce((n, item) => n + Object.keys(item).length, 0);
  assertEquals(documented, operations);
  const ids = routes.map((r) =>
    document.paths[openapiPath(r.path)][r.method.toLowerCase()].operationId
  );
  assertEquals(new Set(ids).size, ids.length, "operationIds are unique");
});

Deno.test("every keyed operation declares 401, 403 and 429 with the codes of authentication", () => {
  for (const route of routes) {
    const responses = document.paths[openapiPath(route.path)][route.method.toLowerCase()].responses;
    const codes = (status: string) =>
      responses[status]?.content["application/json"].schema.allOf[1].properties.error.properties
        .code.enum;
    assert(codes("500").includes("internal_error"), `${route.method} ${route.path}: 500`);
    assert(codes("503").includes("service_unavailable"), `${route.method} ${route.path}: 503`);
    if (route.access === "public") continue;
    assert(codes("401").includes("unauthorized"), `${route.method} ${route.path}: 401`);
    for (const code of ["org_deactivated", "insufficient_scope"]) {
      assert(codes("403").includes(code), `${route.method} ${route.path}: ${code}`);
    }
    assert(codes("429").includes("rate_limited"), `${route.method} ${route.path}: 429`);
    assertEquals(responses["429"].headers["Retry-After"].required, true);
  }
});

Deno.test("each error status of an operation lists only the codes of that status", () => {
  const upload = document.paths["/api/v1/datasets/upload/"].post.responses;
  const codes = (status: string) =>
    upload[status].content["application/json"].schema.allOf[1].properties.error.properties.code
      .enum;
  assert(codes("400").includes("invalid_csv"));
  assert(codes("400").includes("invalid_experiment_id"));
  assertEquals(codes("413"), ["payload_too_large"]);
  assertEquals(codes("408"), ["body_timeout"]);
  assertEquals(upload["201"].content["application/json"].schema, {
    $ref: "#/components/schemas/UploadResult",
  });
  assertEquals(Object.keys(upload["201"].headers), ["X-Request-Id"]);
});

Deno.test("the document takes initiate's size_bytes limit from the configuration", () => {
  const small = buildDocument(routes, OPERATIONS, { maxUploadBytes: 1000 }) as Loose;
  assertEquals(small.components.schemas.InitiateRequest.properties.size_bytes.maximum, 1000);
  assertEquals(
    document.components.schemas.InitiateRequest.properties.size_bytes.maximum,
    209715200,
  );
});

Deno.test("GET /api/v1/openapi.json answers the document without a key, cached and revalidated", async () => {
  const server = await startTestServer({ ABN_MAX_UPLOAD_BYTES: "5000" });
  try {
    const res = await fetch(`${server.api}/openapi.json`);
    assertEquals(res.status, 200);
    assertEquals(res.headers.get("content-type"), "application/json; charset=utf-8");
    assertEquals(res.headers.get("cache-control"), "public, max-age=300");
    const etag = res.headers.get("etag");
    assert(etag !== null && /^"[0-9a-f]{32}"$/.test(etag), String(etag));
    const served = await res.json();
    assertEquals(served, buildDocument(routes, OPERATIONS, { maxUploadBytes: 5000 }));
    const again = await fetch(`${server.api}/openapi.json`);
    assertEquals(again.headers.get("etag"), etag);
    assertEquals(await again.json(), served);
    const revalidated = await fetch(`${server.api}/openapi.json`, {
      headers: { "if-none-match": etag! },
    });
    assertEquals(revalidated.status, 304);
    assertEquals(await revalidated.text(), "");
    const head = await fetch(`${server.api}/openapi.json`, { method: "HEAD" });
    assertEquals(head.status, 200);
    assertEquals(await head.text(), "");
  } finally {
    await server.close();
  }
});
