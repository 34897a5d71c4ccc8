/**
 * The web UI end to end: the real service over HTTP on 127.0.0.1 and a real headless Chromium.
 * The page's figures are compared with the JSON the API answers for the same experiment.
 */
import assert from "node:assert/strict";
import { startTestServer } from "../_server.ts";
import type { TestServer } from "../_server.ts";
import { browserTest, launchBrowser, screenshot } from "../_browser.ts";
import type { Page } from "../_browser.ts";
import { generateCsv } from "../../bench/generate_csv.ts";
import { datasetKey } from "../../src/storage/object_store.ts";

// The page's globals as the callbacks below use them: those callbacks run in the browser.
// Declared here, in this module only, so the DOM library stays out of the Deno programme.
interface PageElement {
  id: string;
  value: string;
  hidden: boolean;
  textContent: string | null;
  childElementCount: number;
  blur(): void;
  getAttribute(name: string): string | null;
  querySelectorAll(selector: string): { length: number };
}
declare const document: {
  activeElement: PageElement | null;
  querySelector(selector: string): PageElement | null;
};
declare const sessionStorage: { getItem(key: string): string | null };
declare function getComputedStyle(el: PageElement): { outlineStyle: string; outlineWidth: string };
declare function scrollTo(x: number, y: number): void;

const LIMIT = 1_048_576;
const WIDE = { width: 1280, height: 900 };
const NARROW = { width: 390, height: 844, deviceScaleFactor: 2 };

// The page's number formats, written once more here so the comparison is with the API's JSON.
const grouped = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const integer = (x: number) => grouped.format(x);
const share = (x: number) => `${(x * 100).toFixed(1).replace("-", "−")} %`;
const percent = (x: number) => `${x.toFixed(1).replace("-", "−")} %`;
const pValue = (p: number) =>
  p === 0 ? "< 1e-300" : p < 0.0001 ? p.toExponential(2) : String(Number(p.toPrecision(3)));
const signed = (text: string) => (text.startsWith("-") ? "−" + text.slice(1) : "+" + text) + " %";
const lift = (x: number) => signed((x * 100).toFixed(2));
const liftShort = (x: number) => signed((x * 100).toFixed(Math.abs(x * 100) < 1 ? 2 : 1));

interface Comparison {
  name: string;
  lift: number;
  ci: [number, number];
  p_value: number;
  sequential_ci: [number, number];
  sequential_p_value: number;
  decision?: string;
}

/** The decision on the key metric in the page's words, from the API's JSON. */
function decisionText(a: { control: string; key_metric: string }, c: Comparison): string {
  const head = `${c.name} is ${c.decision} than ${a.control} on ${a.key_metric}: `;
  if (c.decision === "better" || c.decision === "worse") {
    return `${head}${liftShort(c.lift)}, safe to act on at any look`;
  }
  return `No decision yet on ${c.name} against ${a.control} on ${a.key_metric}: ` +
    `${liftShort(c.lift)}, the always-valid interval (${lift(c.sequential_ci[0])} to ` +
    `${lift(c.sequential_ci[1])}) still includes 0`;
}

async function csv(options: Parameters<typeof generateCsv>[0]): Promise<Uint8Array<ArrayBuffer>> {
  const parts: Uint8Array[] = [];
  for await (const chunk of generateCsv(options)) parts.push(chunk);
  return new Uint8Array(await new Blob(parts as BlobPart[]).arrayBuffer());
}

function call(server: TestServer, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${server.api}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${server.apiKey}`, ...init.headers },
  });
}

async function upload(server: TestServer, experimentId: string, body: Uint8Array<ArrayBuffer>) {
  const res = await call(server, `/datasets/upload/?experiment_id=${experimentId}`, {
    method: "POST",
    headers: { "content-type": "text/csv" },
    body,
  });
  const answer = await res.text();
  assert.equal(res.status, 201, answer);
}

/** The analysis once it is ready. */
async function readyAnalysis(server: TestServer, experimentId: string) {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const res = await call(server, `/datasets/${experimentId}/analysis/`);
    const body = await res.json();
    if (body.status === "ready") return body;
    assert.notEqual(body.status, "failed", JSON.stringify(body));
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${experimentId} was not analysed in time`);
}

