/**
 * Security: organization isolation on every route, keys hashed at rest and out of the logs,
 * upload URLs that cannot be re-pointed, no path traversal through experiment_id or /storage/,
 * slow bodies dropped with 408, and the per-key rate limit.
 */
import { assert, assertApiError, assertEquals, assertMatch } from "../_assert.ts";
import { DRIVERS, driverTest, startDriverServer } from "../_drivers.ts";
import { sqliteOf, startTestServer } from "../_server.ts";
import { containsBytes, listFiles, rawExchange, tmpFiles, waitFor } from "../_faults.ts";
import { apiRoutes } from "../../src/routes/mod.ts";
import { assertSameBytes, authed, readJson, stallingBody, upload, VALID } from "./_helpers.ts";

const enc = new TextEncoder();
const OTHER = enc.encode("user_id,variant,date,m\nz1,A,2026-01-01,1\nz2,B,2026-01-01,0\n");

// ---------------------------------------------------------------------------------------------
// Organization isolation

/** The route patterns the isolation test below exercises; a new route must be added here. */
const COVERED = new Set([
  "POST /api/v1/datasets/upload/",
  "POST /api/v1/datasets/initiate/",
  "GET /api/v1/datasets/",
  "GET /api/v1/datasets/:experiment_id/",
  "DELETE /api/v1/datasets/:experiment_id/",
  "GET /api/v1/datasets/:experiment_id/file/",
  "GET /api/v1/datasets/:experiment_id/analysis/",
  "GET /api/v1/datasets/:experiment_id/history/",
  "GET /api/v1/datasets/:experiment_id/settings/",
  "PUT /api/v1/datasets/:experiment_id/settings/",
  "GET /api/v1/keys/",
  "POST /api/v1/keys/",
  "DELETE /api/v1/keys/:key_id/",
  "POST /api/v1/keys/:key_id/rotate/",
  "GET /api/v1/audit/",
  "POST /api/v1/webhooks/",
  "GET /api/v1/webhooks/",
  "GET /api/v1/webhooks/:webhook_id/",
  "PATCH /api/v1/webhooks/:webhook_id/",
  "DELETE /api/v1/webhooks/:webhook_id/",
  "POST /api/v1/webhooks/:webhook_id/rotate-secret/",
  "POST /api/v1/webhooks/:webhook_id/test/",
  "GET /api/v1/webhooks/:webhook_id/deliveries/",
  "POST /api/v1/webhooks/:webhook_id/deliveries/:delivery_id/retry/",
  "PUT /storage/*key",
  // Token-authenticated (not by API key) and without organization data of its own:
  "POST /api/v1/storage-events/",
  // The OpenAPI document: the same for every caller, no organization data.
  "GET /api/v1/openapi.json",
  // Health and metrics at the root: no organization data.
  "GET /healthz",
  "GET /metrics",
  // The UI's static files: no organization data.
  "GET /",
  "GET /ui/:file",
]);

Deno.test("every route is covered by the organization isolation test", () => {
  const routes = apiRoutes.flat().map(({ method, path: pattern }) => `${method} ${pattern}`);
  const missing = routes.filter((r) => !COVERED.has(r));
  assertEquals(missing, [], "add these routes to the isolation test");
});

