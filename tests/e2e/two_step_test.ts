import { assert, assertApiError, assertEquals } from "../_assert.ts";
import { driverTest, driverTestWithRgw, rgwTest } from "../_drivers.ts";
import type { DriverServer } from "../_drivers.ts";

const VALID = await Deno.readFile(new URL("../testdata/small.csv", import.meta.url));

function initiate(server: DriverServer, body: unknown, apiKey = server.apiKey): Promise<Response> {
  return fetch(`${server.api}/datasets/initiate/`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

async function grant(
  server: DriverServer,
  experimentId: string,
  extra: Record<string, unknown> = {},
) {
  const res = await initiate(server, { experiment_id: experimentId, ...extra });
  const text = await res.text();
  assertEquals(res.status, 200, text);
  return JSON.parse(text);
}

function put(url: string, body: BodyInit): Promise<Response> {
  return fetch(url, { method: "PUT", headers: { "content-type": "text/csv" }, body });
}

async function waitFor<T>(
  fn: () => Promise<T | null | undefined | false>,
  ms = 10_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const value = await fn();
    if (value) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("timed out waiting");
}

driverTestWithRgw(
  "initiate answers the upload grant and the PUT stores the file at the key",
  async (server) => {
    const g = await grant(server, "exp-2s");
    assertEquals(g.experiment_id, "exp-2s");
    assertEquals(g.key, `org/${server.orgId}/experiments/exp-2s/latest.csv`);
    assertEquals(g.expires_in, 900);
    assertEquals(g.bucket, server.s3 ? server.s3.bucket : "local");
    assertEquals(typeof g.upload_url, "string");
    assertEquals(/x-amz-checksum/i.test(g.upload_url), false);
    const res = await put(g.upload_url, VALID);
    assertEquals(res.status, 200, await res.text());
    assertEquals(await server.stored(server.orgId, "exp-2s"), VALID);
    // The synchronised list shows it at once, and only to its organization.
    const list = await (await fetch(`${server.api}/datasets/`, {
      headers: { authorization: `Bearer ${server.apiKey}` },
    })).json();
    assertEquals(list.datasets.map((d: { experiment_id: string }) => d.experiment_id), ["exp-2s"]);
    assertEquals(list.datasets[0].size_bytes, VALID.length);
    const other = await server.newOrg("other");
    const theirs = await (await fetch(`${server.api}/datasets/`, {
      headers: { authorization: `Bearer ${other.apiKey}` },
    })).json();
    assertEquals(theirs.datasets, []);
    const one = await fetch(`${server.api}/datasets/exp-2s/`, {
      headers: { authorization: `Bearer ${server.apiKey}` },
    });
    assertEquals(one.status, 200);
    assertEquals((await one.json()).size_bytes, VALID.length);
    await assertApiError(
      await fetch(`${server.api}/datasets/exp-2s/`, {
        headers: { authorization: `Bearer ${other.apiKey}` },
      }),
      404,
      "not_found",
    );
  },
);

driverTestWithRgw("a two-step delivery is analysed without any further call", async (server) => {
  const g = await grant(server, "auto");
  assertEquals((await put(g.upload_url, VALID)).status, 200);
  const result = await waitFor(async () => {
    const res = await fetch(`${server.api}/datasets/auto/`, {
      headers: { authorization: `Bearer ${server.apiKey}` },
    });
    const body = await res.json();
    return body.analysis_status === "ready" ? body : null;
  });
  assertEquals(result.experiment_id, "auto");
}, { ABN_SCAN_INTERVAL_SECONDS: "1" });

driverTest("initiate refuses bad JSON and invalid experiment ids with 400", async (server) => {
  await assertApiError(await initiate(server, "{nope"), 400, "invalid_json");
  await assertApiError(await initiate(server, "[]"), 400, "invalid_json");
  await assertApiError(await initiate(server, {}), 400, "invalid_experiment_id");
  for (const id of ["with space", "a/b", "эксп", "x".repeat(129), "..", "a%2Fb", 42]) {
    await assertApiError(
      await initiate(server, { experiment_id: id }),
      400,
      "invalid_experiment_id",
    );
  }
  await assertApiError(
    await initiate(server, { experiment_id: "ok" }, "abn_bad"),
    401,
    "unauthorized",
  );
});

driverTestWithRgw("initiate answers 413 for a declared size over the limit", async (server) => {
  await assertApiError(
    await initiate(server, { experiment_id: "big", size_bytes: 1025 }),
    413,
    "payload_too_large",
  );
  const g = await grant(server, "fits", { size_bytes: VALID.length });
  assertEquals((await put(g.upload_url, VALID)).status, 200);
}, { ABN_MAX_UPLOAD_BYTES: "1024" });

driverTestWithRgw(
  "an expired upload URL answers 403 and leaves the file unchanged",
  async (server) => {
    // The first file comes by the direct route: a 1 s URL signed at hh:mm:ss.9 (X-Amz-Date has
    // whole seconds) has only 0.1 s left, which a busy machine missed.
    const first = await fetch(`${server.api}/datasets/upload/?experiment_id=exp`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "text/csv" },
      body: VALID,
    });
    assertEquals(first.status, 201, await first.text());
    const g = await grant(server, "exp");
    assertEquals(g.expires_in, 1);
    await new Promise((r) => setTimeout(r, 2200));
    const res = await put(
      g.upload_url,
      new TextEncoder().encode("user_id,variant,date,m\nq,A,2026-01-01,1\n"),
    );
    assertEquals(res.status, 403);
    await res.body?.cancel();
    assertEquals(await server.stored(server.orgId, "exp"), VALID);
  },
  { ABN_PRESIGN_TTL_SECONDS: "1" },
);