function text(page: Page, selector: string): Promise<string> {
  return page.$eval(selector, (el) => (el.textContent ?? "").replace(/\s+/g, " ").trim());
}

/** Waits until the element's text contains `expected`. */
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

/** Loads an experiment through the experiment_id field and the Load button. */
async function loadByField(page: Page, experimentId: string) {
  await page.$eval("#experiment-id", (el) => (el as unknown as PageElement).value = "");
  await page.type("#experiment-id", experimentId);
  await page.click("#load");
}

async function waitReady(page: Page, experimentId: string) {
  await waitForText(page, "#result-title", experimentId);
  await page.waitForSelector("#result .result-head .badge-ready", { timeout: 15_000 });
  await page.waitForSelector("#result .ready:not(.stale) #srm-p-value", { timeout: 15_000 });
}

/**
 * The decision card and every metric's interval chart and table show what the API answers: one
 * chart row per compared variant with its two intervals and its point, in the API's order.
 */
async function checkComparisons(page: Page, a: {
  control: string;
  key_metric: string;
  inference: string;
  metrics: { name: string; comparisons: Comparison[] }[];
}) {
  const key = a.metrics.find((m) => m.name === a.key_metric)!;
  for (const c of key.comparisons) {
    const shown = await text(page, `.decision-item[data-variant="${c.name}"] .decision-text`);
    if (a.inference === "frequentist") {
      const figures = `: ${liftShort(c.lift)} (95 % interval ${lift(c.ci[0])} to ${
        lift(c.ci[1])
      }, p = ${pValue(c.p_value)})`;
      assert.ok(shown.includes(figures), `"${shown}" does not include "${figures}"`);
      continue;
    }
    const expected = decisionText(a, c);
    if (c.decision === "inconclusive") {
      assert.ok(shown.startsWith(expected), `"${shown}" does not start with "${expected}"`);
    } else {
      assert.equal(shown, expected);
    }
  }
  for (const m of a.metrics) {
    const block = `.metric-comparison[data-metric="${m.name}"]`;
    const rows = await page.$$eval(
      `${block} .interval-chart g.interval-row`,
      (gs) =>
        gs.map((g) => ({
          variant: g.getAttribute("data-variant"),
          lift: Number(g.getAttribute("data-lift")),
          parts: [
            g.querySelectorAll("rect.sequential").length,
            g.querySelectorAll("rect.fixed").length,
            g.querySelectorAll("circle.point").length,
          ],
        })),
    );
    assert.deepEqual(
      rows,
      m.comparisons.map((c) => ({ variant: c.name, lift: c.lift, parts: [1, 1, 1] })),
    );
    for (const c of m.comparisons) {
      const row = `${block} tr[data-variant="${c.name}"]`;
      assert.equal(await text(page, `${row} [data-cell="lift"]`), lift(c.lift));
      assert.equal(
        await text(page, `${row} [data-cell="ci"]`),
        `${lift(c.ci[0])} to ${lift(c.ci[1])}`,
      );
      assert.equal(
        await text(page, `${row} [data-cell="sequential-ci"]`),
        `${lift(c.sequential_ci[0])} to ${lift(c.sequential_ci[1])}`,
      );
      assert.equal(await text(page, `${row} [data-cell="p"]`), pValue(c.p_value));
    }
  }
}

async function shoot(page: Page, name: string) {
  await page.evaluate(() => scrollTo(0, 0));
  await page.setViewport(WIDE);
  await new Promise((r) => setTimeout(r, 150));
  await screenshot(page, `${name}-1280`);
  await page.setViewport(NARROW);
  await new Promise((r) => setTimeout(r, 150));
  await screenshot(page, `${name}-390`);
  await page.setViewport(WIDE);
}

