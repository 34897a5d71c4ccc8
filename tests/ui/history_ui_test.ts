/**
 * The web UI's health and history in a real headless Chromium against the real service: the
 * Health card with the broken value first, the breakdown for a chosen dimension, the History
 * chart after three deliveries with what changed since the last one, and the two CSV downloads
 * (the files the browser saves are the API's exports).
 */
import assert from "node:assert/strict";
import { startTestServer } from "../_server.ts";
import type { TestServer } from "../_server.ts";
import { browserTest, launchBrowser, screenshot } from "../_browser.ts";
import type { Page } from "../_browser.ts";
import { healthCsv } from "../analysis/_health_csv.ts";
import { dateOf, growingCsv } from "../e2e/_growing_csv.ts";

interface PageElement {
  value: string;
  textContent: string | null;
}
declare const document: { querySelector(selector: string): PageElement | null };

const grouped = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const pValue = (p: number) =>
  p === 0 ? "< 1e-300" : p < 0.0001 ? p.toExponential(2) : String(Number(p.toPrecision(3)));
const liftShort = (x: number) => {
  const t = (x * 100).toFixed(Math.abs(x * 100) < 1 ? 2 : 1);
  return (t.startsWith("-") ? "−" + t.slice(1) : "+" + t) + " %";
};

function call(server: TestServer, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${server.api}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${server.apiKey}`, ...init.headers },
  });
}

async function upload(server: TestServer, id: string, text: string): Promise<string> {
  const res = await call(server, `/datasets/upload/?experiment_id=${id}`, {
    method: "POST",
    headers: { "content-type": "text/csv" },
    body: new TextEncoder().encode(text),
  });
  const body = await res.json();
  assert.equal(res.status, 201, JSON.stringify(body));
  return body.etag;
}

async function twoStep(server: TestServer, id: string, text: string): Promise<string> {
  const grant = await (await call(server, "/datasets/initiate/", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ experiment_id: id }),
  })).json();
  const put = await fetch(grant.upload_url, { method: "PUT", body: text });
  assert.equal(put.status, 200);
  await put.body?.cancel();
  return (await (await call(server, `/datasets/${id}/`)).json()).etag;
}

// deno-lint-ignore no-explicit-any
async function ready(server: TestServer, id: string, etag: string): Promise<any> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const body = await (await call(server, `/datasets/${id}/analysis/`)).json();
    if (body.status === "ready" && body.dataset.etag === etag) return body;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${id} was not analysed in time`);
}

function text(page: Page, selector: string): Promise<string> {
  return page.$eval(selector, (el) => (el.textContent ?? "").replace(/\s+/g, " ").trim());
}

async function open(page: Page, id: string) {
  await page.$eval("#experiment-id", (el) => (el as unknown as PageElement).value = "");
  await page.type("#experiment-id", id);
  await page.click("#load");
  await page.waitForFunction(
    (want: string) => document.querySelector("#result-title")?.textContent === want,
    { timeout: 15_000 },
    id,
  );
  await page.waitForSelector("#result .ready:not(.stale) #srm-p-value", { timeout: 15_000 });
}