driverTestWithRgw(
  "an oversize two-step delivery answers 400 and is deleted by the timer",
  async (server) => {
    const g = await grant(server, "huge");
    const big = new Uint8Array(2000).fill(0x31);
    const res = await put(g.upload_url, big);
    if (server.driver === "local") {
      // The local host can see the bytes and refuses them at once.
      await assertApiError(res, 413, "payload_too_large");
      return;
    }
    assertEquals(res.status, 200);
    await assertApiError(
      await fetch(`${server.api}/datasets/huge/`, {
        headers: { authorization: `Bearer ${server.apiKey}` },
      }),
      400,
      "dataset_too_large",
    );
    await assertApiError(
      await fetch(`${server.api}/datasets/huge/analysis/`, {
        headers: { authorization: `Bearer ${server.apiKey}` },
      }),
      400,
      "dataset_too_large",
    );
    await waitFor(async () => (await server.stored(server.orgId, "huge")) === null, 10_000);
    await assertApiError(
      await fetch(`${server.api}/datasets/huge/`, {
        headers: { authorization: `Bearer ${server.apiKey}` },
      }),
      404,
      "not_found",
    );
  },
  { ABN_MAX_UPLOAD_BYTES: "1024", ABN_CLEANUP_INTERVAL_SECONDS: "1" },
);

// s3rver checks no signature: only a real store can show that an altered upload URL is refused.
rgwTest(
  "an upload URL altered to another key, a longer life, another type or another length is refused by the storage",
  async (server) => {
    const other = await server.newOrg("other");
    const g = await grant(server, "mine");
    const url = new URL(g.upload_url);
    const altered = (edit: (u: URL) => void) => {
      const copy = new URL(url);
      edit(copy);
      return copy.href;
    };
    const refused: [string, () => Promise<Response>][] = [
      [
        "another org",
        () =>
          put(altered((u) => u.pathname = u.pathname.replace(server.orgId, other.orgId)), VALID),
      ],
      [
        "another experiment",
        () => put(altered((u) => u.pathname = u.pathname.replace("/mine/", "/yours/")), VALID),
      ],
      [
        "a longer life",
        () => put(altered((u) => u.searchParams.set("X-Amz-Expires", "604800")), VALID),
      ],
      [
        "another type",
        () =>
          fetch(url, {
            method: "PUT",
            headers: { "content-type": "application/zip" },
            body: VALID,
          }),
      ],
    ];
    const sized = await grant(server, "sized", { size_bytes: VALID.length });
    refused.push(["another length", () => put(sized.upload_url, VALID.subarray(1))]);
    for (const [what, send] of refused) {
      const res = await send();
      const text = await res.text();
      assertEquals(res.status, 403, `${what}: ${text}`);
      assert(text.includes("<Code>SignatureDoesNotMatch</Code>"), `${what}: ${text}`);
    }
    assertEquals(await server.stored(other.orgId, "mine"), null);
    assertEquals(await server.stored(server.orgId, "yours"), null);
    assertEquals(await server.stored(server.orgId, "mine"), null);
    assertEquals(await server.stored(server.orgId, "sized"), null);
    assertEquals((await put(g.upload_url, VALID)).status, 200);
    assertEquals((await put(sized.upload_url, VALID)).status, 200);
    assertEquals(await server.stored(server.orgId, "mine"), VALID);
  },
);

