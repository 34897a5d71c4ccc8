/**
 * Experiment health and history end to end, on both storage drivers: three nightly deliveries of
 * a growing file (by both routes) make a history of three; the same bytes again add none; what
 * changed is reported (a restated past date, a user switching variant, an incomplete newest
 * date); the exports parse back to the JSON's numbers; a deletion removes the history; and the
 * per-dimension SRM of a file with one broken value matches SciPy.
 */
import { assert, assertApiError, assertEquals } from "../_assert.ts";
import { driverTest } from "../_drivers.ts";
import type { DriverServer } from "../_drivers.ts";
import { dateOf, growingCsv, type GrowingOptions } from "./_growing_csv.ts";
import { healthCsv, SCIPY } from "../analysis/_health_csv.ts";
import { ANALYSIS_CSV_COLUMNS, HISTORY_CSV_COLUMNS } from "../../src/analysis/csv_export.ts";

const enc = new TextEncoder();

function call(server: DriverServer, path: string, init: RequestInit = {}) {
  return fetch(`${server.api}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${server.apiKey}`, ...init.headers },
  });
}

async function upload(server: DriverServer, id: string, text: string): Promise<string> {
  const res = await call(server, `/datasets/upload/?experiment_id=${id}`, {
    method: "POST",
    headers: { "content-type": "text/csv" },
    body: enc.encode(text),
  });
  const body = await res.json();
  assertEquals(res.status, 201, JSON.stringify(body));
  return body.etag;
}

/** A two-step delivery; answers the stored object's ETag. */
async function twoStep(server: DriverServer, id: string, text: string): Promise<string> {
  const grant = await (await call(server, "/datasets/initiate/", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ experiment_id: id }),
  })).json();
  const put = await fetch(grant.upload_url, {
    method: "PUT",
    headers: { "content-type": "text/csv" },
    body: enc.encode(text),
  });
  assertEquals(put.status, 200);
  await put.body?.cancel();
  return (await (await call(server, `/datasets/${id}/`)).json()).etag;
}

