/**
 * The analysis end to end: deliveries by both routes, then `GET …/analysis/` against numbers
 * this test computes itself from the same CSV with plain code (Map per user, closed forms).
 */
import { assert, assertApiError, assertEquals } from "../_assert.ts";
import { deliverTwoStep, driverTest, driverTestWithRgw } from "../_drivers.ts";
import type { DriverServer } from "../_drivers.ts";
import { generateCsv } from "../../bench/generate_csv.ts";

const Z_975 = 1.959963984540054; // Φ⁻¹(0.975)
const Z_80 = 0.8416212335729143; // Φ⁻¹(0.8)

/** erfc by the continued fraction of Numerical Recipes 6.2 (relative error < 1.2e-7). */
function erfc(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const r = t * Math.exp(
    -z * z - 1.26551223 +
      t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 +
                          t *
                            (-1.13520398 +
                              t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
  );
  return x >= 0 ? r : 2 - r;
}
const phi = (z: number) => 0.5 * erfc(-z / Math.SQRT2);

async function bytesOf(rows: number, seed: number, variants = ["A", "B"]) {
  const parts: Uint8Array[] = [];
  for await (const c of generateCsv({ rows, seed, variants, days: 10 })) parts.push(c);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** The reference: per user (max of converted, sum of revenue), per variant, per first date. */
function reference(csv: Uint8Array) {
  const lines = new TextDecoder().decode(csv).trim().split("\n").slice(1);
  const users = new Map<string, { v: string; first: string; conv: number; rev: number }>();
  for (const line of lines) {
    const [id, v, date, c, r] = line.split(",");
    const u = users.get(id);
    if (!u) users.set(id, { v, first: date, conv: Number(c), rev: Number(r) });
    else {
      assertEquals(u.v, v); // the generator keeps a user in one variant
      u.conv = Math.max(u.conv, Number(c));
      u.rev += Number(r);
      if (date < u.first) u.first = date;
    }
  }
  const per = new Map<string, { n: number; conv: number; byDate: Map<string, number> }>();
  for (const u of users.values()) {
    const p = per.get(u.v) ?? { n: 0, conv: 0, byDate: new Map() };
    p.n++;
    p.conv += u.conv;
    p.byDate.set(u.first, (p.byDate.get(u.first) ?? 0) + 1);
    per.set(u.v, p);
  }
  return { rows: lines.length, per };
}

async function analysisOf(server: DriverServer, id: string, apiKey = server.apiKey) {
  return await fetch(`${server.api}/datasets/${id}/analysis/`, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
}

async function ready(server: DriverServer, id: string, etag?: string) {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const res = await analysisOf(server, id);
    const body = await res.json();
    if (body.status !== "pending" && (!etag || body.dataset?.etag === etag)) return body;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`analysis of ${id} stayed pending`);
}

/** Polls `id`'s analysis until it is ready with `control` as its control (a settings re-run). */
async function readyWithControl(server: DriverServer, id: string, control: string) {
  const deadline = Date.now() + 10_000;
  let analysis;
  do {
    analysis = await (await analysisOf(server, id)).json();
    if (analysis.status === "ready" && analysis.control === control) break;
    await new Promise((r) => setTimeout(r, 100));
  } while (Date.now() < deadline);
  assertEquals(analysis.control, control);
  return analysis;
}

function upload(server: DriverServer, id: string, body: Uint8Array<ArrayBuffer>) {
  return fetch(`${server.api}/datasets/upload/?experiment_id=${id}`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "text/csv" },
    body,
  });
}

