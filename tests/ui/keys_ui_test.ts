/**
 * Information → API keys and Audit trail in a real headless Chromium against the real service:
 * an admin key creates (the secret shown once), rotates and revokes keys, and what the page did is
 * checked through the API with the keys it made; the last admin key is kept; the audit page lists
 * the changes newest first and filters them; a read-only key sees the list and its own scopes but
 * no controls, and stays signed in on the audit page; an upload-only key is told why it cannot
 * sign in.
 */
import assert from "node:assert/strict";
import { startTestServer } from "../_server.ts";
import type { TestServer } from "../_server.ts";
import { browserTest, launchBrowser, screenshot } from "../_browser.ts";
import type { Page } from "../_browser.ts";
import { generateCsv } from "../../bench/generate_csv.ts";

interface PageElement {
  value: string;
  hidden: boolean;
  textContent: string | null;
  checked: boolean;
  disabled: boolean;
}
declare const document: { querySelector(selector: string): PageElement | null };

function call(server: TestServer, key: string, path: string, init: RequestInit = {}) {
  return fetch(`${server.api}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${key}`, ...init.headers },
  });
}

function text(page: Page, selector: string): Promise<string> {
  return page.$eval(selector, (el) => (el.textContent ?? "").replace(/\s+/g, " ").trim());
}

async function waitForText(page: Page, selector: string, expected: string) {
  try {
    await page.waitForFunction(
      (sel: string, want: string) =>
        (document.querySelector(sel)?.textContent ?? "").replace(/\s+/g, " ").includes(want),
      { timeout: 15_000, polling: 100 },
      selector,
      expected,
    );
  } catch (error) {
    const seen = await text(page, selector).catch(() => "(no such element)");
    throw new Error(`${selector} never showed "${expected}"; it shows "${seen}"`, { cause: error });
  }
}

async function signIn(page: Page, key: string) {
  await page.waitForSelector("#signin-key", { visible: true });
  await page.$eval("#signin-key", (el) => (el as unknown as PageElement).value = "");
  await page.type("#signin-key", key);
  await page.click("#signin-submit");
}

/** The organization's keys as the API lists them, by name. */
async function keysByName(server: TestServer) {
  const res = await call(server, server.apiKey, "/keys/");
  assert.equal(res.status, 200);
  const body = await res.json();
  return new Map<string, Record<string, unknown>[]>(
    Object.entries(Object.groupBy(body.keys, (k: { name: string | null }) => k.name ?? "")) as [
      string,
      Record<string, unknown>[],
    ][],
  );
}

/** The secret the page shows once, after it appeared. */
async function shownSecret(page: Page, previous = ""): Promise<string> {
  await page.waitForFunction(
    (before: string) => {
      const secret = document.querySelector("#new-key-secret")?.textContent ?? "";
      return secret.startsWith("abn_") && secret !== before;
    },
    { timeout: 15_000, polling: 100 },
    previous,
  );
  return await text(page, "#new-key-secret");
}

/** The row of the active key named `name`, once the page shows it with its actions. */
async function activeRowOf(page: Page, server: TestServer, name: string): Promise<string> {
  const key = (await keysByName(server)).get(name)!.find((k) => k.status === "active")!;
  const row = `tr[data-key="${key.key_id}"]`;
  await page.waitForSelector(`${row} [data-action=revoke]`, { timeout: 15_000 });
  return row;
}