driverTest(
  "another organization's key never reads, lists, writes, deletes or initiates into an organization's data",
  async (server) => {
    const a = { orgId: server.orgId, apiKey: server.apiKey };
    const b = await server.newOrg("intruder");
    const settingsA = { mde: 0.1, target_users_per_variant: 1234 };
    // Organization A: a direct upload, settings, and a two-step delivery.
    assertEquals((await upload(server, "secret", VALID)).status, 201);
    const put = await authed(server, a.apiKey, "/datasets/secret/settings/", {
      method: "PUT",
      body: JSON.stringify(settingsA),
    });
    assertEquals(put.status, 200, await put.text());
    const gA = await (await authed(server, a.apiKey, "/datasets/initiate/", {
      method: "POST",
      body: JSON.stringify({ experiment_id: "twostep" }),
    })).json();
    const putA = await fetch(gA.upload_url, { method: "PUT", body: VALID });
    assertEquals(putA.status, 200);
    await putA.body?.cancel();

    const asB = (path: string, init: RequestInit = {}) => authed(server, b.apiKey, path, init);
    // Lists: none of A's datasets. A's own cursor pages through A's list, and means nothing to B.
    for (const query of ["", "?limit=1"]) {
      const res = await asB(`/datasets/${query}`);
      const { text, json } = await readJson(res);
      assertEquals(res.status, 200, text);
      assertEquals((json as { datasets: unknown[] }).datasets, [], text);
    }
    const pageA = await (await authed(server, a.apiKey, "/datasets/?limit=1")).json();
    assert(typeof pageA.next_cursor === "string", JSON.stringify(pageA));
    const nextA = await authed(server, a.apiKey, `/datasets/?limit=1&cursor=${pageA.next_cursor}`);
    assertEquals((await nextA.json()).datasets.length, 1);
    for (
      const cursor of [
        pageA.next_cursor,
        `org/${a.orgId}/experiments/`,
        btoa(`org/${a.orgId}/experiments/secret/latest.csv`),
      ]
    ) {
      await assertApiError(
        await asB(`/datasets/?cursor=${encodeURIComponent(cursor)}`),
        400,
        "invalid_json",
      );
    }
    // A's history: two deliveries of `paged`, and one of each other dataset, analysed.
    assertEquals((await upload(server, "paged", VALID)).status, 201);
    await historyLength(server, a.apiKey, "paged", 1);
    assertEquals((await upload(server, "paged", OTHER)).status, 201);
    await historyLength(server, a.apiKey, "paged", 2);
    await historyLength(server, a.apiKey, "secret", 1);
    await historyLength(server, a.apiKey, "twostep", 1);
    const historyPage = await (await authed(server, a.apiKey, "/datasets/paged/history/?limit=1"))
      .json();
    assert(typeof historyPage.next_cursor === "string", JSON.stringify(historyPage));
    // Reads, downloads, analysis, history and exports: 404 as if nothing existed.
    for (const id of ["secret", "twostep", "paged"]) {
      await assertApiError(await asB(`/datasets/${id}/`), 404, "not_found");
      await assertApiError(await asB(`/datasets/${id}/file/`), 404, "not_found");
      await assertApiError(await asB(`/datasets/${id}/analysis/`), 404, "not_found");
      await assertApiError(await asB(`/datasets/${id}/analysis/?format=csv`), 404, "not_found");
      await assertApiError(await asB(`/datasets/${id}/history/`), 404, "not_found");
      await assertApiError(await asB(`/datasets/${id}/history/?format=csv`), 404, "not_found");
      const head = await asB(`/datasets/${id}/file/`, { method: "HEAD" });
      assertEquals(head.status, 404);
      await head.body?.cancel();
      await assertApiError(await asB(`/datasets/${id}/`, { method: "DELETE" }), 404, "not_found");
    }
    // A's history cursor means nothing to B.
    await assertApiError(
      await asB(`/datasets/paged/history/?limit=1&cursor=${historyPage.next_cursor}`),
      400,
      "invalid_json",
    );
    // Settings: B sees only its own (none), and writing them does not touch A's.
    const settingsB = await asB("/datasets/secret/settings/");
    assertEquals(await settingsB.json(), {});
    const writeB = await asB("/datasets/secret/settings/", {
      method: "PUT",
      body: JSON.stringify({ mde: 0.3 }),
    });
    assertEquals(writeB.status, 200);
    await writeB.body?.cancel();
    const stillA = await authed(server, a.apiKey, "/datasets/secret/settings/");
    assertEquals((await stillA.json()).mde, settingsA.mde);
    // Writes land in B's own namespace, never in A's.
    assertEquals((await upload(server, "secret", OTHER, b.apiKey)).status, 201);
    const gB = await (await asB("/datasets/initiate/", {
      method: "POST",
      body: JSON.stringify({ experiment_id: "twostep" }),
    })).json();
    assertEquals(gB.key, `org/${b.orgId}/experiments/twostep/latest.csv`);
    assert(!gB.upload_url.includes(a.orgId), gB.upload_url);
    const putB = await fetch(gB.upload_url, { method: "PUT", body: OTHER });
    assertEquals(putB.status, 200);
    await putB.body?.cancel();
    // B's own `secret` has B's history only.
    await historyLength(server, b.apiKey, "secret", 1);
    const historyB = await (await asB("/datasets/secret/history/?format=csv")).text();
    const historyA = await (await authed(server, a.apiKey, "/datasets/secret/history/")).json();
    assert(!historyB.includes(historyA.snapshots[0].etag), "A's snapshot in B's history");
    // Keys: B sees its organization and keys only, and cannot revoke or rotate A's.
    const keys = await (await asB("/keys/")).json();
    assertEquals(keys.organization.org_id, b.orgId);
    assert(!JSON.stringify(keys).includes(a.orgId), "A's organization leaked into B's key list");
    const keyA = (await server.service.db.keys.list(a.orgId))[0];
    await assertApiError(
      await asB(`/keys/${keyA.key_id}/`, { method: "DELETE" }),
      404,
      "not_found",
    );
    await assertApiError(
      await asB(`/keys/${keyA.key_id}/rotate/`, { method: "POST", body: "{}" }),
      404,
      "not_found",
    );
    const madeByB = await asB("/keys/", {
      method: "POST",
      body: JSON.stringify({ scopes: ["read"] }),
    });
    assertEquals(madeByB.status, 201);
    const { key_id: keyOfB } = await madeByB.json();
    assertEquals((await server.service.db.keys.get(keyOfB))?.org_id, b.orgId);
    assertEquals((await server.service.db.keys.get(keyA.key_id))?.status, "active");
    assertEquals((await server.service.db.keys.list(a.orgId)).length, 1);
    // The audit trail: B sees its own events only, and A's cursor means nothing to B.
    const auditB = await (await asB("/audit/")).json();
    const auditText = JSON.stringify(auditB);
    assert(!auditText.includes(a.orgId) && !auditText.includes(keyA.key_id), auditText);
    assert(auditB.events.some((e: { action: string }) => e.action === "key.created"), auditText);
    const auditA = await (await authed(server, a.apiKey, "/audit/?limit=1")).json();
    assertEquals(auditA.events.length, 1);
    assert(typeof auditA.next_cursor === "string", JSON.stringify(auditA));
    await assertApiError(
      await asB(`/audit/?cursor=${encodeURIComponent(auditA.next_cursor)}`),
      400,
      "invalid_json",
    );
    // Webhooks: B lists none of A's endpoints, and every route of A's ids answers 404; A's
    // deliveries cursor means nothing on B's own endpoint. (192.0.2.10: a documentation
    // address, never reached.)
    const hookA = await (await authed(server, a.apiKey, "/webhooks/", {
      method: "POST",
      body: JSON.stringify({ url: "https://192.0.2.10/hook", events: ["*"] }),
    })).json();
    const hookB = await (await asB("/webhooks/", {
      method: "POST",
      body: JSON.stringify({ url: "https://192.0.2.10/b", events: ["webhook.test"] }),
    })).json();
    const tests = [];
    for (let i = 0; i < 2; i++) {
      tests.push(
        await (await authed(server, a.apiKey, `/webhooks/${hookA.webhook_id}/test/`, {
          method: "POST",
        })).json(),
      );
    }
    const hooksOfB = await (await asB("/webhooks/")).json();
    assertEquals(hooksOfB.webhooks.map((w: { webhook_id: string }) => w.webhook_id), [
      hookB.webhook_id,
    ]);
    const one = `/webhooks/${hookA.webhook_id}/`;
    for (
      const [method, path] of [
        ["GET", one],
        ["PATCH", one],
        ["DELETE", one],
        ["POST", `${one}rotate-secret/`],
        ["POST", `${one}test/`],
        ["GET", `${one}deliveries/`],
        ["POST", `${one}deliveries/${tests[0].delivery_id}/retry/`],
        ["POST", `/webhooks/${hookB.webhook_id}/deliveries/${tests[0].delivery_id}/retry/`],
      ]
    ) {
      const body = method === "PATCH" ? JSON.stringify({ enabled: false }) : undefined;
      await assertApiError(await asB(path, { method, body }), 404, "not_found");
    }
    const pageHooksA = await (await authed(server, a.apiKey, `${one}deliveries/?limit=1`)).json();
    assert(typeof pageHooksA.next_cursor === "string", JSON.stringify(pageHooksA));
    await assertApiError(
      await asB(`/webhooks/${hookB.webhook_id}/deliveries/?cursor=${pageHooksA.next_cursor}`),
      400,
      "invalid_json",
    );
    const deliveriesB = await (await asB(`/webhooks/${hookB.webhook_id}/deliveries/`)).json();
    assertEquals(deliveriesB.deliveries, [], "A's events are not B's");
    const stillHookA = await (await authed(server, a.apiKey, one)).json();
    assertEquals(stillHookA.enabled, true);
    // A's data is untouched.
    assertSameBytes(await server.stored(a.orgId, "secret"), VALID, "A's direct upload");
    assertSameBytes(await server.stored(a.orgId, "twostep"), VALID, "A's two-step delivery");
    assertSameBytes(await server.stored(b.orgId, "secret"), OTHER, "B's own upload");
    const listA = await (await authed(server, a.apiKey, "/datasets/")).json();
    assertEquals(
      listA.datasets.map((d: { experiment_id: string }) => d.experiment_id).sort(),
      ["paged", "secret", "twostep"],
    );
    const fileA = await authed(server, a.apiKey, "/datasets/secret/file/");
    assertSameBytes(new Uint8Array(await fileA.arrayBuffer()), VALID, "A's download");
  },
);

