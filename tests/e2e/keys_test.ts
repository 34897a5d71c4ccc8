/**
 * The key endpoints over HTTP (docs/api.md, "Keys"): creation (the secret shown once, the body
 * checked), revocation (401 at once, the last admin key kept, other organizations' keys not
 * found), expiry with a real clock, and rotation with its overlap.
 */
import { assert, assertApiError, assertEquals, eventually } from "../_assert.ts";
import { startTestServer, type TestServer } from "../_server.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function call(
  server: TestServer,
  apiKey: string,
  path: string,
  init: RequestInit & { json?: unknown } = {},
): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${apiKey}`);
  const body = init.json === undefined ? init.body : JSON.stringify(init.json);
  if (init.json !== undefined) headers.set("content-type", "application/json");
  return fetch(`${server.api}${path}`, { ...init, body, headers });
}

async function status(server: TestServer, apiKey: string, path = "/keys/"): Promise<number> {
  const res = await call(server, apiKey, path);
  await res.body?.cancel();
  return res.status;
}

async function created(res: Response) {
  const text = await res.text();
  assertEquals(res.status, 201, text);
  return JSON.parse(text) as {
    api_key: string;
    key_id: string;
    name: string | null;
    scopes: string[];
    expires_at: string | null;
  };
}

async function withServer(fn: (server: TestServer) => Promise<void>): Promise<void> {
  const server = await startTestServer();
  try {
    await fn(server);
  } finally {
    await server.close();
  }
}

Deno.test("POST /keys/ makes a scoped key shown once, and refuses what is not a key request", () =>
  withServer(async (server) => {
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const key = await created(
      await call(server, server.apiKey, "/keys/", {
        method: "POST",
        json: { name: "  loader  ", scopes: ["upload", "read", "upload"], expires_at: expiresAt },
      }),
    );
    assert(/^abn_[0-9A-Za-z]{38}$/.test(key.api_key), key.api_key);
    assertEquals(Object.keys(key).sort(), ["api_key", "expires_at", "key_id", "name", "scopes"]);
    assertEquals([key.name, key.scopes, key.expires_at], ["loader", ["upload", "read"], expiresAt]);
    // The new key does what its scopes allow, and nothing else.
    assertEquals(await status(server, key.api_key, "/datasets/"), 200);
    await assertApiError(
      await call(server, key.api_key, "/keys/", { method: "POST", json: { scopes: ["read"] } }),
      403,
      "insufficient_scope",
    );
    await assertApiError(
      await call(server, key.api_key, "/datasets/x/settings/", { method: "PUT", json: {} }),
      403,
      "insufficient_scope",
    );

    const list = await (await call(server, server.apiKey, "/keys/")).json();
    assertEquals(list.organization.org_id, server.orgId);
    assertEquals(list.current_key_id, (await server.service.db.keys.list(server.orgId))[0].key_id);
    const listed = list.keys.find((k: { key_id: string }) => k.key_id === key.key_id);
    assertEquals(listed, {
      key_id: key.key_id,
      name: "loader",
      prefix: key.api_key.slice(0, 10),
      scopes: ["upload", "read"],
      status: "active",
      created_at: listed.created_at,
      expires_at: expiresAt,
      last_used_at: listed.last_used_at,
      revoked_at: null,
    });
    assert(!JSON.stringify(list).includes(key.api_key), "a secret in the key list");
    // A read-only key sees the list (and its own id) too.
    const reader = await created(
      await call(server, server.apiKey, "/keys/", { method: "POST", json: { scopes: ["read"] } }),
    );
    assertEquals(
      (await (await call(server, reader.api_key, "/keys/")).json()).current_key_id,
      reader.key_id,
    );

    const refused: [unknown, string][] = [
      [{ scopes: ["read", "delete"] }, '"delete"'],
      [{ scopes: [] }, "non-empty"],
      [{}, "scopes"],
      [{ scopes: "read" }, "scopes"],
      [{ scopes: ["read"], expires_at: "2020-01-01T00:00:00Z" }, "not in the future"],
      [{ scopes: ["read"], expires_at: "tomorrow" }, "ISO-8601"],
      [{ scopes: ["read"], expires_at: "2030-01-01" }, "ISO-8601"],
      [{ scopes: ["read"], name: "x".repeat(101) }, "name"],
      [{ scopes: ["read"], name: 7 }, "name"],
      [{ scopes: ["read"], owner: "me" }, "owner"],
    ];
    for (const [body, says] of refused) {
      const error = await assertApiError(
        await call(server, server.apiKey, "/keys/", { method: "POST", json: body }),
        400,
        "invalid_key_request",
      );
      assert(error.message.includes(says), `${JSON.stringify(body)}: ${error.message}`);
    }
    await assertApiError(
      await call(server, server.apiKey, "/keys/", { method: "POST", body: "{scopes" }),
      400,
      "invalid_json",
    );
    assertEquals((await server.service.db.keys.list(server.orgId)).length, 3);
  }));

Deno.test("DELETE /keys/ID/ revokes at once, keeps the last admin key, and finds no other organization's key", () =>
  withServer(async (server) => {
    const first = (await server.service.db.keys.list(server.orgId))[0].key_id;
    // The organization's only key has every scope: it cannot revoke itself.
    const last = await assertApiError(
      await call(server, server.apiKey, `/keys/${first}/`, { method: "DELETE" }),
      409,
      "last_admin_key",
    );
    assert(last.message.includes(first), last.message);
    const admin = await created(
      await call(server, server.apiKey, "/keys/", { method: "POST", json: { scopes: ["admin"] } }),
    );
    // An admin key that expires does not count once it has.
    const brief = await created(
      await call(server, server.apiKey, "/keys/", {
        method: "POST",
        json: { scopes: ["admin"], expires_at: new Date(Date.now() + 1500).toISOString() },
      }),
    );
    assertEquals(await status(server, server.apiKey), 200); // remembered by the key cache
    const revoked = await call(server, admin.api_key, `/keys/${first}/`, { method: "DELETE" });
    assertEquals(revoked.status, 204);
    assertEquals(await revoked.text(), "");
    // 401 at once on this instance: no waiting for the key cache.
    await assertApiError(await call(server, server.apiKey, "/keys/"), 401, "unauthorized");
    // Again: still 204 (nothing changes).
    const again = await call(server, admin.api_key, `/keys/${first}/`, { method: "DELETE" });
    assertEquals(again.status, 204);
    await sleep(1600);
    await assertApiError(
      await call(server, admin.api_key, `/keys/${admin.key_id}/`, { method: "DELETE" }),
      409,
      "last_admin_key",
    );
    assertEquals((await server.service.db.keys.get(brief.key_id))?.status, "expired");

    const other = await server.newOrg("other");
    const otherKey = (await server.service.db.keys.list(other.orgId))[0].key_id;
    for (const id of [otherKey, "key_0000000000000000", "nope", "key_%2F..%2F"]) {
      await assertApiError(
        await call(server, admin.api_key, `/keys/${id}/`, { method: "DELETE" }),
        404,
        "not_found",
      );
      await assertApiError(
        await call(server, admin.api_key, `/keys/${id}/rotate/`, { method: "POST" }),
        404,
        "not_found",
      );
    }
    assertEquals(await status(server, other.apiKey), 200);
    const listed = await (await call(server, admin.api_key, "/keys/")).json();
    assertEquals(
      listed.keys.map((k: { status: string }) => k.status),
      ["revoked", "active", "expired"],
    );
  }));

Deno.test("a key stops at its expiry: 401 saying it expired, and when", () =>
  withServer(async (server) => {
    const expiresAt = new Date(Date.now() + 2000).toISOString();
    const key = await created(
      await call(server, server.apiKey, "/keys/", {
        method: "POST",
        json: { scopes: ["read"], expires_at: expiresAt },
      }),
    );
    assertEquals(await status(server, key.api_key), 200);
    const waited = await eventually(() => status(server, key.api_key), 401, 3000);
    assert(Date.now() >= Date.parse(expiresAt), `401 before the expiry (${waited} ms)`);
    const error = await assertApiError(
      await call(server, key.api_key, "/keys/"),
      401,
      "unauthorized",
    );
    assert(error.message.includes("expired") && error.message.includes(expiresAt), error.message);
    const listed = await (await call(server, server.apiKey, "/keys/")).json();
    assertEquals(
      listed.keys.find((k: { key_id: string }) => k.key_id === key.key_id).status,
      "expired",
    );
  }));

Deno.test("rotation: a new key with the same name and scopes; the old one works until the overlap ends", () =>
  withServer(async (server) => {
    const old = await created(
      await call(server, server.apiKey, "/keys/", {
        method: "POST",
        json: { name: "nightly", scopes: ["upload", "read"] },
      }),
    );
    assertEquals(await status(server, old.api_key), 200);
    const started = Date.now();
    const rotated = await created(
      await call(server, server.apiKey, `/keys/${old.key_id}/rotate/`, {
        method: "POST",
        json: { overlap_hours: 2 / 3600 }, // two seconds
      }),
    );
    assertEquals([rotated.name, rotated.scopes, rotated.expires_at], [
      "nightly",
      ["upload", "read"],
      null,
    ]);
    assert(rotated.key_id !== old.key_id && rotated.api_key !== old.api_key);
    assertEquals(await status(server, rotated.api_key), 200);
    assertEquals(await status(server, old.api_key), 200); // within the overlap
    const listed = await (await call(server, server.apiKey, "/keys/")).json();
    const oldNow = listed.keys.find((k: { key_id: string }) => k.key_id === old.key_id);
    assertEquals(oldNow.status, "active");
    const end = Date.parse(oldNow.expires_at);
    assert(end >= started + 2000 && end <= Date.now() + 2000, oldNow.expires_at);
    await eventually(() => status(server, old.api_key), 401, 3000);
    assert(Date.now() >= end, "the old key stopped before the overlap ended");
    assertEquals(await status(server, rotated.api_key), 200);
    await assertApiError(
      await call(server, server.apiKey, `/keys/${old.key_id}/rotate/`, { method: "POST" }),
      400,
      "invalid_key_request",
    );

    // Overlap 0: the old key answers 401 at once. Without a body the overlap is 24 hours.
    const now = await created(
      await call(server, server.apiKey, `/keys/${rotated.key_id}/rotate/`, {
        method: "POST",
        json: { overlap_hours: 0 },
      }),
    );
    await assertApiError(await call(server, rotated.api_key, "/keys/"), 401, "unauthorized");
    assertEquals(await status(server, now.api_key), 200);
    const daily = await created(
      await call(server, server.apiKey, `/keys/${now.key_id}/rotate/`, { method: "POST" }),
    );
    const dayEnd = Date.parse((await server.service.db.keys.get(now.key_id))?.expires_at ?? "");
    assert(Math.abs(dayEnd - (Date.now() + 86_400_000)) < 60_000, String(dayEnd));
    assertEquals(await status(server, daily.api_key), 200);

    for (
      const body of [{ overlap_hours: 169 }, { overlap_hours: -1 }, { overlap_hours: "24" }, {
        hours: 1,
      }]
    ) {
      await assertApiError(
        await call(server, server.apiKey, `/keys/${daily.key_id}/rotate/`, {
          method: "POST",
          json: body,
        }),
        400,
        "invalid_key_request",
      );
    }
  }));