browserTest({
  name: "web UI: keys created, rotated and revoked from the page; the audit trail; scopes shown",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const server = await startTestServer();
    let browser: Awaited<ReturnType<typeof launchBrowser>> | null = null;
    try {
      const db = server.service.db;
      const reader = await db.keys.create(server.orgId, { name: "analyst", scopes: ["read"] });
      const uploader = await db.keys.create(server.orgId, { name: "ci", scopes: ["upload"] });
      const parts: Uint8Array[] = [];
      for await (const chunk of generateCsv({ rows: 2000, users: 500, seed: 3 })) parts.push(chunk);
      const stored = await call(server, server.apiKey, "/datasets/upload/?experiment_id=shown", {
        method: "POST",
        body: new Blob(parts as BlobPart[]),
      });
      assert.equal(stored.status, 201, await stored.text());
      browser = await launchBrowser();
      const page = await browser.browser.newPage();
      const problems: string[] = [];
      page.on("pageerror", (error) => problems.push(`page error: ${error}`));
      await page.setViewport({ width: 1280, height: 900 });
      await page.goto(server.url, { waitUntil: "load" });
      await signIn(page, server.apiKey);
      await page.waitForSelector("#app:not([hidden])");
      await page.click("#nav-api-keys");
      await page.waitForSelector("#create-key");

      let secret = "";
      await t.step("an admin key creates a key with a name, scopes and an expiry", async () => {
        assert.match(await text(page, "#own-scopes"), /admin — may manage keys/);
        await page.type("#new-key-name", "pipeline");
        await page.click('#create-key input[value="read"]'); // checked by default: now off
        await page.type("#new-key-days", "30");
        await page.click("#create-key-submit");
        secret = await shownSecret(page);
        assert.match(await text(page, "#new-key"), /only time the service shows it/);
        await page.click("#copy-new-key");
        await page.waitForFunction(
          () => (document.querySelector("#new-key [role=status]")?.textContent ?? "") !== "",
          { timeout: 5_000 },
        );
        const [made] = (await keysByName(server)).get("pipeline")!;
        assert.deepEqual(made.scopes, ["upload"]);
        const days = (Date.parse(String(made.expires_at)) - Date.now()) / 86_400_000;
        assert.ok(days > 29.9 && days <= 30, `expires in ${days} days`);
        // The secret on the page is the key: it may upload, and only that.
        const initiate = await call(server, secret, "/datasets/initiate/", {
          method: "POST",
          body: JSON.stringify({ experiment_id: "from_ui" }),
        });
        assert.equal(initiate.status, 200, await initiate.text());
        const list = await call(server, secret, "/datasets/");
        assert.equal(list.status, 403);
        assert.equal((await list.json()).error.code, "insufficient_scope");
        await page.waitForSelector(
          `${await activeRowOf(page, server, "pipeline")} [data-cell=scopes]`,
        );
        await screenshot(page, "keys-created-1280");
      });

      await t.step("rotating with no overlap shows the new key; the old one stops", async () => {
        const row = await activeRowOf(page, server, "pipeline");
        await page.click(`${row} [data-action=rotate]`);
        await page.$eval(`${row} input[name=overlap_hours]`, (el) => {
          (el as unknown as PageElement).value = "0";
        });
        await page.click(`${row} [data-action=confirm-rotate]`);
        const rotated = await shownSecret(page, secret);
        assert.match(await text(page, "#new-key"), /stops working now/);
        assert.equal((await call(server, secret, "/keys/")).status, 401);
        const initiate = await call(server, rotated, "/datasets/initiate/", {
          method: "POST",
          body: JSON.stringify({ experiment_id: "from_ui" }),
        });
        assert.equal(initiate.status, 200);
        secret = rotated;
      });

      await t.step("revoking asks first, then the key is refused", async () => {
        const row = await activeRowOf(page, server, "pipeline");
        await page.click(`${row} [data-action=revoke]`);
        await waitForText(page, `${row} .confirm`, "refused at once");
        // Not yet revoked: the key is still known (403, it may not list), not refused (401).
        assert.equal((await call(server, secret, "/datasets/")).status, 403);
        await page.click(`${row} [data-action=confirm-revoke]`);
        await waitForText(page, `${row} [data-cell=status]`, "revoked");
        assert.equal((await call(server, secret, "/datasets/")).status, 401);
      });

      await t.step("the organization's last admin key is kept", async () => {
        const own = (await (await call(server, server.apiKey, "/keys/")).json()).current_key_id;
        const row = `tr[data-key="${own}"]`;
        await page.click(`${row} [data-action=revoke]`);
        await page.click(`${row} [data-action=confirm-revoke]`);
        await waitForText(page, "#keys-status", "admin");
        assert.equal((await call(server, server.apiKey, "/keys/")).status, 200);
      });

      await t.step("the audit trail lists the changes newest first and filters them", async () => {
        await page.click("#nav-audit");
        await page.waitForSelector("#audit-rows tr");
        const actions = await page.$$eval(
          "#audit-rows tr",
          (rows) => rows.map((r) => r.getAttribute("data-action")),
        );
        const api = await (await call(server, server.apiKey, "/audit/?limit=50")).json();
        assert.deepEqual(actions, api.events.map((e: { action: string }) => e.action));
        for (const action of ["key.created", "key.rotated", "key.revoked"]) {
          assert.ok(actions.includes(action), `${action} in ${actions}`);
        }
        await page.select("#audit-action", "key.revoked");
        await page.waitForFunction(
          () => document.querySelector("#audit-rows tr:not([data-action='key.revoked'])") === null,
          { timeout: 10_000, polling: 100 },
        );
        assert.ok((await page.$$("#audit-rows tr")).length >= 1);
        await screenshot(page, "audit-1280");
      });

      await t.step("a read-only key sees the keys and its scopes, but no controls", async () => {
        await page.click("#signout");
        await signIn(page, reader.api_key);
        await page.waitForSelector("#app:not([hidden])");
        await page.click("#nav-api-keys");
        await page.waitForSelector("#keys-admin-needed");
        assert.equal(await page.$("#create-key"), null);
        assert.equal(await page.$("[data-action=revoke]"), null);
        assert.match(await text(page, '#own-scopes li[data-scope="read"]'), /may read/);
        assert.match(await text(page, '#own-scopes li[data-scope="write"]'), /not held/);
        await page.click("#nav-audit");
        await waitForText(page, "#audit-status", "needs a key with the admin scope");
        assert.equal(
          await page.$eval("#app", (el) => (el as unknown as PageElement).hidden),
          false,
        );
        // Its analysis shows, and its settings form says which scope changing them needs.
        await page.goto(`${server.url}/#/get-via-api/shown`, { waitUntil: "load" });
        await waitForText(page, "#settings-scope", "needs a key with the write scope");
        const disabled = (selector: string) =>
          page.$eval(selector, (el) => (el as unknown as PageElement).disabled);
        assert.equal(await disabled("#settings-save"), true);
        assert.equal(await disabled(".settings-fields"), true);
      });

      await t.step("an upload-only key is told why it cannot sign in", async () => {
        await page.click("#signout");
        await signIn(page, uploader.api_key);
        await waitForText(page, "#signin-error", "lacks the read scope");
      });
      assert.deepEqual(problems, []);
    } finally {
      await browser?.close();
      await server.close();
    }
  },
});