/** Waits until the experiment's history has `length` snapshots. */
async function historyLength(
  server: { api: string },
  apiKey: string,
  experimentId: string,
  length: number,
): Promise<void> {
  await waitFor(
    async () => {
      const res = await authed(server, apiKey, `/datasets/${experimentId}/history/`);
      const body = await res.json();
      return res.status === 200 && body.snapshots.length === length;
    },
    `${length} snapshots of ${experimentId}`,
    30_000,
  );
}

// ---------------------------------------------------------------------------------------------
// Keys at rest

Deno.test("API keys are stored hashed: not in the database file, its WAL, nor the logs", async () => {
  const lines: string[] = [];
  const server = await startTestServer({}, { log: (line) => lines.push(line) });
  try {
    const key = server.apiKey;
    const secret = key.slice(10); // what follows the displayed prefix (abn_ + 6 characters)
    // Use the key in every way: good calls, failing calls, malformed headers, an error path.
    assertEquals((await upload(server, "k", VALID)).status, 201);
    for (
      const header of [
        `Bearer ${key}`,
        `Bearer ${key}x`,
        `bearer ${key}`,
        key,
        `Bearer ${key} ${key}`,
      ]
    ) {
      const res = await fetch(`${server.api}/keys/`, { headers: { authorization: header } });
      await res.body?.cancel();
    }
    await (await authed(server, key, "/datasets/k/analysis/")).body?.cancel();
    await (await authed(server, key, "/datasets/%zz/")).body?.cancel();
    await (await fetch(`${server.api}/datasets/upload/?experiment_id=a%20b`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: "x",
    })).body?.cancel();
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    sqliteOf(server).exec("PRAGMA wal_checkpoint(PASSIVE)");
    const files = (await listFiles(server.dataDir)).filter((f) => f.startsWith("abn.sqlite"));
    assert(files.includes("abn.sqlite"), files.join());
    for (const file of files) {
      const bytes = await Deno.readFile(`${server.dataDir}/${file}`);
      assert(!containsBytes(bytes, enc.encode(secret)), `the key is readable in ${file}`);
    }
    const logs = lines.join("\n");
    assert(lines.length > 5, "no log lines captured");
    assert(
      !logs.includes(secret),
      `the key is in the request log: ${lines.filter((l) => l.includes(secret)).join("\n")}`,
    );
    assert(!metrics.includes(secret), "the key is in /metrics");
  } finally {
    await server.close();
  }
});

