import { createHash } from "node:crypto";
import { assert, assertEquals, assertMatch, assertRejects } from "../_assert.ts";
import type { Driver, DriverServer } from "../_drivers.ts";
import { DRIVERS, startDriverServer } from "../_drivers.ts";
import { runMain, startTestServer } from "../_server.ts";
import { s3Env } from "../_s3rver.ts";
import type { TestServer } from "../_server.ts";
import type { UploadIo } from "../../src/cli/upload_client.ts";
import {
  runUpload,
  UPLOAD_USAGE,
  uploadDataset,
  UploadFailed,
} from "../../src/cli/upload_client.ts";

const SMALL = await Deno.readFile(new URL("../testdata/small.csv", import.meta.url));
const INVALID = new TextEncoder().encode("user_id,variant,date,converted\nu1,A,2026-01-01\n");

/** A valid CSV of about `bytes` bytes: several read chunks, several progress steps. */
function generatedCsv(bytes: number): Uint8Array {
  const lines = ["user_id,variant,date,converted,revenue"];
  let size = lines[0].length + 1;
  for (let i = 0; size < bytes; i++) {
    const line = `u${i},${i % 2 ? "B" : "A"},2026-01-0${1 + (i % 9)},${i % 3 === 0 ? 1 : 0},${
      i % 50
    }.25`;
    lines.push(line);
    size += line.length + 1;
  }
  return new TextEncoder().encode(lines.join("\n") + "\n");
}

const LARGE = generatedCsv(3 * 1024 * 1024);

function today(offsetMs = 0): string {
  return new Date(Date.now() + offsetMs).toISOString().slice(0, 10).replaceAll("-", "");
}

interface Fault {
  /** `METHOD /path` of every request the proxy saw, in order. */
  seen: string[];
  url: string;
  close(): Promise<void>;
}

/**
 * A loopback proxy in front of the service: answers the requests `fail` picks with its own
 * response (draining the body first) and forwards all others.
 */
function faultProxy(target: string, fail: (seen: string, n: number) => Response | null): Fault {
  const seen: string[] = [];
  const controller = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: controller.signal, onListen: () => {} },
    async (req) => {
      const url = new URL(req.url);
      const line = `${req.method} ${url.pathname}`;
      seen.push(line);
      const injected = fail(line, seen.filter((s) => s === line).length);
      if (injected) {
        await req.arrayBuffer();
        return injected;
      }
      const headers = new Headers(req.headers);
      headers.delete("host");
      headers.delete("content-length");
      const res = await fetch(`${target}${url.pathname}${url.search}`, {
        method: req.method,
        headers,
        body: req.body,
      });
      return new Response(res.body, { status: res.status, headers: res.headers });
    },
  );
  return {
    seen,
    url: `http://127.0.0.1:${server.addr.port}`,
    async close() {
      controller.abort();
      await server.finished;
    },
  };
}

function errorJson(status: number, code: string, headers: Record<string, string> = {}): Response {
  return Response.json(
    { error: { code, message: `injected ${code}`, request_id: "proxy" } },
    { status, headers },
  );
}