driverTestWithRgw(
  "a direct upload is analysed: users, SRM, target, chances and daily series match an independent computation",
  async (server) => {
    const csv = await bytesOf(30_000, 7);
    const res = await upload(server, "exp", csv);
    assertEquals(res.status, 201);
    const { etag } = await res.json();
    const a = await ready(server, "exp", etag);
    assertEquals(a.status, "ready", a.error);
    assertEquals(a.error, null);
    const ref = reference(csv);
    assertEquals(a.dataset.rows, ref.rows);
    assertEquals(a.dataset.size_bytes, csv.length);
    assertEquals(a.control, "A");
    assertEquals(a.key_metric, "converted");
    const nA = ref.per.get("A")!.n, nB = ref.per.get("B")!.n;
    assertEquals(a.variants, [{ name: "A", users: nA }, { name: "B", users: nB }]);

    // SRM, df = 1: chi² = Σ (o − e)² / e, p = erfc(√(chi²/2)).
    const e = (nA + nB) / 2;
    const chi = ((nA - e) ** 2 + (nB - e) ** 2) / e;
    assert(Math.abs(a.srm.chi_square - chi) < 1e-9 * Math.max(1, chi));
    assert(Math.abs(a.srm.p_value - erfc(Math.sqrt(chi / 2))) < 1e-6);
    assertEquals(a.srm.mismatch, false);
    assertEquals(a.srm.enough_data, true);

    // Target: Evan Miller's formula on the control's conversion, MDE 5 % relative.
    const p1 = ref.per.get("A")!.conv / nA;
    const p2 = p1 * 1.05;
    const d = p2 - p1;
    const n =
      (Z_975 * Math.sqrt(2 * p1 * (1 - p1)) + Z_80 * Math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))) **
        2 /
      d ** 2;
    assertEquals(a.sample.target_users_per_variant, Math.ceil(n));
    assertEquals(a.sample.total_users, nA + nB);
    assert(Math.abs(a.sample.percent_of_target - 100 * Math.min(nA, nB) / Math.ceil(n)) < 1e-9);

    // Chance to beat control: normal approximation of the two Beta posteriors (n is large).
    const post = (conv: number, users: number) => {
      const al = 1 + conv, be = 1 + users - conv;
      return { m: al / (al + be), v: al * be / ((al + be) ** 2 * (al + be + 1)) };
    };
    const A = post(ref.per.get("A")!.conv, nA), B = post(ref.per.get("B")!.conv, nB);
    const approx = phi((B.m - A.m) / Math.sqrt(A.v + B.v));
    const b = a.win_probability.variants.find((v: { name: string }) => v.name === "B");
    const ctrl = a.win_probability.variants.find((v: { name: string }) => v.name === "A");
    assertEquals(ctrl.chance_to_beat_control, null);
    assert(
      Math.abs(b.chance_to_beat_control - approx) < 0.01,
      `${b.chance_to_beat_control} vs ${approx}`,
    );
    assert(Math.abs(b.chance_to_be_best + ctrl.chance_to_be_best - 1) < 1e-6);
    assert(Math.abs(b.lift - ((ref.per.get("B")!.conv / nB) / p1 - 1)) < 1e-9);
    assert(b.lift_ci95[0] < b.lift && b.lift < b.lift_ci95[1]);

    // Daily: cumulative users by first date.
    const dates = [...new Set([...ref.per.values()].flatMap((p) => [...p.byDate.keys()]))].sort();
    assertEquals(a.daily.map((x: { date: string }) => x.date), dates);
    for (const [i, date] of dates.entries()) {
      for (const v of ["A", "B"]) {
        let cum = 0;
        for (const [d2, k] of ref.per.get(v)!.byDate) if (d2 <= date) cum += k;
        const point = a.daily[i].variants.find((x: { name: string }) => x.name === v);
        assertEquals(point.cumulative_users, cum);
      }
    }
    const last = a.daily[a.daily.length - 1].variants.find((x: { name: string }) => x.name === "A");
    assert(Math.abs(last.mean - p1) < 1e-12);
  },
);