// ---------------------------------------------------------------------------------------------
// Upload URLs

Deno.test("a local upload URL cannot be re-pointed: other org, id, expiry, method or size", async () => {
  const server = await startDriverServer("local");
  try {
    const other = await server.newOrg("other");
    const grant = async (extra: Record<string, unknown> = {}) => {
      const res = await authed(server, server.apiKey, "/datasets/initiate/", {
        method: "POST",
        body: JSON.stringify({ experiment_id: "mine", ...extra }),
      });
      assertEquals(res.status, 200);
      return new URL((await res.json()).upload_url);
    };
    const plain = await grant();
    const sized = await grant({ size_bytes: VALID.length });
    const variants: [string, URL, string][] = [];
    const alter = (what: string, base: URL, change: (u: URL) => void, method = "PUT") => {
      const u = new URL(base);
      change(u);
      variants.push([what, u, method]);
    };
    alter("another org", plain, (u) => u.pathname = u.pathname.replace(server.orgId, other.orgId));
    alter("another id", plain, (u) => u.pathname = u.pathname.replace("/mine/", "/yours/"));
    alter("another file name", plain, (u) => u.pathname = u.pathname.replace("latest", "other"));
    alter("upper-case path", plain, (u) => u.pathname = u.pathname.replace("/org/", "/ORG/"));
    alter("longer expiry", plain, (u) => {
      u.searchParams.set("expires", String(Number(u.searchParams.get("expires")) + 86_400));
    });
    alter("shorter expiry", plain, (u) => {
      u.searchParams.set("expires", String(Number(u.searchParams.get("expires")) - 1));
    });
    alter("expiry with a sign", plain, (u) => {
      u.searchParams.set("expires", `+${u.searchParams.get("expires")}`);
    });
    alter("a size added", plain, (u) => u.searchParams.set("size", String(VALID.length)));
    alter("the size removed", sized, (u) => u.searchParams.delete("size"));
    alter("the size changed", sized, (u) => u.searchParams.set("size", String(VALID.length + 1)));
    alter("no signature", plain, (u) => u.searchParams.delete("signature"));
    alter("an empty signature", plain, (u) => u.searchParams.set("signature", ""));
    alter("the other URL's signature", plain, (u) => {
      u.searchParams.set("signature", sized.searchParams.get("signature")!);
    });
    alter("a truncated signature", plain, (u) => {
      u.searchParams.set("signature", u.searchParams.get("signature")!.slice(0, -1));
    });
    alter("a padded signature", plain, (u) => {
      u.searchParams.set("signature", `${u.searchParams.get("signature")}=`);
    });
    for (const [what, url] of variants) {
      const res = await fetch(url, { method: "PUT", body: VALID });
      await assertApiError(res, 403, "invalid_signature").catch((error) => {
        throw new Error(`${what}: ${error.message}`);
      });
    }
    for (const method of ["POST", "GET", "DELETE", "PATCH"]) {
      const res = await fetch(plain, { method, body: method === "GET" ? undefined : VALID });
      await assertApiError(res, 405, "method_not_allowed");
    }
    assertEquals(await server.stored(other.orgId, "mine"), null);
    assertEquals(await server.stored(server.orgId, "yours"), null);
    assertEquals(await server.stored(server.orgId, "mine"), null);
    // The genuine URLs still work.
    const ok = await fetch(plain, { method: "PUT", body: VALID });
    assertEquals(ok.status, 200);
    await ok.body?.cancel();
    const okSized = await fetch(sized, { method: "PUT", body: VALID });
    assertEquals(okSized.status, 200);
    await okSized.body?.cancel();
  } finally {
    await server.close();
  }
});

