import { assert, assertApiError, assertEquals, eventually } from "../_assert.ts";
import { startTestServer } from "../_server.ts";
import { generateKey } from "../../src/db/api_keys.ts";

Deno.test("auth answers 401 JSON for missing, malformed, unknown and revoked keys", async () => {
  const server = await startTestServer();
  try {
    const get = (authorization?: string) =>
      fetch(`${server.api}/keys/`, {
        headers: authorization === undefined ? {} : { authorization },
      });
    await assertApiError(await get(), 401, "unauthorized");
    await assertApiError(await get(server.apiKey), 401, "unauthorized"); // bare key, no "Bearer "
    await assertApiError(await get(`bearer ${server.apiKey}`), 401, "unauthorized");
    await assertApiError(await get(`Bearer  ${server.apiKey}`), 401, "unauthorized");
    await assertApiError(await get(`Basic ${server.apiKey}`), 401, "unauthorized");
    await assertApiError(await get("Bearer abn_nothing"), 401, "unauthorized");
    await assertApiError(await get(`Bearer ${generateKey()}`), 401, "unauthorized");
    const ok = await get(`Bearer ${server.apiKey}`);
    assertEquals(ok.status, 200);
    const body = await ok.json();
    assertEquals(body.organization.org_id, server.orgId);
    assertEquals(body.keys.length, 1);
    assertEquals(body.keys[0].status, "active");
    assertEquals(JSON.stringify(body).includes(server.apiKey), false);
    const keyId = (await server.service.db.keys.list(server.orgId))[0].key_id;
    await server.service.db.keys.revoke(keyId);
    const status = async () => {
      const res = await get(`Bearer ${server.apiKey}`);
      await res.body?.cancel();
      return res.status;
    };
    // Admin changes reach the running server within one second.
    await eventually(status, 401, 1000);
    await assertApiError(await get(`Bearer ${server.apiKey}`), 401, "unauthorized");
  } finally {
    await server.close();
  }
});

Deno.test("auth answers 403 for a key of a deactivated organization, and 200 again once reactivated", async () => {
  const server = await startTestServer();
  try {
    const get = () =>
      fetch(`${server.api}/keys/`, { headers: { authorization: `Bearer ${server.apiKey}` } });
    const status = async () => {
      const res = await get();
      await res.body?.cancel();
      return res.status;
    };
    assertEquals(await status(), 200);
    await server.service.db.orgs.setActive(server.orgId, false);
    await eventually(status, 403, 1000);
    await assertApiError(await get(), 403, "org_deactivated");
    await server.service.db.orgs.setActive(server.orgId, true);
    await eventually(status, 200, 1000);
  } finally {
    await server.close();
  }
});

Deno.test("every response carries X-Request-Id and unknown paths answer 404 JSON", async () => {
  const server = await startTestServer();
  try {
    const res = await fetch(`${server.url}/no/such/path`);
    const error = await assertApiError(res, 404, "not_found");
    assert(error.request_id.length > 8);
    const health = await fetch(`${server.url}/healthz`);
    assertEquals(health.status, 200);
    assertEquals(await health.json(), { status: "ok" });
    assert(health.headers.get("x-request-id"));
    const wrong = await fetch(`${server.api}/datasets/upload/`, { method: "GET" });
    await assertApiError(wrong, 405, "method_not_allowed");
    assertEquals(wrong.headers.get("allow"), "POST");
  } finally {
    await server.close();
  }
});

Deno.test("healthz answers 503 when the database is closed", async () => {
  const server = await startTestServer();
  try {
    await server.service.db.close();
    await assertApiError(await fetch(`${server.url}/healthz`), 503, "service_unavailable");
  } finally {
    server.service.close = () => Promise.resolve();
    await server.close();
  }
});
