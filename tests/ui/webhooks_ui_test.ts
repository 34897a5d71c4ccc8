/**
 * Information → Webhooks in a real headless Chromium against the real service and a real
 * receiver on 127.0.0.1: add an endpoint (its secret shown once, and it verifies what arrives),
 * send a test, see the delivery and its attempts, disable and enable, change the events, rotate
 * the secret, and retry a failed delivery.
 */
import assert from "node:assert/strict";
import { startTestServer } from "../_server.ts";
import { browserTest, launchBrowser, type Page, screenshot } from "../_browser.ts";
import { startReceiver } from "../webhooks/_receiver.ts";

interface PageElement {
  value: string;
  checked: boolean;
  textContent: string | null;
}
declare const document: {
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): { length: number };
};

function text(page: Page, selector: string): Promise<string> {
  return page.$eval(selector, (el) => (el.textContent ?? "").replace(/\s+/g, " ").trim());
}

async function waitForText(page: Page, selector: string, expected: string, timeout = 15_000) {
  try {
    await page.waitForFunction(
      (sel: string, want: string) =>
        (document.querySelector(sel)?.textContent ?? "").replace(/\s+/g, " ").includes(want),
      { timeout, polling: 100 },
      selector,
      expected,
    );
  } catch (error) {
    const seen = await text(page, selector).catch(() => "(no such element)");
    throw new Error(`${selector} never showed "${expected}"; it shows "${seen}"`, { cause: error });
  }
}

browserTest({
  name: "web UI: webhooks are added, tested, disabled and enabled, rotated, and retried",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    let secret = "";
    let refuse = false;
    const receiver = startReceiver(() => secret, {
      "/hook": () => new Response(refuse ? "not now" : "ok", { status: refuse ? 500 : 200 }),
    });
    const server = await startTestServer({
      ABN_WEBHOOK_ALLOW_PRIVATE: "true",
      ABN_WEBHOOK_RETRY_SCHEDULE: "0",
    });
    let chromium: Awaited<ReturnType<typeof launchBrowser>> | null = null;
    try {
      chromium = await launchBrowser();
      const page = await chromium.browser.newPage();
      const problems: string[] = [];
      page.on("pageerror", (error) => problems.push(`page error: ${error}`));
      page.on("console", (message) => {
        if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
          problems.push(`console: ${message.text()}`);
        }
      });
      await page.setViewport({ width: 1280, height: 900 });
      await page.goto(server.url, { waitUntil: "load" });
      await page.waitForSelector("#signin-key", { visible: true });
      await page.type("#signin-key", server.apiKey);
      await page.click("#signin-submit");
      await page.waitForSelector("#app:not([hidden])");
      await page.click("#nav-webhooks");
      await waitForText(page, "#webhooks-empty", "No endpoints yet");

      // Add: only dataset.delivered and webhook.test.
      await page.type("#webhook-url", receiver.url("/hook"));
      await page.type("#webhook-description", "nightly pipeline");
      await page.click("#new-event-all"); // off
      await page.click("#new-event-dataset-delivered");
      await page.click("#new-event-webhook-test");
      await page.click("#webhook-add button[type=submit]");
      await page.waitForSelector("#new-secret");
      secret = await text(page, "#new-secret");
      assert.match(secret, /^whsec_/);
      const [endpoint] = await server.service.db.webhooks.list(server.orgId);
      assert.deepEqual(endpoint.events, ["dataset.delivered", "webhook.test"]);
      const card = `[data-webhook="${endpoint.webhook_id}"]`;
      await waitForText(page, `${card} [data-field="state"]`, "enabled");
      await waitForText(page, `${card} [data-field="events"]`, "dataset.delivered");
      await screenshot(page, "webhooks-added");

      // A test event: it arrives verified, and the list shows it delivered at the first attempt.
      await page.click(`${card} [data-action="test"]`);
      await waitForText(page, `${card} [data-cell="state"]`, "delivered");
      assert.equal(await text(page, `${card} [data-cell="attempts"]`), "1");
      assert.equal(receiver.requests.length, 1);
      assert.ok(receiver.requests[0].verified, receiver.requests[0].verifyError);

      // Disable, then enable again.
      await page.click(`${card} [data-action="disable"]`);
      await waitForText(page, `${card} [data-field="state"]`, "disabled");
      assert.equal(
        (await server.service.db.webhooks.get(server.orgId, endpoint.webhook_id))
          ?.enabled,
        false,
      );
      await page.click(`${card} [data-action="enable"]`);
      await waitForText(page, `${card} [data-field="state"]`, "enabled");

      // Events: all of them.
      await page.click(`${card} [data-action="edit-events"]`);
      await page.click(`#events-${endpoint.webhook_id}-all`);
      await page.click(`${card} [data-action="save-events"]`);
      await waitForText(page, `${card} [data-field="events"]`, "all events");

      // Rotation: a new secret shown once; both sign meanwhile.
      await page.click(`${card} [data-action="rotate"]`);
      await page.waitForSelector(`#secret-${endpoint.webhook_id}`);
      const rotated = await text(page, `#secret-${endpoint.webhook_id}`);
      assert.notEqual(rotated, secret);

      // A failed test (the receiver refuses, no attempt left), then a retry that is delivered.
      refuse = true;
      await page.click(`${card} [data-action="test"]`);
      await waitForText(page, `${card} tbody tr:first-child [data-cell="state"]`, "failed");
      assert.match(await text(page, `${card} tbody tr:first-child`), /500/);
      refuse = false;
      secret = rotated;
      await page.click(`${card} tbody tr:first-child [data-action="retry"]`);
      await waitForText(page, `${card} tbody tr:first-child [data-cell="state"]`, "delivered");
      assert.equal(await text(page, `${card} tbody tr:first-child [data-cell="attempts"]`), "2");
      const last = receiver.requests.at(-1)!;
      assert.equal(last.headers["webhook-signature"].split(" ").length, 2);
      assert.ok(last.verified, last.verifyError);
      await screenshot(page, "webhooks-deliveries");
      await page.setViewport({ width: 390, height: 844, deviceScaleFactor: 2 });
      await screenshot(page, "webhooks-deliveries-390");
      assert.deepEqual(problems, []);
    } finally {
      await chromium?.close();
      await server.close();
      await receiver.close();
    }
  },
});