// ---------------------------------------------------------------------------------------------
// Path traversal

const TRAVERSALS = [
  "..",
  "...",
  ".",
  "../x",
  "..%2Fx",
  "..%2F..%2F..%2Fpwned",
  "%2e%2e",
  "%2e%2e%2fpwned",
  "%252e%252e%252fpwned",
  "..%5cpwned",
  "....//pwned",
  "x/../../pwned",
  "%c0%ae%c0%ae%c0%afpwned",
  "pwned%00",
  "/etc/passwd",
  "~root",
];

for (const driver of DRIVERS) {
  Deno.test(`no path traversal through experiment_id or /storage/: nothing written outside storage (${driver})`, async () => {
    const parent = await Deno.makeTempDir({ prefix: "abn-traversal-" });
    const dataDir = `${parent}/data`;
    const server = await startDriverServer(driver, { ABN_DATA_DIR: dataDir });
    try {
      const port = Number(new URL(server.url).port);
      const raw = (method: string, target: string, body = "") =>
        rawExchange(
          port,
          `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${server.apiKey}\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${enc.encode(body).length}\r\n` +
            `Connection: close\r\n\r\n${body}`,
        );
      const csv = new TextDecoder().decode(VALID);
      for (const id of TRAVERSALS) {
        const attempts: [string, string, string?][] = [
          ["POST", `/api/v1/datasets/upload/?experiment_id=${id}`, csv],
          ["POST", "/api/v1/datasets/initiate/", JSON.stringify({ experiment_id: id })],
          [
            "POST",
            "/api/v1/datasets/initiate/",
            JSON.stringify({ experiment_id: decodeURIComponentSafe(id) }),
          ],
          ["GET", `/api/v1/datasets/${id}/`],
          ["GET", `/api/v1/datasets/${id}/file/`],
          ["DELETE", `/api/v1/datasets/${id}/`],
          ["PUT", `/api/v1/datasets/${id}/settings/`, "{}"],
          ["PUT", `/storage/org/${server.orgId}/experiments/${id}/latest.csv`, csv],
          ["PUT", `/storage/${id}/latest.csv?expires=9999999999&signature=x`, csv],
          ["PUT", `/storage/org/${id}/experiments/e/latest.csv`, csv],
        ];
        for (const [method, target, body] of attempts) {
          const r = await raw(method, target, body);
          // Dot segments are resolved before routing (`/datasets/./` is the list): a read may
          // succeed on what the path resolves to, but no write is accepted.
          const ok = r.status !== null && r.status < 500 && (r.status >= 400 || method === "GET");
          assert(ok, `${method} ${target}: ${r.head}`);
        }
      }
      // Everything the service wrote is its database, its secret, and storage/ (no traversal).
      const files = await listFiles(parent);
      const unexpected = files.filter((f) =>
        !/^data\/(abn\.sqlite(-wal|-shm)?|secrets\/url-signing\.key)$/.test(f) &&
        !f.startsWith("data/storage/") && !f.startsWith("data/tmp/")
      );
      assertEquals(unexpected, []);
      assertEquals(files.filter((f) => f.includes("pwned")), []);
      assertEquals(await tmpFiles(dataDir), []);
      if (driver === "local") {
        assertEquals(files.filter((f) => f.startsWith("data/storage/")), []);
      }
    } finally {
      await server.close();
      await Deno.remove(parent, { recursive: true });
    }
  });
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

// ---------------------------------------------------------------------------------------------
// Slow clients

driverTest(
  "a body that trickles then stops is dropped with 408 body_timeout, the file unchanged",
  async (server) => {
    assertEquals((await upload(server, "slow", VALID)).status, 201);
    const { body, release } = stallingBody(enc.encode("user_id,variant,date,m\nu1,A,20"));
    const started = performance.now();
    const res = await upload(server, "slow", body);
    const error = await assertApiError(res, 408, "body_timeout");
    // The rest of the body may still come: the connection is not for another request.
    assertEquals(res.headers.get("connection"), "close");
    release();
    const seconds = (performance.now() - started) / 1000;
    assert(seconds >= 0.9 && seconds < 10, `dropped after ${seconds.toFixed(1)} s`);
    assertMatch(error.message, /stopped arriving/);
    assertSameBytes(await server.stored(server.orgId, "slow"), VALID);
    if (server.driver === "local") {
      await waitFor(async () => (await tmpFiles(server.dataDir)).length === 0, "no temporaries");
      // The local upload URL applies the same timeout.
      const g = await (await authed(server, server.apiKey, "/datasets/initiate/", {
        method: "POST",
        body: JSON.stringify({ experiment_id: "slow" }),
      })).json();
      const stalled = stallingBody(enc.encode("user_id,variant"));
      const put = await fetch(g.upload_url, { method: "PUT", body: stalled.body });
      await assertApiError(put, 408, "body_timeout");
      stalled.release();
      assertSameBytes(await server.stored(server.orgId, "slow"), VALID);
    }
    // A body that keeps arriving, however slowly, within the idle timeout is not dropped.
    const pieces = [...VALID].reduce<number[][]>((acc, b, i) => {
      (acc[Math.floor(i / 40)] ??= []).push(b);
      return acc;
    }, []);
    const steady = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const next = pieces.shift();
        if (!next) return controller.close();
        await new Promise((r) => setTimeout(r, 300));
        controller.enqueue(Uint8Array.from(next));
      },
    });
    const ok = await upload(server, "steady", steady);
    assertEquals(ok.status, 201, await ok.text());
  },
  { ABN_BODY_IDLE_TIMEOUT_SECONDS: "1" },
);

