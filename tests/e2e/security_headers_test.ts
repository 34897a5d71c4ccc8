/**
 * The security headers of every answer, on the real server and both drivers: `nosniff` and
 * `no-store` (errors and 404s included; the UI's files keep their own caching), and HSTS only
 * when the service serves TLS itself.
 */
import { assertEquals } from "../_assert.ts";
import { driverTest } from "../_drivers.ts";
import type { DriverServer } from "../_drivers.ts";
import { startTestServer } from "../_server.ts";

const VALID = await Deno.readFile(new URL("../testdata/small.csv", import.meta.url));

function call(server: DriverServer, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${server.api}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${server.apiKey}`, ...init.headers },
  });
}

const post = (body: Uint8Array<ArrayBuffer>): RequestInit => ({ method: "POST", body });

driverTest(
  "every answer carries nosniff and no-store (errors and 404s too); the UI's files keep their caching",
  async (server) => {
    const answers: [string, Response][] = [
      ["200 healthz", await fetch(`${server.url}/healthz`)],
      ["200 list", await call(server, "/datasets/")],
      ["201 upload", await call(server, "/datasets/upload/?experiment_id=a", post(VALID))],
      ["200 file", await call(server, "/datasets/a/file/")],
      ["401", await fetch(`${server.api}/datasets/`)],
      ["404", await fetch(`${server.url}/no/such/path`)],
      ["404 dataset", await call(server, "/datasets/missing/")],
      ["405", await fetch(`${server.api}/datasets/upload/`)],
      ["413", await call(server, "/datasets/upload/?experiment_id=b", post(new Uint8Array(2048)))],
      ["metrics", await fetch(`${server.url}/metrics`)],
    ];
    const statuses = answers.map(([, res]) => res.status);
    assertEquals(statuses, [200, 200, 201, 200, 401, 404, 404, 405, 413, 200]);
    for (const [name, res] of answers) {
      await res.body?.cancel();
      assertEquals(res.headers.get("x-content-type-options"), "nosniff", name);
      assertEquals(res.headers.get("cache-control"), "no-store", name);
      // This service does not serve TLS itself: HSTS is the TLS proxy's to send.
      assertEquals(res.headers.get("strict-transport-security"), null, name);
    }
    const page = await fetch(`${server.url}/`);
    await page.body?.cancel();
    assertEquals(page.headers.get("cache-control"), "no-cache");
    assertEquals(page.headers.get("x-content-type-options"), "nosniff");
  },
  { ABN_MAX_UPLOAD_BYTES: "1024" },
);

Deno.test("a service serving TLS itself answers Strict-Transport-Security on every answer", async () => {
  // The certificate files are read when serving starts, not by the application.
  const server = await startTestServer({
    ABN_TLS_CERT: "/nonexistent/cert.pem",
    ABN_TLS_KEY: "/nonexistent/key.pem",
  });
  try {
    for (const path of ["/healthz", "/api/v1/datasets/", "/nowhere", "/"]) {
      const res = await server.service.handler(new Request(`https://127.0.0.1${path}`));
      await res.body?.cancel();
      assertEquals(res.headers.get("strict-transport-security"), "max-age=31536000", path);
      assertEquals(res.headers.get("x-content-type-options"), "nosniff", path);
    }
  } finally {
    await server.close();
  }
});