driverTest(
  "a re-delivery replaces the result and a settings change re-runs the analysis",
  async (server) => {
    const first = await upload(server, "exp", await bytesOf(4000, 1));
    const r1 = await ready(server, "exp", (await first.json()).etag);
    const csv2 = await bytesOf(6000, 2, ["A", "B", "C"]);
    const second = await upload(server, "exp", csv2);
    const r2 = await ready(server, "exp", (await second.json()).etag);
    assert(r1.dataset.etag !== r2.dataset.etag);
    assertEquals(r2.variants.map((v: { name: string }) => v.name), ["A", "B", "C"]);
    assertEquals(r2.dataset.rows, 6000);
    assertEquals(r2.win_probability.variants.length, 3);
    const best = r2.win_probability.variants.reduce(
      (s: number, v: { chance_to_be_best: number }) => s + v.chance_to_be_best,
      0,
    );
    assert(Math.abs(best - 1) < 0.005);

    const put = await fetch(`${server.api}/datasets/exp/settings/`, {
      method: "PUT",
      headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ control: "B", target_users_per_variant: 100 }),
    });
    assertEquals(put.status, 200, await put.text());
    const r3 = await readyWithControl(server, "exp", "B");
    assertEquals(r3.sample.target_users_per_variant, 100);
    assertEquals(
      r3.win_probability.variants.find((v: { name: string }) => v.name === "B")
        .chance_to_beat_control,
      null,
    );
    const bad = await fetch(`${server.api}/datasets/exp/settings/`, {
      method: "PUT",
      headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ key_metric: "nope" }),
    });
    await assertApiError(bad, 400, "invalid_settings");
    const split = await fetch(`${server.api}/datasets/exp/settings/`, {
      method: "PUT",
      headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ expected_split: { A: 0.5, B: 0.6 } }),
    });
    await assertApiError(split, 400, "invalid_settings");
  },
);

driverTest(
  "settings sent right after a two-step delivery are checked against its data",
  async (server) => {
    // The scan never comes within the test: the PUT itself has the delivery analysed, waits for
    // it and checks the settings against its variants and metrics.
    await deliverTwoStep(server, "fresh", await bytesOf(2000, 3));
    const put = (settings: Record<string, unknown>) =>
      fetch(`${server.api}/datasets/fresh/settings/`, {
        method: "PUT",
        headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify(settings),
      });
    const control = await assertApiError(await put({ control: "ZZ" }), 400, "invalid_settings");
    assert(control.message.includes("ZZ"), control.message);
    await assertApiError(await put({ key_metric: "nope" }), 400, "invalid_settings");
    const saved = await fetch(`${server.api}/datasets/fresh/settings/`, {
      headers: { authorization: `Bearer ${server.apiKey}` },
    });
    assertEquals(await saved.json(), {});
    const good = await put({ control: "B" });
    assertEquals(good.status, 200, await good.text());
    await readyWithControl(server, "fresh", "B");
  },
  { ABN_SCAN_INTERVAL_SECONDS: "3600" },
);