browserTest({
  name: "web UI: sign-in, the synchronised list, the analysis, errors, settings and keys",
  // puppeteer keeps timers of its own alive between steps; everything is closed in `finally`.
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const server = await startTestServer({
      ABN_SCAN_INTERVAL_SECONDS: "1",
      ABN_MAX_UPLOAD_BYTES: String(LIMIT),
    });
    let session: Awaited<ReturnType<typeof launchBrowser>> | null = null;
    try {
      const db = server.service.db;
      // A second key, revoked, so the keys page has both states to show.
      await db.keys.revoke((await db.keys.create(server.orgId)).info.key_id);
      await upload(
        server,
        "checkout_test",
        await csv({ rows: 6000, users: 1500, variants: ["A", "B"], days: 14, seed: 7 }),
      );

      session = await launchBrowser();
      const page = await session.browser.newPage();
      const problems: string[] = [];
      page.on("pageerror", (error) => problems.push(`page error: ${error}`));
      page.on("console", (message) => {
        // Chromium logs every 4xx answer; those are expected here (401, 404, 400).
        if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
          problems.push(`console: ${message.text()}`);
        }
      });
      await page.setViewport(WIDE);
      await page.goto(server.url, { waitUntil: "load" });

      await t.step("a wrong API key is refused with a clear message", async () => {
        await page.waitForSelector("#signin-key", { visible: true });
        await page.type("#signin-key", `abn_${"x".repeat(38)}`);
        await page.click("#signin-submit");
        await waitForText(page, "#signin-error", "This API key is not valid");
        assert.equal(await page.$eval("#app", (el) => (el as unknown as PageElement).hidden), true);
        await shoot(page, "signin-error");
      });

      await t.step("a key of a deactivated organization is refused as such", async () => {
        const org = await db.orgs.create("gone");
        const { api_key } = await db.keys.create(org.id);
        await db.orgs.setActive(org.id, false);
        await page.$eval("#signin-key", (el) => (el as unknown as PageElement).value = "");
        await page.type("#signin-key", api_key);
        await page.click("#signin-submit");
        await waitForText(page, "#signin-error", "organization is deactivated");
      });

      await t.step("signing in works with the keyboard alone, with a visible focus", async () => {
        await page.reload({ waitUntil: "load" });
        await page.waitForSelector("#signin-key", { visible: true });
        await page.evaluate(() => (document.activeElement as PageElement | null)?.blur());
        for (let i = 0; i < 6; i++) {
          if (await page.evaluate(() => document.activeElement?.id === "signin-key")) break;
          await page.keyboard.press("Tab");
        }
        assert.equal(await page.evaluate(() => document.activeElement?.id), "signin-key");
        await page.keyboard.type(server.apiKey);
        await page.keyboard.press("Tab");
        const focus = await page.evaluate(() => {
          const el = document.activeElement as PageElement;
          const style = getComputedStyle(el);
          return { id: el.id, outline: style.outlineStyle, width: style.outlineWidth };
        });
        assert.equal(focus.id, "signin-submit");
        assert.notEqual(focus.outline, "none");
        assert.notEqual(focus.width, "0px");
        await page.keyboard.press("Enter");
        await page.waitForSelector("#app:not([hidden])");
        await waitForText(page, "#org-name", "first");
        assert.equal(
          await page.evaluate(() => sessionStorage.getItem("abn.api_key")),
          server.apiKey,
        );
        assert.ok(!page.url().includes(server.apiKey), "the key never goes into the address");
        await waitForText(page, ".experiment-list", "checkout_test");
        assert.equal(
          await text(page, "#nav-get-via-api"),
          "Get via API",
        );
        assert.equal(await text(page, "#nav-data-preparation"), "Data Preparation");
        assert.equal(await text(page, "#nav-information"), "Information");
      });

      await t.step("a two-step delivery appears in the list without reloading", async () => {
        const grant = await (await call(server, "/datasets/initiate/", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ experiment_id: "pricing_page" }),
        })).json();
        const put = await fetch(grant.upload_url, {
          method: "PUT",
          headers: { "content-type": "text/csv" },
          body: await csv({
            rows: 5000,
            users: 1200,
            variants: ["A", "B", "C"],
            days: 10,
            seed: 3,
            conversion: [0.1, 0.17, 0.1], // B wins clearly: a decision to show
          }),
        });
        assert.equal(put.status, 200);
        await put.body?.cancel();
        await page.waitForSelector('button[data-experiment="pricing_page"]', { timeout: 10_000 });
      });

      await t.step(
        "the experiments list is one Tab stop and the arrow keys move in it",
        async () => {
          await page.focus("#load");
          await page.keyboard.press("Tab");
          assert.equal(
            await page.evaluate(() => document.activeElement?.getAttribute("data-experiment")),
            "pricing_page",
          );
          await page.keyboard.press("ArrowDown");
          assert.equal(
            await page.evaluate(() => document.activeElement?.getAttribute("data-experiment")),
            "checkout_test",
          );
          await page.keyboard.press("Enter");
          await waitReady(page, "checkout_test");
        },
      );

      await t.step("clicking an experiment loads the figures the API answers", async () => {
        await page.click('button[data-experiment="checkout_test"]');
        await waitReady(page, "checkout_test");
        const a = await readyAnalysis(server, "checkout_test");
        assert.equal(
          await page.$eval("#experiment-id", (el) => (el as unknown as PageElement).value),
          "checkout_test",
        );
        assert.ok(page.url().endsWith("#/get-via-api/checkout_test"));
        for (const v of a.variants) {
          assert.equal(
            await text(page, `.srm tr[data-variant="${v.name}"] [data-cell="users"]`),
            integer(v.users),
          );
        }
        assert.equal(await text(page, "#srm-p-value"), pValue(a.srm.p_value));
        assert.equal(
          await text(page, "#srm-verdict"),
          a.srm.mismatch ? "!Sample ratio mismatch" : "✓No sample ratio mismatch",
        );
        assert.equal(await text(page, "#sample-percent"), percent(a.sample.percent_of_target));
        assert.equal(await text(page, "#sample-total"), integer(a.sample.total_users));
        for (const v of a.win_probability.variants) {
          const beat = await text(page, `.win tr[data-variant="${v.name}"] [data-cell="beat"]`);
          assert.equal(
            beat,
            v.chance_to_beat_control === null ? "control" : share(v.chance_to_beat_control),
          );
          assert.equal(
            await text(page, `.win tr[data-variant="${v.name}"] [data-cell="best"]`),
            share(v.chance_to_be_best),
          );
        }
        for (const m of a.metrics) {
          for (const v of m.variants) {
            assert.equal(
              await text(
                page,
                `tbody[data-metric="${m.name}"] tr[data-variant="${v.name}"] [data-cell="users"]`,
              ),
              integer(v.users),
            );
          }
        }
        assert.equal(await text(page, '[data-field="rows"]'), integer(a.dataset.rows));
        // Two charts, one line per variant each.
        const lines = await page.$$eval(
          "#result .chart svg",
          (svgs) => svgs.map((svg) => svg.querySelectorAll("g.series path").length),
        );
        assert.deepEqual(lines, [a.variants.length, a.variants.length]);
        // Two arms: the decision in words, one interval row per metric.
        await checkComparisons(page, a);
        assert.equal(
          await text(page, "#sample-days-left"),
          a.sample.days_left === 0 ? "target reached" : `${integer(a.sample.days_left)} days left`,
        );
        await shoot(page, "analysis");
      });

      await t.step("the experiment_id field and Load show a three-variant experiment", async () => {
        await loadByField(page, "pricing_page");
        await waitReady(page, "pricing_page");
        const a = await readyAnalysis(server, "pricing_page");
        assert.equal(a.variants.length, 3);
        for (const v of a.variants) {
          assert.equal(
            await text(page, `.srm tr[data-variant="${v.name}"] [data-cell="users"]`),
            integer(v.users),
          );
        }
        assert.equal(await text(page, "#sample-percent"), percent(a.sample.percent_of_target));
        // Three arms: two rows per interval chart, and B's win said as the issue words it.
        const key = a.metrics.find((m: { name: string }) => m.name === a.key_metric);
        assert.equal(key.comparisons[0].decision, "better", JSON.stringify(key.comparisons[0]));
        await checkComparisons(page, a);
        assert.match(
          await text(page, '.decision-item[data-variant="B"] .decision-text'),
          /^B is better than A on converted: \+[0-9.]+ %, safe to act on at any look$/,
        );
        await shoot(page, "three-arms");
      });

      await t.step("a sample ratio mismatch is flagged with the observed split", async () => {
        let body = "user_id,variant,date,converted\n";
        for (let i = 0; i < 500; i++) {
          body += `u${i},${i < 300 ? "A" : "B"},2026-02-0${1 + (i % 5)},${i % 7 === 0 ? 1 : 0}\n`;
        }
        await upload(server, "srm_broken", new TextEncoder().encode(body));
        const a = await readyAnalysis(server, "srm_broken");
        assert.equal(a.srm.mismatch, true);
        await loadByField(page, "srm_broken");
        await waitReady(page, "srm_broken");
        assert.equal(await text(page, "#srm-verdict"), "!Sample ratio mismatch");
        assert.equal(await text(page, "#srm-p-value"), pValue(a.srm.p_value));
        assert.equal(
          await text(page, '.srm tr[data-variant="A"] [data-cell="observed"]'),
          "60.0 %",
        );
        await shoot(page, "srm-mismatch");
      });

      await t.step("a failed analysis shows the validation message", async () => {
        const grant = await (await call(server, "/datasets/initiate/", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ experiment_id: "no_metrics" }),
        })).json();
        const put = await fetch(grant.upload_url, {
          method: "PUT",
          headers: { "content-type": "text/csv" },
          body: "user_id,variant,date,country\nu1,A,2026-01-01,NL\nu2,B,2026-01-01,DE\n",
        });
        assert.equal(put.status, 200);
        await put.body?.cancel();
        await loadByField(page, "no_metrics");
        await page.waitForSelector("#analysis-error", { timeout: 15_000 });
        const a = await (await call(server, "/datasets/no_metrics/analysis/")).json();
        assert.equal(a.status, "failed");
        assert.equal(await text(page, "#analysis-error"), a.error);
        await shoot(page, "failed");
      });

      await t.step("an unknown experiment_id shows the 404 message", async () => {
        await loadByField(page, "no_such_experiment");
        await waitForText(
          page,
          "#result .problem .error-title",
          "No dataset for this experiment_id — check that the PUT finished with 200",
        );
      });

      await t.step(
        "an experiment loaded before its delivery shows its analysis once it arrives",
        async () => {
          // Delivered at once, before the list polled again: the page still picks it up.
          await loadByField(page, "arrives_later");
          await waitForText(page, "#result .problem .error-title", "No dataset for this");
          await upload(
            server,
            "arrives_later",
            await csv({ rows: 400, users: 200, variants: ["A", "B"], days: 5, seed: 9 }),
          );
          await waitReady(page, "arrives_later");
        },
      );

      await t.step("a dataset over the limit shows the 400 message and the remedy", async () => {
        const writer = await server.service.store.createWriter(
          datasetKey(server.orgId, "huge_export"),
        );
        const line = new TextEncoder().encode("u1,A,2026-01-01,1\n".repeat(4096));
        await writer.write(new TextEncoder().encode("user_id,variant,date,converted\n"));
        for (let written = 0; written <= LIMIT; written += line.length) await writer.write(line);
        await writer.commit();
        const api = await call(server, "/datasets/huge_export/analysis/");
        assert.equal(api.status, 400);
        assert.equal((await api.json()).error.code, "dataset_too_large");
        await page.waitForSelector('button[data-experiment="huge_export"] .badge-too_large', {
          timeout: 10_000,
        });
        await page.click('button[data-experiment="huge_export"]');
        await waitForText(page, "#result .problem .error-title", "The file exceeds 1 MB");
        const shown = await text(page, "#result .problem");
        for (
          const remedy of [
            "shrink the dataset",
            "drop the columns",
            "split it over several experiment_ids",
          ]
        ) {
          assert.ok(shown.includes(remedy), `missing "${remedy}" in: ${shown}`);
        }
        await shoot(page, "too-large");
      });

      await t.step("changing the control in the settings updates the result", async () => {
        await page.click('button[data-experiment="checkout_test"]');
        await waitReady(page, "checkout_test");
        // A split that does not add up is refused before anything is sent.
        await page.$eval("#set-split-0", (el) => (el as unknown as PageElement).value = "");
        await page.type("#set-split-0", "70");
        await page.click(".settings-form button[type=submit]");
        await waitForText(page, "#settings-error", "add up to 120 %");
        await page.$eval("#set-split-0", (el) => (el as unknown as PageElement).value = "");
        await page.type("#set-split-0", "50");
        await page.select("#set-control", "B");
        await page.click(".settings-form button[type=submit]");
        await waitForText(page, '.win tr[data-variant="B"] [data-cell="beat"]', "control");
        await waitReady(page, "checkout_test");
        const a = await readyAnalysis(server, "checkout_test");
        assert.equal(a.control, "B");
        const saved = await (await call(server, "/datasets/checkout_test/settings/")).json();
        assert.deepEqual(saved, { control: "B" });
        const onA = a.win_probability.variants.find((v: { name: string }) => v.name === "A");
        assert.equal(
          await text(page, '.win tr[data-variant="A"] [data-cell="beat"]'),
          share(onA.chance_to_beat_control),
        );
        assert.equal(await text(page, '[data-field="control"]'), "B");
        await waitForText(page, "#settings-status", "Settings saved");
        await shoot(page, "settings");
      });

      await t.step("the settings lead with another view and cap a metric", async () => {
        // A cap outside (50, 100) is refused before anything is sent; one the server refuses
        // shows the server's message.
        await page.type("#set-cap-1", "40");
        await page.click(".settings-form button[type=submit]");
        await waitForText(page, "#settings-error", "must be a percentile above 50 and below 100");
        await page.$eval("#set-cap-1", (el) => (el as unknown as PageElement).value = "");
        await page.type("#set-cap-1", "99");
        await page.type("#set-covariate-1", "no_such_column");
        await page.click(".settings-form button[type=submit]");
        await waitForText(page, "#settings-error", '"no_such_column", which is not a column');
        await page.$eval("#set-covariate-1", (el) => (el as unknown as PageElement).value = "");
        await page.select("#set-inference", "frequentist");
        await page.click(".settings-form button[type=submit]");
        await page.waitForSelector("#result .decision.view-frequentist", { timeout: 15_000 });
        await waitReady(page, "checkout_test");
        const saved = await (await call(server, "/datasets/checkout_test/settings/")).json();
        assert.deepEqual(saved, {
          control: "B",
          inference: "frequentist",
          winsorize: { revenue: 0.99 },
        });
        const a = await readyAnalysis(server, "checkout_test");
        const revenue = a.metrics.find((m: { name: string }) => m.name === "revenue");
        assert.equal(revenue.winsorized.percentile, 0.99);
        await waitForText(page, '.metric-comparison[data-metric="revenue"] h4', "capped at p99");
        assert.ok((await text(page, "#decision-title")).startsWith("Fixed-horizon test on"));
        await checkComparisons(page, a);
        await shoot(page, "settings-inference");
      });

      await t.step(
        "a new delivery of the loaded experiment updates the page by itself",
        async () => {
          await upload(
            server,
            "checkout_test",
            await csv({ rows: 9000, users: 2200, variants: ["A", "B"], days: 21, seed: 8 }),
          );
          const a = await readyAnalysis(server, "checkout_test");
          await waitForText(page, '[data-field="rows"]', integer(a.dataset.rows));
          await waitReady(page, "checkout_test");
          assert.equal(await text(page, "#sample-total"), integer(a.sample.total_users));
        },
      );

      await t.step("the API keys page shows the organization and its keys", async () => {
        await page.click("#nav-api-keys");
        await waitForText(page, "#org-status", "active");
        const info = await (await call(server, "/keys/")).json();
        for (const key of info.keys) {
          const row = `tr[data-key="${key.key_id}"]`;
          assert.ok((await text(page, `${row} th`)).startsWith(`${key.prefix}…`));
          assert.equal((await text(page, `${row} [data-cell="status"]`)).split(" ")[0], key.status);
        }
        assert.ok(
          (await text(page, `tr[data-key="${info.current_key_id}"] th`)).includes("this session"),
        );
        assert.equal(await text(page, "#org-name-value"), "first");
        assert.equal(
          await page.$eval("#nav-api-keys", (el) => el.getAttribute("aria-current")),
          "page",
        );
        await shoot(page, "keys");
      });

      await t.step("signing out forgets the key", async () => {
        await page.click("#signout");
        await page.waitForSelector("#signin:not([hidden])");
        assert.equal(await page.evaluate(() => sessionStorage.getItem("abn.api_key")), null);
        assert.equal(await page.$eval("#main", (el) => el.childElementCount), 0);
      });

      assert.deepEqual(problems, []);
    } finally {
      await session?.close();
      await server.close();
    }
  },
});
