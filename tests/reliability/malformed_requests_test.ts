/**
 * Malformed requests: header abuse sent as raw bytes (Deno's HTTP layer refuses it), bad
 * percent-encoding in the query and the path, repeated parameters, wrong methods on every
 * route (405 with `Allow`), unknown paths (404 JSON), odd JSON bodies, and invalid list cursors.
 * Never a 5xx, and the server answers /healthz after each.
 */
import { assert, assertApiError, assertEquals } from "../_assert.ts";
import { driverTest } from "../_drivers.ts";
import { startTestServer } from "../_server.ts";
import { rawExchange, Rng, tmpFiles, waitFor } from "../_faults.ts";
import { apiRoutes } from "../../src/routes/mod.ts";
import { healthRoutes } from "../../src/routes/health.ts";
import { assertSameBytes, authed, errorCode, readJson, upload, VALID } from "./_helpers.ts";

async function healthy(url: string): Promise<void> {
  const res = await fetch(`${url}/healthz`);
  assertEquals(res.status, 200, "the server no longer answers /healthz");
  await res.body?.cancel();
}

Deno.test("header abuse sent as raw bytes gets a 4xx or a closed connection, and the server stays up", async () => {
  const server = await startTestServer();
  try {
    const port = Number(new URL(server.url).port);
    const auth = `Authorization: Bearer ${server.apiKey}\r\n`;
    const up = "POST /api/v1/datasets/upload/?experiment_id=raw HTTP/1.1\r\nHost: x\r\n" + auth;
    assertEquals((await upload(server, "raw", VALID)).status, 201);
    const probes: [string, string | Uint8Array][] = [
      ["CR inside a header value", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n"],
      ["LF inside a header value", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\nb c\r\n\r\n"],
      ["NUL inside a header value", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n"],
      ["space before the colon", "GET /healthz HTTP/1.1\r\nHost : x\r\n\r\n"],
      [
        "CR/LF injected into Authorization",
        `GET /api/v1/keys/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.apiKey}\rX-Org: other\r\n\r\n`,
      ],
      [
        "a 100 kB header",
        `GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: ${"a".repeat(100_000)}\r\n\r\n`,
      ],
      [
        "a 1 MB header",
        `GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: ${"a".repeat(1_000_000)}\r\n\r\n`,
      ],
      [
        "10 000 headers",
        `GET /healthz HTTP/1.1\r\nHost: x\r\n${
          Array.from({ length: 10_000 }, (_, i) => `X-${i}: a\r\n`).join("")
        }\r\n`,
      ],
      [
        "a 100 kB request target",
        `GET /healthz?${"a".repeat(100_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
      ],
      ["TLS bytes on the plain port", new Uint8Array([0x16, 3, 1, 2, 0, 1, 0, 1, 0xfc, 3, 3])],
      ["random bytes", new Rng(7).bytes(2048)],
      ["an unknown HTTP version", "GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n"],
      ["a bad chunk size", `${up}Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n`],
      [
        "Content-Length and Transfer-Encoding",
        `${up}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
      ],
      ["two Content-Lengths", `${up}Content-Length: 5\r\nContent-Length: 6\r\n\r\nabcdef`],
      ["a negative Content-Length", `${up}Content-Length: -5\r\n\r\n`],
      ["a non-numeric Content-Length", `${up}Content-Length: 1e3\r\n\r\n`],
      [
        "a chunk longer than announced",
        `${up}Transfer-Encoding: chunked\r\n\r\n3\r\nuser_id,variant\r\n0\r\n\r\n`,
      ],
    ];
    for (const [what, request] of probes) {
      const result = await rawExchange(port, request, 3_000);
      assert(
        (result.status !== null && result.status >= 400 && result.status < 500) ||
          (result.status === null && result.closed),
        `${what}: ${result.status} closed=${result.closed} timedOut=${result.timedOut} ${result.head}`,
      );
      await healthy(server.url);
    }
    const stored = await server.service.store.get(`org/${server.orgId}/experiments/raw/latest.csv`);
    assertSameBytes(new Uint8Array(await new Response(stored!.body).arrayBuffer()), VALID);
    await waitFor(async () => (await tmpFiles(server.dataDir)).length === 0, "no temporaries");
  } finally {
    await server.close();
  }
});

driverTest(
  "bad percent-encoding and repeated parameters answer 4xx JSON, never 5xx",
  async (server) => {
    assertEquals((await upload(server, "keep", VALID)).status, 201);
    for (
      const raw of [
        "%E0%A4%A",
        "%zz",
        "%",
        "%00",
        "%2F",
        "a%20b",
        "%2e%2e",
        "..%2F..%2Fx",
        "%C0%AE%C0%AE",
        "%ED%A0%80",
        "x%0D%0AX-Injected:%201",
        "keep&experiment_id=keep",
        "",
      ]
    ) {
      const res = await fetch(`${server.api}/datasets/upload/?experiment_id=${raw}`, {
        method: "POST",
        headers: { authorization: `Bearer ${server.apiKey}` },
        body: VALID,
      });
      await assertApiError(res, 400, "invalid_experiment_id");
    }
    const bare = await fetch(`${server.api}/datasets/upload/?experiment_id`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.apiKey}` },
      body: VALID,
    });
    await assertApiError(bare, 400, "invalid_experiment_id");
    // Path segments that do not decode, or decode to something that is no experiment_id.
    for (const segment of ["%E0%A4%A", "%zz", "%", "%2F", "..%2F..%2Fx", "%2e%2e%2f", "a%00b"]) {
      for (
        const [method, suffix] of [
          ["GET", ""],
          ["DELETE", ""],
          ["GET", "file/"],
          ["GET", "analysis/"],
          ["GET", "settings/"],
          ["PUT", "settings/"],
        ]
      ) {
        const res = await authed(server, server.apiKey, `/datasets/${segment}/${suffix}`, {
          method,
          body: method === "PUT" ? "{}" : undefined,
        });
        const { text, json } = await readJson(res);
        assert(
          (res.status === 400 || res.status === 404) && errorCode(json) !== undefined,
          `${method} /datasets/${segment}/${suffix}: ${res.status} ${text}`,
        );
      }
    }
    assertSameBytes(await server.stored(server.orgId, "keep"), VALID);
    // An invalid list cursor is the caller's mistake on both drivers.
    for (const cursor of ["garbage", "%ff%fe", "a".repeat(5000), "org%2F..%2F.."]) {
      const res = await authed(server, server.apiKey, `/datasets/?cursor=${cursor}`);
      const { text } = await readJson(res);
      assert(res.status === 200 || res.status === 400, `cursor ${cursor.slice(0, 20)}: ${text}`);
    }
    for (const limit of ["0", "-1", "1001", "1.5", "%zz", "1e3x", "NaN"]) {
      await assertApiError(
        await authed(server, server.apiKey, `/datasets/?limit=${limit}`),
        400,
        "invalid_json",
      );
    }
  },
);

driverTest(
  "odd JSON bodies for initiate and settings answer 4xx JSON, never 5xx",
  async (server) => {
    const rng = new Rng(99);
    const bodies: (string | Uint8Array)[] = [
      "",
      "null",
      "1",
      '"x"',
      "[]",
      "{",
      '{"experiment_id": "a", }',
      '{"experiment_id": "a"}'.padEnd(20_000, " "),
      "[".repeat(5000) + "]".repeat(5000),
      '{"a":'.repeat(3000) + "1" + "}".repeat(3000),
      '{"__proto__": {"experiment_id": "x"}}',
      '{"constructor": {"prototype": {"experiment_id": "x"}}}',
      '{"experiment_id": ["a"]}',
      '{"experiment_id": {"toString": "a"}}',
      '{"experiment_id": "a", "size_bytes": -1}',
      '{"experiment_id": "a", "size_bytes": 1e400}',
      '{"experiment_id": "a", "size_bytes": 1.5}',
      '{"experiment_id": "a", "size_bytes": "10"}',
      '{"experiment_id": "a\\u0000b"}',
      '{"experiment_id": "\\ud800"}',
      new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]),
      new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode('{"experiment_id": "a"}')]),
    ];
    for (let i = 0; i < 30; i++) bodies.push(rng.bytes(rng.range(1, 300)));
    const settings: string[] = [
      '{"mde": "0.05"}',
      '{"mde": 1e400}',
      '{"alpha": -1}',
      '{"power": 2}',
      '{"expected_split": {"__proto__": 1}}',
      '{"expected_split": {"A": 0.5, "B": 0.5, "C": "x"}}',
      '{"expected_split": []}',
      '{"metric_kinds": {"m": "binary"}}',
      '{"metric_kinds": []}',
      '{"target_users_per_variant": 1e308}',
      '{"target_users_per_variant": -5}',
      '{"key_metric": ""}',
      '{"control": 42}',
      '{"unknown_field": 1}',
      '{"__proto__": {"mde": 0.5}}',
    ];
    for (const body of bodies) {
      const res = await authed(server, server.apiKey, "/datasets/initiate/", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: body as BodyInit,
      });
      const { text, json } = await readJson(res);
      assert(
        (res.status === 200 && typeof (json as { upload_url?: string }).upload_url === "string") ||
          ((res.status === 400 || res.status === 413) && errorCode(json) !== undefined),
        `initiate ${String(body).slice(0, 40)}: ${res.status} ${text.slice(0, 200)}`,
      );
    }
    for (const body of [...bodies, ...settings]) {
      const res = await authed(server, server.apiKey, "/datasets/exp/settings/", {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: body as BodyInit,
      });
      const { text, json } = await readJson(res);
      assert(
        res.status === 200 ||
          ((res.status === 400 || res.status === 413) && errorCode(json) !== undefined),
        `settings ${String(body).slice(0, 40)}: ${res.status} ${text.slice(0, 200)}`,
      );
    }
    const health = await fetch(`${server.url}/healthz`);
    assertEquals(health.status, 200);
    await health.body?.cancel();
  },
);

/** A concrete path for a route pattern. */
function pathFor(pattern: string): string {
  return pattern
    .replace(":experiment_id", "exp1")
    .replace(":file", "app.js")
    .replace("*key", "org/o/experiments/e/latest.csv");
}

Deno.test("every route answers a wrong method with 405 JSON and the right Allow header", async () => {
  const server = await startTestServer();
  try {
    const allowed = new Map<string, Set<string>>();
    for (const table of [healthRoutes, ...apiRoutes]) {
      for (const { method, path: pattern } of table) {
        const set = allowed.get(pattern) ?? new Set<string>();
        set.add(method);
        if (method === "GET") set.add("HEAD");
        allowed.set(pattern, set);
      }
    }
    assert(allowed.size >= 10, `only ${allowed.size} routes found`);
    let checked = 0;
    for (const [pattern, methods] of allowed) {
      const allow = [...methods].sort().join(", ");
      for (const method of ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "FROB"]) {
        if (methods.has(method)) continue;
        const res = await fetch(`${server.url}${pathFor(pattern)}`, {
          method,
          headers: { authorization: `Bearer ${server.apiKey}` },
        });
        assertEquals(res.status, 405, `${method} ${pattern}`);
        assertEquals(res.headers.get("allow"), allow, `${method} ${pattern}`);
        if (method === "HEAD") await res.body?.cancel();
        else await assertApiError(res, 405, "method_not_allowed");
        checked++;
      }
    }
    assert(checked > 50, `${checked} checks`);
    // Unknown paths answer 404 JSON, with or without a key.
    for (
      const path of [
        "/nope",
        "/api",
        "/api/v1",
        "/api/v2/datasets/",
        "/api/v1/nope/",
        "/api/v1/datasets/a/b/c/d/",
        "/api/v1/datasets/exp1/file/extra/",
        "/healthz/extra",
        "/ui/",
        "/ui/../../main.ts",
        "/ui/%2e%2e%2fmain.ts",
        "/ui/app.exe",
        "/storage",
        "/.env",
      ]
    ) {
      const res = await fetch(`${server.url}${path}`, {
        headers: { authorization: `Bearer ${server.apiKey}` },
      });
      await assertApiError(res, 404, "not_found");
    }
    // Methods outside the known set do not grow the metrics registry.
    for (const method of ["FROB", "X-CUSTOM", "BREW"]) {
      const res = await fetch(`${server.url}/healthz`, { method });
      await res.body?.cancel();
    }
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    assertEquals(
      /FROB|X-CUSTOM|BREW/.test(metrics),
      false,
      "a client-chosen method became a label",
    );
  } finally {
    await server.close();
  }
});

Deno.test("HEAD on a dataset's file does not hold its file open", async () => {
  const server = await startTestServer();
  try {
    assertEquals((await upload(server, "h", VALID)).status, 201);
    const fds = () => [...Deno.readDirSync("/proc/self/fd")].length;
    const before = fds();
    for (let i = 0; i < 200; i++) {
      const res = await authed(server, server.apiKey, "/datasets/h/file/", { method: "HEAD" });
      assertEquals(res.status, 200);
      assertEquals(res.headers.get("content-length"), String(VALID.length));
      await res.body?.cancel();
    }
    const after = fds();
    assert(after - before < 50, `${after - before} descriptors more after 200 HEAD requests`);
  } finally {
    await server.close();
  }
});