driverTest(
  "comparisons, CUPED and capping over HTTP; inference settings that do not fit are refused",
  async (server) => {
    const csv = await Deno.readFile(new URL("../testdata/heavy_tail.csv", import.meta.url));
    const res = await upload(server, "heavy", csv);
    assertEquals(res.status, 201);
    const a = await ready(server, "heavy", (await res.json()).etag);
    assertEquals(a.status, "ready", a.error);
    assertEquals(a.analysis_version, 4);
    // The columns as read, the covariate among the numeric ones.
    assertEquals(a.dataset.columns, [
      { name: "converted", kind: "conversion" },
      { name: "revenue", kind: "numeric" },
      { name: "revenue_pre", kind: "numeric" },
    ]);
    assertEquals(a.inference, "sequential");
    assertEquals(a.confidence_level, 0.95);
    assertEquals(a.key_metric, "converted");
    // revenue_pre is revenue's covariate, not a metric.
    assertEquals(a.metrics.map((m: { name: string }) => m.name), ["converted", "revenue"]);
    const [converted, revenue] = a.metrics;
    assertEquals(revenue.covariate, "revenue_pre");
    assertEquals(revenue.winsorized, null);
    assertEquals(revenue.comparisons[0].cuped.covariate, "revenue_pre");
    assert(["better", "worse", "inconclusive"].includes(converted.comparisons[0].decision));
    assertEquals("decision" in revenue.comparisons[0], false);
    const winB = a.win_probability.variants[1];
    assertEquals(winB.lift_ci95, converted.comparisons[0].ci);
    assert(typeof a.sample.users_per_day === "number" && a.sample.users_per_day > 0);

    const put = (body: unknown) =>
      fetch(`${server.api}/datasets/heavy/settings/`, {
        method: "PUT",
        headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const settings = {
      key_metric: "revenue",
      winsorize: { revenue: 0.99 },
      inference: "frequentist",
      sequential_tuning: 2000,
      lower_is_better: ["converted"],
    };
    const saved = await put(settings);
    assertEquals(saved.status, 200, await saved.text());
    const deadline = Date.now() + 10_000;
    let b;
    do {
      b = await (await analysisOf(server, "heavy")).json();
      if (b.status === "ready" && b.key_metric === "revenue") break;
      await new Promise((r) => setTimeout(r, 100));
    } while (Date.now() < deadline);
    assertEquals(b.key_metric, "revenue");
    assertEquals(b.inference, "frequentist");
    // The cap NumPy computes for this file (tests/analysis/report_dataset_test.ts).
    assert(Math.abs(b.metrics[1].winsorized.cap - 124.80819999999989) < 1e-9);
    assert(typeof b.metrics[1].comparisons[0].decision === "string");
    assertEquals("decision" in b.metrics[0].comparisons[0], false);
    const got = await fetch(`${server.api}/datasets/heavy/settings/`, {
      headers: { authorization: `Bearer ${server.apiKey}` },
    });
    assertEquals(await got.json(), settings);

    const refused: [unknown, RegExp][] = [
      [{ winsorize: { converted: 0.99 } }, /conversion metric; only numeric metrics are capped/],
      [{ winsorize: { revenue: 1 } }, /in \(0\.5, 1\), got 1/],
      [{ covariates: { revenue: "nope" } }, /"nope", which is not a column of numbers/],
      [{ key_metric: "revenue_pre" }, /"revenue_pre", which is the covariate of "revenue"/],
      [{ sequential_tuning: 0 }, /sequential_tuning must be a number above 0/],
      [{ lower_is_better: ["clicks"] }, /lower_is_better names "clicks"/],
      [{ inference: "bayes" }, /inference must be one of/],
    ];
    for (const [body, message] of refused) {
      const error = await assertApiError(await put(body), 400, "invalid_settings");
      assert(message.test(error.message), error.message);
    }
  },
);

driverTest(
  "a two-step delivery over 1 MiB, read on two threads, gets the same answer as an upload",
  async (server) => {
    // 40,000 users in two rows each (~1.5 MB); the broken copy ends with a February 30.
    let text = "user_id,variant,date,converted,revenue\n";
    for (let i = 0; i < 40_000; i++) {
      const variant = i % 2 === 0 ? "A" : "B";
      text += `user-${i},${variant},2026-01-01,0,0\nuser-${i},${variant},2026-01-02,${
        i % 5 === 0 ? 1 : 0
      },2.5\n`;
    }
    const good = new TextEncoder().encode(text);
    const bad = new TextEncoder().encode(text + "late,A,2026-02-30,1,1\n");
    assert(good.length > 1024 * 1024);
    const refused = await upload(server, "direct", bad);
    const message = (await assertApiError(refused, 400, "invalid_date")).message;
    assert(message.includes("line 80002"), message);
    const analysed = new Map<string, Record<string, unknown>>();
    for (const [id, body] of [["good", good], ["bad", bad]] as const) {
      await deliverTwoStep(server, id, body);
      analysed.set(id, await ready(server, id));
    }
    const a = analysed.get("good")!;
    assertEquals(a.status, "ready", JSON.stringify(a.error));
    assertEquals((a.dataset as { rows: number }).rows, 80_000);
    const b = analysed.get("bad")!;
    assertEquals(b.status, "failed");
    assertEquals(b.error, message);
  },
  { ABN_SCAN_INTERVAL_SECONDS: "1" },
);

driverTest(
  "a two-step delivery that fails the checks is analysed as failed with the upload's message",
  async (server) => {
    const body = new TextEncoder().encode(
      "user_id,variant,date,m\nu1,A,2026-01-01,1\nu2,B,2026-02-30,0\n",
    );
    const direct = await upload(server, "direct", body);
    const message = (await assertApiError(direct, 400, "invalid_date")).message;
    await deliverTwoStep(server, "twostep", body);
    const a = await ready(server, "twostep");
    assertEquals(a.status, "failed");
    assertEquals(a.error, message);
    await assertApiError(await analysisOf(server, "missing"), 404, "not_found");
    const other = await server.newOrg("other");
    await assertApiError(await analysisOf(server, "twostep", other.apiKey), 404, "not_found");
  },
  { ABN_SCAN_INTERVAL_SECONDS: "1" },
);