Deno.test("a local upload URL altered to another key, expiry or method answers 403 and writes nothing", async () => {
  const { startDriverServer } = await import("../_drivers.ts");
  const server = await startDriverServer("local");
  try {
    const other = await server.newOrg("other");
    const g = await grant(server, "mine");
    const url = new URL(g.upload_url);
    const repointed = new URL(url);
    repointed.pathname = url.pathname.replace(server.orgId, other.orgId);
    await assertApiError(await put(repointed.href, VALID), 403, "invalid_signature");
    assertEquals(await server.stored(other.orgId, "mine"), null);
    const renamed = new URL(url);
    renamed.pathname = url.pathname.replace("/mine/", "/yours/");
    await assertApiError(await put(renamed.href, VALID), 403, "invalid_signature");
    const longer = new URL(url);
    longer.searchParams.set("expires", String(Number(url.searchParams.get("expires")) + 3600));
    await assertApiError(await put(longer.href, VALID), 403, "invalid_signature");
    const traversal =
      `${server.url}/storage/org/${server.orgId}/experiments/..%2F..%2Fx/latest.csv${url.search}`;
    const res = await put(traversal, VALID);
    assert(res.status === 403 || res.status === 404, String(res.status));
    await res.body?.cancel();
    const post = await fetch(url, { method: "POST", body: VALID });
    await assertApiError(post, 405, "method_not_allowed");
    assertEquals(post.headers.get("allow"), "PUT");
    assertEquals(await server.stored(server.orgId, "mine"), null);
    // A bound size refuses another length.
    const sized = await grant(server, "sized", { size_bytes: VALID.length });
    await assertApiError(await put(sized.upload_url, VALID.subarray(1)), 403, "invalid_signature");
    // Also sent chunked (no Content-Length), shorter or longer than bound.
    for (const body of [VALID.subarray(1), new Uint8Array([...VALID, 0x0a])]) {
      const chunked = ReadableStream.from([body.subarray(0, 10), body.subarray(10)]);
      await assertApiError(await put(sized.upload_url, chunked), 403, "invalid_signature");
    }
    assertEquals(await server.stored(server.orgId, "sized"), null);
    assertEquals((await put(sized.upload_url, VALID)).status, 200);
    // An organization deactivated since the grant cannot use it.
    const later = await grant(server, "later");
    await server.service.db.orgs.setActive(server.orgId, false);
    await assertApiError(await put(later.upload_url, VALID), 403, "org_deactivated");
  } finally {
    await server.close();
  }
});

Deno.test("a stored local PUT's request line times its steps; the checks run later, with the analysis", async () => {
  const { startDriverServer } = await import("../_drivers.ts");
  const lines: string[] = [];
  const server = await startDriverServer("local", {}, { log: (line) => lines.push(line) });
  try {
    const g = await grant(server, "timed", { size_bytes: VALID.length });
    const res = await put(g.upload_url, VALID);
    assertEquals(res.status, 200, await res.text());
    const refused = await put(g.upload_url, VALID.subarray(1));
    assertEquals(refused.status, 403, await refused.text());
    const puts = lines.map((l) => JSON.parse(l)).filter((l) => l.method === "PUT");
    assertEquals(puts.map((l) => l.status), [200, 403]);
    const [stored, other] = puts;
    const steps = [stored.receive_ms, stored.commit_ms, stored.record_ms];
    assert(steps.every((ms) => typeof ms === "number" && ms >= 0), JSON.stringify(stored));
    assert(steps.reduce((a, b) => a + b, 0) <= stored.duration_ms + 0.5, JSON.stringify(stored));
    assertEquals(stored.check_ms, undefined);
    assertEquals(other.receive_ms, undefined, JSON.stringify(other));
  } finally {
    await server.close();
  }
});
