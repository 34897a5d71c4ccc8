import assert from "node:assert/strict";
import { startTestServer } from "../_server.ts";
import { CONTENT_SECURITY_POLICY } from "../../src/routes/ui.ts";
import { EVENT_TYPES } from "../../src/webhooks/events.ts";

const UI_DIR = new URL("../../src/ui/", import.meta.url);
const MODULES = [...Deno.readDirSync(UI_DIR)].map((e) => e.name).filter((n) => n.endsWith(".js"))
  .sort();

Deno.test("uiRoutes serve the page at / with a strict policy and revalidation", async () => {
  const server = await startTestServer();
  try {
    const res = await fetch(`${server.url}/`);
    const html = await res.text();
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "text/html; charset=utf-8");
    assert.equal(res.headers.get("content-security-policy"), CONTENT_SECURITY_POLICY);
    assert.match(CONTENT_SECURITY_POLICY, /default-src 'self'/);
    assert.doesNotMatch(CONTENT_SECURITY_POLICY, /unsafe|https?:/);
    assert.equal(res.headers.get("cache-control"), "no-cache");
    assert.equal(res.headers.get("x-content-type-options"), "nosniff");
    assert.ok(html.includes('<script type="module" src="/ui/main.js">'));
    // Every asset comes from the service itself: no absolute URL to anywhere else.
    assert.doesNotMatch(html, /(src|href)="(https?:)?\/\//);

    const etag = res.headers.get("etag");
    assert.ok(etag);
    const again = await fetch(`${server.url}/`, { headers: { "if-none-match": etag } });
    assert.equal(again.status, 304);
    assert.equal(await again.text(), "");

    const head = await fetch(`${server.url}/`, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), "");
  } finally {
    await server.close();
  }
});

Deno.test("uiRoutes serve each asset with its content type and refuse other names", async () => {
  const server = await startTestServer();
  try {
    assert.ok(MODULES.includes("main.js"));
    for (const name of MODULES) {
      const res = await fetch(`${server.url}/ui/${name}`);
      const body = await res.text();
      assert.equal(res.status, 200, name);
      assert.equal(res.headers.get("content-type"), "text/javascript; charset=utf-8", name);
      // Imports stay on the same origin, relative to the module.
      for (const [, spec] of body.matchAll(/from "([^"]+)"/g)) {
        assert.match(spec, /^\.\/[a-z_]+\.js$/);
      }
      // Data goes into the page as text, never as HTML.
      assert.doesNotMatch(body, /innerHTML|outerHTML|insertAdjacentHTML|document\.write/, name);
    }
    const css = await fetch(`${server.url}/ui/style.css`);
    assert.equal(css.headers.get("content-type"), "text/css; charset=utf-8");
    assert.doesNotMatch(await css.text(), /@import|url\(\s*["']?(https?:)?\/\//);
    const icon = await fetch(`${server.url}/ui/favicon.svg`);
    assert.equal(icon.headers.get("content-type"), "image/svg+xml");
    await icon.body?.cancel();

    // The event names the webhooks page offers are the service's own list.
    const events = await fetch(`${server.url}/ui/event_types.json`);
    assert.equal(events.headers.get("content-type"), "application/json; charset=utf-8");
    assert.deepEqual(await events.json(), [...EVENT_TYPES]);
    assert.ok(events.headers.get("etag"));

    for (
      const path of ["/ui/missing.js", "/ui/..%2Fapp.ts", "/ui/Main.js", "/ui/main.ts", "/ui/"]
    ) {
      const res = await fetch(`${server.url}${path}`);
      assert.equal(res.status, 404, path);
      assert.equal((await res.json()).error.code, "not_found", path);
    }
  } finally {
    await server.close();
  }
});