// deno-lint-ignore no-explicit-any
async function ready(server: DriverServer, id: string, etag: string): Promise<any> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const body = await (await call(server, `/datasets/${id}/analysis/`)).json();
    if (body.status !== "pending" && body.dataset.etag === etag) {
      assertEquals(body.status, "ready", body.error);
      return body;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the analysis of ${id} stayed pending`);
}

// deno-lint-ignore no-explicit-any
async function historyOf(server: DriverServer, id: string, query = ""): Promise<any> {
  const res = await call(server, `/datasets/${id}/history/${query}`);
  const text = await res.text();
  assertEquals(res.status, 200, text);
  return JSON.parse(text);
}

/** RFC 4180 rows (the exports end lines with CRLF). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      row.push(cell);
      cell = "";
    } else if (c === "\r" && text[i + 1] === "\n") {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = "";
      i++;
    } else cell += c;
  }
  return rows;
}

/** A CSV cell read back as the JSON value: empty → null, a number → its double. */
function value(cell: string): number | string | null {
  if (cell === "") return null;
  const n = Number(cell);
  return Number.isNaN(n) ? cell : n;
}

async function csvOf(server: DriverServer, path: string, filename: string) {
  const res = await call(server, path);
  const text = await res.text();
  assertEquals(res.status, 200, text);
  assertEquals(res.headers.get("content-type"), "text/csv; charset=utf-8");
  assertEquals(res.headers.get("content-disposition"), `attachment; filename="${filename}"`);
  const [header, ...rows] = parseCsv(text);
  return { header, rows, response: res };
}

const lines = (text: string) => text.trimEnd().split("\n").length - 1;

driverTest(
  "three deliveries make a history of three; the same bytes add none; changes, provisional dates and exports",
  async (server) => {
    const id = "nightly";
    const files: GrowingOptions[] = [
      { days: 8 },
      { days: 9, restated: true, switched: true },
      { days: 10, restated: true, switched: true, incompleteLast: true },
    ];
    const texts = files.map(growingCsv);
    const etags: string[] = [];
    // Night 1 by direct upload, night 2 by the two-step route (hashed while analysed), night 3 direct.
    etags.push(await upload(server, id, texts[0]));
    const first = await ready(server, id, etags[0]);
    assertEquals(first.changes, null);
    assertEquals(first.dimensions.map((d: { name: string }) => d.name), ["device"]);
    assertEquals((await historyOf(server, id)).snapshots.length, 1);

    etags.push(await twoStep(server, id, texts[1]));
    const second = await ready(server, id, etags[1]);
    assertEquals(second.changes, {
      previous_etag: etags[0],
      previous_delivered_at: first.dataset.delivered_at,
      rows_added: lines(texts[1]) - lines(texts[0]),
      users_added: 120, // the new date's
      users_switched_variant: 1,
      users_vanished: 0,
      restated_dates: [dateOf(3)],
      provisional_date: null,
    });
    assert(
      second.warnings.includes(
        "Since the previous delivery, 1 user is in another variant than before",
      ),
    );
    assert(
      second.warnings.some((w: string) =>
        w.startsWith("History restated: the row counts of 1 past date")
      ),
    );
    assert(second.daily.every((d: { provisional?: boolean }) => d.provisional === undefined));

    etags.push(await upload(server, id, texts[2]));
    const third = await ready(server, id, etags[2]);
    assertEquals(third.changes.users_added, 24); // a fifth of 120
    assertEquals(third.changes.users_switched_variant, 0);
    assertEquals(third.changes.restated_dates, []);
    assertEquals(third.changes.provisional_date, dateOf(10));
    assertEquals(third.daily.at(-1), {
      ...third.daily.at(-1),
      date: dateOf(10),
      provisional: true,
    });
    // The rate leaves the provisional date out: 60 new users a date in each variant.
    assertEquals(third.sample.users_per_day, 60);

    // The same bytes again: a new delivery (a new ETag on local storage), no new snapshot.
    let again = await upload(server, id, texts[2]);
    const rerun = await ready(server, id, again);
    assertEquals(rerun.changes, third.changes);
    // And by the two-step route, hashed while analysed: the same content, no new snapshot.
    again = await twoStep(server, id, texts[2]);
    assertEquals((await ready(server, id, again)).changes, third.changes);
    let history = await historyOf(server, id);
    assertEquals(history.snapshots.length, 3);
    assertEquals(history.next_cursor, null);
    assertEquals(history.snapshots.map((s: { etag: string }) => s.etag), etags);
    assertEquals(history.snapshots.map((s: { rows: number }) => s.rows), texts.map(lines));
    assertEquals(history.snapshots[0].changes, null);
    assertEquals(history.snapshots[1].changes, second.changes);
    assertEquals(history.snapshots[2].changes, third.changes);
    const [s3] = history.snapshots.slice(2);
    assertEquals(s3.delivered_at, third.dataset.delivered_at);
    assertEquals(s3.srm_p_value, third.srm.p_value);
    assertEquals(s3.variants, third.variants);
    for (const m of third.metrics) {
      const kept = s3.metrics.find((x: { name: string }) => x.name === m.name);
      for (const c of m.comparisons) {
        const k = kept.comparisons.find((x: { name: string }) => x.name === c.name);
        assertEquals(k.lift, c.lift);
        assertEquals(k.ci, c.ci);
        assertEquals(k.sequential_ci, c.sequential_ci);
        assertEquals(k.p_value, c.p_value);
        assertEquals(k.chance_to_beat_control, c.chance_to_beat_control);
      }
    }

    // Pages of one, oldest first; a cursor is the history's own.
    const one = await historyOf(server, id, "?limit=1");
    assertEquals(one.snapshots.map((s: { etag: string }) => s.etag), [etags[0]]);
    const two = await historyOf(server, id, `?limit=1&cursor=${one.next_cursor}`);
    assertEquals(two.snapshots.map((s: { etag: string }) => s.etag), [etags[1]]);
    const rest = await historyOf(server, id, `?limit=5&cursor=${two.next_cursor}`);
    assertEquals(rest.snapshots.map((s: { etag: string }) => s.etag), [etags[2]]);
    assertEquals(rest.next_cursor, null);
    await upload(server, "other", texts[0]);
    await assertApiError(
      await call(server, `/datasets/other/history/?cursor=${one.next_cursor}`),
      400,
      "invalid_json",
    );
    await assertApiError(
      await call(server, `/datasets/${id}/history/?format=xml`),
      400,
      "invalid_json",
    );
    // A list cursor is no history cursor, and the other way round.
    await assertApiError(
      await call(server, `/datasets/?cursor=${one.next_cursor}`),
      400,
      "invalid_json",
    );

    // Settings: too_early until 11 dates; a re-run of the same content replaces the latest figures.
    const put = await call(server, `/datasets/${id}/settings/`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ min_days: 11, key_metric: "revenue" }),
    });
    assertEquals(put.status, 200, await put.text());
    let waited = await ready(server, id, again);
    const deadline = Date.now() + 20_000;
    while (waited.key_metric !== "revenue" && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      waited = await ready(server, id, again);
    }
    assertEquals(waited.too_early, true);
    const key = waited.metrics.find((m: { name: string }) => m.name === "revenue");
    assert(key.comparisons.every((c: { decision: string }) => c.decision === "too_early"));
    history = await historyOf(server, id);
    assertEquals(history.snapshots.length, 3);
    assertEquals(history.snapshots[2].key_metric, "revenue");
    assertEquals(history.snapshots[2].etag, etags[2]);
    assertEquals(
      history.snapshots[2].metrics.find((m: { name: string }) => m.name === "revenue")
        .comparisons[0].decision,
      "too_early",
    );

    // The analysis as CSV: one row per metric × variant, every number the JSON's.
    const analysis = await csvOf(
      server,
      `/datasets/${id}/analysis/?format=csv`,
      `${id}-analysis.csv`,
    );
    assertEquals(analysis.header, [...ANALYSIS_CSV_COLUMNS]);
    assertEquals(analysis.response.headers.get("x-analysis-status"), "ready");
    assertEquals(analysis.rows.length, waited.metrics.length * waited.variants.length);
    let r = 0;
    for (const m of waited.metrics) {
      for (const v of m.variants) {
        const row = Object.fromEntries(
          analysis.header.map((h, i) => [h, value(analysis.rows[r][i])]),
        );
        r++;
        const c = m.comparisons.find((x: { name: string }) => x.name === v.name);
        assertEquals(row.metric, m.name);
        assertEquals(row.variant, v.name);
        assertEquals(row.users, v.users);
        assertEquals(row.mean, v.mean);
        assertEquals(row.lift, c?.lift ?? null);
        assertEquals(row.lift_se, c?.lift_se ?? null);
        assertEquals([row.ci_low, row.ci_high], c ? c.ci : [null, null]);
        assertEquals(row.p_value, c?.p_value ?? null);
        assertEquals(row.p_value_adjusted, c?.p_value_adjusted ?? null);
        assertEquals(
          [row.sequential_ci_low, row.sequential_ci_high],
          c ? c.sequential_ci : [null, null],
        );
        assertEquals(row.sequential_p_value, c?.sequential_p_value ?? null);
        assertEquals(row.chance_to_beat_control, c?.chance_to_beat_control ?? null);
        assertEquals(row.decision, c?.decision ?? null);
      }
    }
    // The history as CSV: per snapshot, one row per metric × variant.
    const exported = await csvOf(
      server,
      `/datasets/${id}/history/?format=csv`,
      `${id}-history.csv`,
    );
    assertEquals(exported.header, [...HISTORY_CSV_COLUMNS]);
    let h = 0;
    for (const s of history.snapshots) {
      for (const m of s.metrics) {
        for (const v of s.variants) {
          const row = Object.fromEntries(
            exported.header.map((x, i) => [x, value(exported.rows[h][i])]),
          );
          h++;
          const c = m.comparisons.find((x: { name: string }) => x.name === v.name);
          assertEquals(
            [row.delivered_at, row.etag, row.analysed_at, row.rows, row.srm_p_value],
            [s.delivered_at, s.etag, s.analysed_at, s.rows, s.srm_p_value],
          );
          assertEquals([row.metric, row.variant, row.users], [m.name, v.name, v.users]);
          assertEquals(
            [row.lift, row.ci_low, row.ci_high],
            c ? [c.lift, ...c.ci] : [null, null, null],
          );
          assertEquals(
            [row.sequential_ci_low, row.sequential_ci_high, row.p_value],
            c ? [...c.sequential_ci, c.p_value] : [null, null, null],
          );
          assertEquals(row.chance_to_beat_control, c?.chance_to_beat_control ?? null);
          assertEquals(row.decision, c?.decision ?? null);
        }
      }
    }
    assertEquals(h, exported.rows.length);

    // Deleting the dataset removes its history; a new delivery starts one afresh.
    const removed = await call(server, `/datasets/${id}/`, { method: "DELETE" });
    assertEquals(removed.status, 200);
    await removed.body?.cancel();
    await assertApiError(await call(server, `/datasets/${id}/history/`), 404, "not_found");
    await assertApiError(
      await call(server, `/datasets/${id}/history/?format=csv`),
      404,
      "not_found",
    );
    const fresh = await upload(server, id, texts[1]);
    assertEquals((await ready(server, id, fresh)).changes, null);
    assertEquals((await historyOf(server, id)).snapshots.length, 1);
  },
);

driverTest(
  "a file whose one dimension value is broken flags that value alone, as SciPy computes",
  async (server) => {
    const etag = await upload(server, "health", healthCsv());
    const a = await ready(server, "health", etag);
    const [country, city] = a.dimensions;
    assertEquals(city, { name: "city", distinct_values: 60, skipped: true });
    assertEquals(country.threshold, 0.001 / 5);
    for (const v of country.values) {
      const [chi, p] = SCIPY[v.value];
      assert(Math.abs(v.srm.chi_square - chi) <= 1e-12 * Math.max(1, chi), `${v.value} chi²`);
      assert(Math.abs(v.srm.p_value - p) <= 1e-9 * p, `${v.value} p`);
      assertEquals(v.srm.mismatch, v.value === "FR");
    }
    assert(
      a.warnings.some((w: string) =>
        w.startsWith('Sample ratio mismatch within dimension "country": FR ')
      ),
    );
    // A history without a dataset of the organization's: 404; with one not yet analysed: none.
    await assertApiError(await call(server, "/datasets/never/history/"), 404, "not_found");
  },
);

driverTest(
  "history and exports stay within the organization: the same experiment id elsewhere is another history",
  async (server) => {
    const other = await server.newOrg("other");
    const asOther = (path: string) =>
      fetch(`${server.api}${path}`, { headers: { authorization: `Bearer ${other.apiKey}` } });
    const ours = [growingCsv({ days: 8 }), growingCsv({ days: 9 })];
    const etags: string[] = [];
    for (const text of ours) {
      const etag = await upload(server, "shared", text);
      await ready(server, "shared", etag);
      etags.push(etag);
    }
    const theirs = await fetch(`${server.api}/datasets/upload/?experiment_id=shared`, {
      method: "POST",
      headers: { authorization: `Bearer ${other.apiKey}`, "content-type": "text/csv" },
      body: enc.encode(growingCsv({ days: 5 })),
    });
    assertEquals(theirs.status, 201);
    const theirEtag = (await theirs.json()).etag;
    let theirHistory;
    const deadline = Date.now() + 30_000;
    do {
      await new Promise((r) => setTimeout(r, 100));
      theirHistory = await (await asOther("/datasets/shared/history/")).json();
    } while (theirHistory.snapshots?.length !== 1 && Date.now() < deadline);
    assertEquals(theirHistory.snapshots.map((s: { etag: string }) => s.etag), [theirEtag]);
    assertEquals(
      (await historyOf(server, "shared")).snapshots.map((s: { etag: string }) => s.etag),
      etags,
    );
    // Their CSV holds their one delivery only; ours both of ours.
    const theirCsv = await (await asOther("/datasets/shared/history/?format=csv")).text();
    assert(theirCsv.includes(theirEtag) && !etags.some((etag) => theirCsv.includes(etag)));
    const ourCsv = await csvOf(
      server,
      "/datasets/shared/history/?format=csv",
      "shared-history.csv",
    );
    const etagColumn = ourCsv.header.indexOf("etag");
    assert(etagColumn >= 0, ourCsv.header.join(","));
    assertEquals([...new Set(ourCsv.rows.map((row) => row[etagColumn]))], etags);
    // An experiment of ours alone is not found by them, in JSON or CSV.
    await upload(server, "ours_only", ours[0]);
    for (
      const path of [
        "/datasets/ours_only/history/",
        "/datasets/ours_only/history/?format=csv",
        "/datasets/ours_only/analysis/?format=csv",
      ]
    ) {
      await assertApiError(await asOther(path), 404, "not_found");
    }
  },
);