driverTest(
  "uploads beyond ABN_MAX_CONCURRENT_UPLOADS answer 503 with Retry-After before their body is read",
  async (server) => {
    assertEquals((await upload(server, "cap", VALID)).status, 201);
    const inUse = async () => {
      const text = await (await fetch(`${server.url}/metrics`)).text();
      return Number(/^abn_uploads_in_progress (\d+)$/m.exec(text)?.[1]);
    };
    // Two bodies that start and then wait hold both slots.
    const held = [stallingBody(enc.encode("user_id,variant")), stallingBody(enc.encode("user_id"))];
    const pending = held.map((h, i) => upload(server, `held${i}`, h.body));
    await waitFor(async () => (await inUse()) === 2, "two uploads in progress");
    const refused = await upload(server, "cap", VALID);
    const error = await assertApiError(refused, 503, "service_unavailable");
    assertMatch(error.message, /2 uploads are already in progress/);
    assertEquals(refused.headers.get("retry-after"), "5");
    if (server.driver === "local") {
      // The local upload URL takes from the same slots.
      const g = await (await authed(server, server.apiKey, "/datasets/initiate/", {
        method: "POST",
        body: JSON.stringify({ experiment_id: "cap" }),
      })).json();
      const put = await fetch(g.upload_url, { method: "PUT", body: VALID });
      await assertApiError(put, 503, "service_unavailable");
    }
    assertSameBytes(await server.stored(server.orgId, "cap"), VALID);
    // The held bodies finish; their slots come back.
    held.forEach((h, i) =>
      h.release(
        enc.encode(
          i === 0 ? ",date,m\nu1,A,2024-01-01,1\n" : ",variant,date,m\nu1,A,2024-01-01,0\n",
        ),
      )
    );
    for (const res of await Promise.all(pending)) assertEquals(res.status, 201, await res.text());
    assertEquals(await inUse(), 0);
    const next = enc.encode("user_id,variant,date,m\nu2,B,2024-01-02,1\n");
    assertEquals((await upload(server, "cap", next)).status, 201);
    assertSameBytes(await server.stored(server.orgId, "cap"), next);
  },
  { ABN_MAX_CONCURRENT_UPLOADS: "2" },
);