/** Waits for a file to appear, whole, in `dir`. */
async function downloaded(dir: string, name: string): Promise<string> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    try {
      const names = [...Deno.readDirSync(dir)].map((e) => e.name);
      if (names.includes(name) && !names.some((n) => n.endsWith(".crdownload"))) {
        return await Deno.readTextFile(`${dir}/${name}`);
      }
    } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${name} was not downloaded`);
}

browserTest({
  name:
    "web UI: the Health card, the breakdown, the History chart after three deliveries, the downloads",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const server = await startTestServer({ ABN_SCAN_INTERVAL_SECONDS: "1" });
    const downloads = await Deno.makeTempDir({ prefix: "abn-ui-downloads-" });
    let session: Awaited<ReturnType<typeof launchBrowser>> | null = null;
    try {
      const health = await ready(server, "health", await upload(server, "health", healthCsv()));
      // Each delivery analysed before the next (a newer delivery would win over a pending one).
      const etags = [await upload(server, "nightly", growingCsv({ days: 8 }))];
      await ready(server, "nightly", etags[0]);
      etags.push(
        await twoStep(server, "nightly", growingCsv({ days: 9, restated: true, switched: true })),
      );
      await ready(server, "nightly", etags[1]);
      etags.push(
        await upload(
          server,
          "nightly",
          growingCsv({ days: 10, restated: true, switched: true, incompleteLast: true }),
        ),
      );
      const nightly = await ready(server, "nightly", etags[2]);

      session = await launchBrowser();
      const context = await session.browser.createBrowserContext({
        downloadBehavior: { policy: "allow", downloadPath: downloads },
      });
      const page = await context.newPage();
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

      await t.step("the Health card lists each value's split, the failing one first", async () => {
        await open(page, "health");
        await page.waitForSelector(".health .dimension");
        assert.equal(await text(page, "#health-verdict"), "!Split mismatch within country");
        const country = health.dimensions.find((d: { name: string }) => d.name === "country");
        const rows = await page.$$eval(
          '.health .dimension[data-dimension="country"] tbody tr',
          (trs) =>
            trs.map((tr) => [tr.getAttribute("data-value"), tr.getAttribute("data-mismatch")]),
        );
        // FR fails and comes first; the rest in the API's order (by users).
        assert.deepEqual(rows, [
          ["FR", "true"],
          ...country.values.filter((v: { value: string }) => v.value !== "FR")
            .map((v: { value: string }) => [v.value, "false"]),
        ]);
        for (const v of country.values) {
          const row = `.health .dimension[data-dimension="country"] tr[data-value="${v.value}"]`;
          assert.equal(await text(page, `${row} [data-cell="p"]`), pValue(v.srm.p_value));
          for (const x of v.variants) {
            assert.equal(
              await text(page, `${row} [data-cell="users-${x.name}"]`),
              grouped.format(x.users),
            );
          }
        }
        assert.equal(
          await text(page, '.health tr[data-value="FR"] [data-cell="split"]'),
          "mismatch",
        );
        assert.equal(
          await page.$eval(
            '.health .dimension[data-dimension="city"]',
            (el) => el.getAttribute("data-skipped"),
          ),
          "true",
        );
        await screenshot(page, "health-1280");
      });

      await t.step(
        "the breakdown shows the key metric per value of the chosen dimension",
        async () => {
          assert.equal(
            await page.$eval("#breakdown-dimension", (el) => (el as unknown as PageElement).value),
            "country",
          );
          const country = health.dimensions.find((d: { name: string }) => d.name === "country");
          for (const v of country.values) {
            const row = `.breakdown-table tr[data-value="${v.value}"]`;
            const [b] = v.key_metric;
            assert.equal(
              await text(page, `${row} [data-cell="lift-B"] .nowrap`),
              liftShort(b.lift),
            );
            assert.equal(
              await text(page, `${row} [data-cell="users-A"]`),
              grouped.format(v.variants[0].users),
            );
          }
        },
      );

      await t.step(
        "the History chart shows three deliveries and what changed since the last",
        async () => {
          await open(page, "nightly");
          await page.waitForSelector('.history-body[data-deliveries="3"] .history-lift svg', {
            timeout: 15_000,
          });
          const points = await page.$$eval(
            ".history-lift g.variant",
            (gs) =>
              gs.map((g) => [
                g.getAttribute("data-variant"),
                g.querySelectorAll("circle.point").length,
                g.querySelectorAll("path.band").length,
              ]),
          );
          assert.deepEqual(points, [["B", 3, 1]]);
          const chances = await page.$$eval(
            ".history-chance g.variant circle.point",
            (cs) => cs.length,
          );
          assert.equal(chances, 3);
          assert.equal(
            await text(page, '#since-last [data-change="provisional"]'),
            `${dateOf(10)} looks incomplete (provisional)`,
          );
          assert.equal(
            await text(page, '#since-last [data-change="users-added"]'),
            `+${nightly.changes.users_added} users`,
          );
          assert.equal(
            await text(page, '#since-last [data-change="switched"]'),
            "0 users switched variant",
          );
          await page.evaluate(() => scrollTo(0, 0));
          await screenshot(page, "history-1280");
          await page.setViewport({ width: 390, height: 844, deviceScaleFactor: 2 });
          await new Promise((r) => setTimeout(r, 150));
          await screenshot(page, "history-390");
          await page.setViewport({ width: 1280, height: 900 });
        },
      );

      await t.step("the download buttons save the two CSV exports", async () => {
        await page.click("#download-analysis");
        const analysis = await downloaded(downloads, "nightly-analysis.csv");
        assert.equal(
          analysis,
          await (await call(server, "/datasets/nightly/analysis/?format=csv")).text(),
        );
        await page.click("#download-history");
        const history = await downloaded(downloads, "nightly-history.csv");
        assert.equal(
          history,
          await (await call(server, "/datasets/nightly/history/?format=csv")).text(),
        );
        assert.equal(history.trimEnd().split("\r\n").length, 1 + 3 * 2 * 2); // 3 × 2 metrics × 2 variants
        assert.match(
          await text(page, ".downloads [role=status]"),
          /^Downloaded nightly-history\.csv$/,
        );
      });

      assert.deepEqual(problems, []);
    } finally {
      await session?.close();
      await server.close();
      await Deno.remove(downloads, { recursive: true }).catch(() => {});
    }
  },
});

declare function scrollTo(x: number, y: number): void;