/** Runs `main.ts upload …` and checks the key appears in no output. */
async function runClient(server: TestServer, args: string[], env: Record<string, string> = {}) {
  const result = await runMain(["upload", ...args], {
    ABN_API_KEY: server.apiKey,
    ABN_PUBLIC_URL: server.url,
    ...env,
  });
  assert(!result.stdout.includes(server.apiKey), `key in stdout:\n${result.stdout}`);
  assert(!result.stderr.includes(server.apiKey), `key in stderr:\n${result.stderr}`);
  return result;
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function quietIo(lines: string[]): UploadIo {
  return {
    out: (l) => lines.push(l),
    err: (l) => lines.push(l),
    progress: () => {},
    terminal: false,
    now: () => new Date("2026-03-04T23:59:59Z"),
  };
}

Deno.test("runUpload answers 2 with the usage for a bad command line, before any request", async () => {
  const config = { publicUrl: "http://127.0.0.1:9" };
  const cases: [string[], Record<string, string>, RegExp][] = [
    [[], { ABN_API_KEY: "abn_x" }, /Missing FILE/],
    [["a.csv"], { ABN_API_KEY: "abn_x" }, /Missing --experiment-id/],
    [["a.csv", "--experiment-id", "e", "--bogus"], { ABN_API_KEY: "abn_x" }, /Unknown option/],
    [["/nonexistent/a.csv", "--experiment-id", "e"], { ABN_API_KEY: "abn_x" }, /Cannot read/],
    [["main.ts", "--experiment-id", "e"], {}, /No API key/],
    [
      ["main.ts", "--experiment-id=e", "--url", "http://h/api/v1"],
      { ABN_API_KEY: "k" },
      /without \/api\/v1/,
    ],
    [["main.ts", "--experiment-id=e", "--url", "ftp://h"], { ABN_API_KEY: "k" }, /http\(s\) URL/],
  ];
  for (const [args, env, pattern] of cases) {
    const lines: string[] = [];
    assertEquals(await runUpload(args, config, env, quietIo(lines)), 2, args.join(" "));
    assertMatch(lines.join("\n"), pattern);
    assertMatch(lines.join("\n"), /usage: main\.ts upload FILE/);
  }
  const help: string[] = [];
  assertEquals(await runUpload(["--help"], config, {}, quietIo(help)), 0);
  assertEquals(help, [UPLOAD_USAGE]);
  // The operations guide shows the same text.
  const guide = await Deno.readTextFile(new URL("../../docs/operations.md", import.meta.url));
  assert(guide.includes(UPLOAD_USAGE), "docs/operations.md shows an outdated upload usage");
});

Deno.test("runUpload reports an unreachable service as a failure (exit 1) after its retries", async () => {
  const lines: string[] = [];
  const code = await runUpload(
    ["main.ts", "--experiment-id", "e", "--url", "http://127.0.0.1:9", "--retries", "2"],
    { publicUrl: "http://unused" },
    { ABN_API_KEY: "abn_secret_value", ABN_UPLOAD_RETRY_BASE_MS: "1" },
    quietIo(lines),
  );
  assertEquals(code, 1);
  const text = lines.join("\n");
  assertMatch(text, /network error/);
  assertMatch(text, /error: upload gave up after 3 attempt\(s\): network error/);
  assertEquals(text.match(/retrying in/g)?.length, 2);
  assert(!text.includes("abn_secret_value"));
});

for (const driver of DRIVERS) {
  Deno.test(`main.ts upload and uploadDataset deliver, refuse and retry against the server (${driver})`, async (t) => {
    const server = await startDriverServer(driver);
    const dir = await Deno.makeTempDir({ prefix: "abn-upload-client-" });
    const small = `${dir}/small.csv`;
    const large = `${dir}/large.csv`;
    const invalid = `${dir}/invalid.csv`;
    await Deno.writeFile(small, SMALL);
    await Deno.writeFile(large, LARGE);
    await Deno.writeFile(invalid, INVALID);
    try {
      await t.step(
        "a direct upload stores the exact bytes and prints size and sha256",
        async () => {
          const r = await runClient(server, [large, "--experiment-id", "cli-direct"]);
          assertEquals(r.code, 0, r.stderr);
          assertEquals(await server.stored(server.orgId, "cli-direct"), LARGE);
          assertMatch(r.stdout, /experiment_id: cli-direct/);
          assertMatch(r.stdout, new RegExp(`size: ${LARGE.length} bytes`));
          assertMatch(r.stdout, new RegExp(`sha256: ${sha256(LARGE)}`));
          // Not a terminal: plain progress lines, ending at 100 %.
          assertMatch(r.stderr, /upload: +\d+%/);
          assertMatch(r.stderr, /upload: 100%/);
        },
      );

      await t.step("--two-step stores the exact bytes through the upload URL", async () => {
        const r = await runClient(server, [
          large,
          "--experiment-id=cli-two",
          "--two-step",
          "--json",
        ]);
        assertEquals(r.code, 0, r.stderr);
        assertEquals(await server.stored(server.orgId, "cli-two"), LARGE);
        const answer = JSON.parse(r.stdout);
        assertEquals(answer.experiment_id, "cli-two");
        assertEquals(answer.route, "two_step");
        assertEquals(answer.size_bytes, LARGE.length);
        assertEquals(answer.key, `org/${server.orgId}/experiments/cli-two/latest.csv`);
        assertEquals(answer.upload_url, undefined);
      });

      await t.step("a 400 prints the server's code and message and exits 1", async () => {
        // The key given as a flag is kept out of the output too.
        const r = await runClient(server, [
          invalid,
          "--experiment-id",
          "cli-bad",
          "--key",
          server.apiKey,
        ], {
          ABN_API_KEY: "",
        });
        assertEquals(r.code, 1, r.stderr);
        assertMatch(r.stderr, /HTTP 400 invalid_csv: .*line 2/);
        assertMatch(r.stderr, /request id [0-9a-f-]{36}/);
        assertEquals(await server.stored(server.orgId, "cli-bad"), null);
        const unknown = await runClient(server, [small, "--experiment-id", "bad id"]);
        assertEquals(unknown.code, 1);
        assertMatch(unknown.stderr, /invalid_experiment_id/);
        const wrongKey = await runClient(server, [
          small,
          "--experiment-id",
          "x",
          "--key",
          "abn_wrong",
        ]);
        assertEquals(wrongKey.code, 1);
        assertMatch(wrongKey.stderr, /HTTP 401 unauthorized/);
        assert(!wrongKey.stderr.includes("abn_wrong"), wrongKey.stderr);
        // With --json the refusal is printed as JSON on standard output too.
        const asJson = await runClient(server, [invalid, "--experiment-id", "cli-bad", "--json"]);
        assertEquals(asJson.code, 1, asJson.stderr);
        const { error } = JSON.parse(asJson.stdout);
        assertEquals([error.status, error.code], [400, "invalid_csv"]);
        assertMatch(error.message, /line 2/);
        assertMatch(error.request_id, /^[0-9a-f-]{36}$/);
      });

      await t.step("--history appends today's UTC date as _YYYYMMDD", async () => {
        const before = today();
        const r = await runClient(server, [
          small,
          "--experiment-id",
          "nightly",
          "--history",
          "--json",
        ]);
        assertEquals(r.code, 0, r.stderr);
        const id = JSON.parse(r.stdout).experiment_id;
        assert(id === `nightly_${before}` || id === `nightly_${today()}`, id);
        assertEquals(await server.stored(server.orgId, id), SMALL);
      });

      await t.step("uploadDataset retries a 500 on the direct route and succeeds", async () => {
        const proxy = faultProxy(
          server.url,
          (line, n) =>
            line.startsWith("POST /api/v1/datasets/upload") && n === 1
              ? errorJson(500, "storage_error")
              : null,
        );
        const notices: string[] = [];
        try {
          const result = await uploadDataset({
            file: large,
            experimentId: "retried",
            baseUrl: proxy.url,
            apiKey: server.apiKey,
            retry: { baseMs: 5 },
            log: (l) => notices.push(l),
          });
          assertEquals(result.sizeBytes, LARGE.length);
          assertEquals(result.answer.sha256, sha256(LARGE));
        } finally {
          await proxy.close();
        }
        assertEquals(
          proxy.seen.filter((s) => s.startsWith("POST /api/v1/datasets/upload")).length,
          2,
        );
        assertMatch(
          notices.join("\n"),
          /HTTP 500 storage_error: injected storage_error; retrying in/,
        );
        assertEquals(await server.stored(server.orgId, "retried"), LARGE);
      });

      await t.step(
        "uploadDataset retries an initiate 503 and a 429 on the two-step route",
        async () => {
          const proxy = faultProxy(server.url, (line, n) => {
            if (!line.startsWith("POST /api/v1/datasets/initiate")) return null;
            if (n === 1) return errorJson(503, "service_unavailable");
            if (n === 2) return errorJson(429, "rate_limited", { "retry-after": "0" });
            return null;
          });
          const notices: string[] = [];
          try {
            const result = await uploadDataset({
              file: small,
              experimentId: "retried-two",
              baseUrl: proxy.url,
              apiKey: server.apiKey,
              twoStep: true,
              retry: { baseMs: 5 },
              log: (l) => notices.push(l),
            });
            assertEquals(result.route, "two_step");
          } finally {
            await proxy.close();
          }
          assertEquals(
            proxy.seen.filter((s) => s.startsWith("POST /api/v1/datasets/initiate")).length,
            3,
          );
          assertMatch(notices.join("\n"), /HTTP 429 rate_limited.*retrying in 0\.0 s/);
          assertEquals(await server.stored(server.orgId, "retried-two"), SMALL);
        },
      );

      await t.step("uploadDataset never retries a 4xx", async () => {
        const proxy = faultProxy(server.url, () => null);
        try {
          const error = await assertRejects(
            () =>
              uploadDataset({
                file: invalid,
                experimentId: "refused",
                baseUrl: proxy.url,
                apiKey: server.apiKey,
                retry: { baseMs: 5 },
              }),
            UploadFailed,
            "invalid_csv",
          );
          assertEquals(error.status, 400);
          assertEquals(error.code, "invalid_csv");
        } finally {
          await proxy.close();
        }
        assertEquals(proxy.seen.length, 1);
      });

      await t.step(
        "uploadDataset fetches a fresh upload URL after the PUT's 403 (expired)",
        async () => {
          await expiredUrlIsRefreshed(driver, server, small);
        },
      );
    } finally {
      await server.close();
      await Deno.remove(dir, { recursive: true });
    }
  });
}

/** A second server on the same storage with 1-second upload URLs; the first PUT waits them out. */
async function expiredUrlIsRefreshed(driver: Driver, main: DriverServer, file: string) {
  const s3 = main.s3;
  const storageEnv: Record<string, string> = driver === "s3" && s3 ? s3Env(s3) : {};
  const server = await startTestServer({ ...storageEnv, ABN_PRESIGN_TTL_SECONDS: "1" });
  const notices: string[] = [];
  const waits: number[] = [];
  try {
    const result = await uploadDataset({
      file,
      experimentId: "refreshed",
      baseUrl: server.url,
      apiKey: server.apiKey,
      twoStep: true,
      retry: { baseMs: 5 },
      log: (l) => notices.push(l),
      async beforePut(refreshes) {
        waits.push(refreshes);
        // Local URLs live until the end of their expiry second: wait past two seconds.
        if (refreshes === 0) await new Promise((r) => setTimeout(r, 2200));
      },
    });
    assertEquals(result.route, "two_step");
    assert(waits.length >= 2, `PUT attempts: ${waits.length}`);
    assertMatch(notices[0], /PUT: HTTP 403 .*fetching a fresh upload URL/);
    const stored = await server.service.store.get(
      `org/${server.orgId}/experiments/refreshed/latest.csv`,
    );
    assert(stored);
    assertEquals(new Uint8Array(await new Response(stored.body).arrayBuffer()), SMALL);
  } finally {
    await server.close();
  }
}

Deno.test("uploadDataset reports a 413 and an org_deactivated 403 at once, without retrying", async () => {
  const server = await startTestServer({ ABN_MAX_UPLOAD_BYTES: "65536" });
  const dir = await Deno.makeTempDir({ prefix: "abn-upload-client-" });
  const file = `${dir}/large.csv`;
  await Deno.writeFile(file, LARGE);
  const proxy = faultProxy(server.url, () => null);
  const notices: string[] = [];
  try {
    const error = await assertRejects(
      () =>
        uploadDataset({
          file,
          experimentId: "too-big",
          baseUrl: server.url,
          apiKey: server.apiKey,
          retry: { baseMs: 5 },
          log: (l) => notices.push(l),
        }),
      UploadFailed,
      "payload_too_large",
    );
    assertEquals(error.status, 413);
    assertEquals(notices, []);
    // A deactivated organization: initiate answers 403 once, no URL refresh loop.
    await server.service.db.orgs.setActive(server.orgId, false);
    // Admin changes reach the running server within one second.
    await new Promise((r) => setTimeout(r, 600));
    const refused = await assertRejects(
      () =>
        uploadDataset({
          file,
          experimentId: "inactive",
          baseUrl: proxy.url,
          apiKey: server.apiKey,
          twoStep: true,
          retry: { baseMs: 5 },
        }),
      UploadFailed,
      "org_deactivated",
    );
    assertEquals(refused.status, 403);
    assertEquals(proxy.seen, ["POST /api/v1/datasets/initiate/"]);
  } finally {
    await proxy.close();
    await server.close();
    await Deno.remove(dir, { recursive: true });
  }
});
