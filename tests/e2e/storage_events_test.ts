/**
 * `POST /api/v1/storage-events/`: the token only as `Authorization: Bearer`, never from the query
 * string; a short token stops start-up.
 */
import { assertApiError, assertEquals, assertMatch, assertThrows } from "../_assert.ts";
import { startTestServer } from "../_server.ts";
import { ConfigError, loadConfig } from "../../src/config.ts";

const TOKEN = "0123456789abcdef-events-token";

function events(api: string, init: { auth?: string; query?: string; body?: unknown }) {
  return fetch(`${api}/storage-events/${init.query ?? ""}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(init.auth === undefined ? {} : { authorization: init.auth }),
    },
    body: JSON.stringify(init.body ?? { Records: [] }),
  });
}

Deno.test("storage events take the token as a Bearer header only", async () => {
  const server = await startTestServer({ ABN_STORAGE_EVENTS_TOKEN: TOKEN });
  try {
    const query = await assertApiError(
      await events(server.api, { query: `?token=${TOKEN}` }),
      401,
      "unauthorized",
    );
    assertMatch(query.message, /Authorization: Bearer/);
    // Even beside a correct header, a token in the query string is refused.
    await assertApiError(
      await events(server.api, { auth: `Bearer ${TOKEN}`, query: `?token=${TOKEN}` }),
      401,
      "unauthorized",
    );
    for (const auth of [TOKEN, `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, "Bearer ", ""]) {
      await assertApiError(await events(server.api, { auth }), 401, "unauthorized");
    }
    const ok = await events(server.api, { auth: `Bearer ${TOKEN}` });
    assertEquals(ok.status, 200);
    assertEquals(await ok.json(), { accepted: 0 });
    // A record of a stored dataset is taken.
    const upload = await fetch(`${server.api}/datasets/upload/?experiment_id=evt`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.apiKey}` },
      body: "user_id,variant,date,m\nu1,A,2026-01-01,1\nu2,B,2026-01-01,0\n",
    });
    assertEquals(upload.status, 201);
    await upload.body?.cancel();
    const key = `org/${server.orgId}/experiments/evt/latest.csv`;
    const taken = await events(server.api, {
      auth: `Bearer ${TOKEN}`,
      body: { Records: [{ s3: { object: { key } } }, { s3: { object: { key: "elsewhere" } } }] },
    });
    assertEquals(await taken.json(), { accepted: 1 });
  } finally {
    await server.close();
  }
});

Deno.test("storage events are not found without a token configured", async () => {
  const server = await startTestServer();
  try {
    await assertApiError(await events(server.api, { auth: `Bearer ${TOKEN}` }), 404, "not_found");
  } finally {
    await server.close();
  }
});

Deno.test("loadConfig refuses a storage events token under 24 characters without repeating it", () => {
  const error = assertThrows(
    () => loadConfig({ ABN_STORAGE_EVENTS_TOKEN: "short-secret-1234" }),
    ConfigError,
  );
  assertMatch(error.message, /ABN_STORAGE_EVENTS_TOKEN/);
  assertEquals(error.message.includes("short-secret-1234"), false, error.message);
  assertEquals(
    loadConfig({ ABN_STORAGE_EVENTS_TOKEN: "x".repeat(24) }).storageEventsToken,
    "x".repeat(24),
  );
});