// ---------------------------------------------------------------------------------------------
// Rate limiting

Deno.test("per-key rate limit: the 6th call in a minute gets 429 rate_limited with Retry-After", async () => {
  const server = await startTestServer({ ABN_RATE_LIMIT_PER_MINUTE: "5" });
  try {
    const second = await server.newOrg("second");
    const call = (key: string) => authed(server, key, "/keys/");
    // Calls to different routes count together, per key.
    assertEquals((await upload(server, "r", VALID)).status, 201);
    for (let i = 0; i < 4; i++) {
      const res = await call(server.apiKey);
      assertEquals(res.status, 200, `call ${i + 2}`);
      await res.body?.cancel();
    }
    const limited = await call(server.apiKey);
    const error = await assertApiError(limited, 429, "rate_limited");
    const retry = Number(limited.headers.get("retry-after"));
    assert(Number.isInteger(retry) && retry >= 1 && retry <= 60, `Retry-After ${retry}`);
    assertMatch(error.message, /5/);
    // An upload over the limit is refused before its body is read, and the answer still arrives.
    await assertApiError(await upload(server, "r", VALID), 429, "rate_limited");
    // Another key is not affected; unauthenticated calls are not counted against the key.
    for (let i = 0; i < 5; i++) {
      const res = await call(second.apiKey);
      assertEquals(res.status, 200, `second key, call ${i + 1}`);
      await res.body?.cancel();
    }
    await assertApiError(await call("abn_nope"), 401, "unauthorized");
    const health = await fetch(`${server.url}/healthz`);
    assertEquals(health.status, 200);
    await health.body?.cancel();
  } finally {
    await server.close();
  }
});

Deno.test("rate limit 0 turns the limit off", async () => {
  const server = await startTestServer({ ABN_RATE_LIMIT_PER_MINUTE: "0" });
  try {
    for (let i = 0; i < 30; i++) {
      const res = await authed(server, server.apiKey, "/keys/");
      assertEquals(res.status, 200, `call ${i + 1}`);
      await res.body?.cancel();
    }
  } finally {
    await server.close();
  }
});
