/**
 * Dimension health in the report, on files aggregated by the engine: the per-value SRM against
 * SciPy, the Bonferroni threshold, the 1 % pooling and the 50-value rule, the key metric per value.
 *
 * Reference values: SciPy 1.17.1 / NumPy 2.4.6, computed once with
 *   scipy.stats.chisquare([a, b])  → statistic, pvalue (equal expected shares)
 * and for NL's key metric the comparison formulas of docs/api.md with scipy.stats.t (ppf, sf):
 *   ma, mb = 100/1000, 121/1012; v = m(1 − m) n/(n − 1); lift = (mb − ma)/ma;
 *   V = vb/(ma² nb) + va mb²/(ma⁴ na); Welch df; ci = lift ± t.ppf(0.975, df) √V;
 *   p = 2 t.sf(|lift|/√V, df).
 */
import assert from "node:assert/strict";
import { aggregateCsv } from "../../src/analysis/aggregate/aggregate.ts";
import { buildReport } from "../../src/analysis/report.ts";
import type { Settings } from "../../src/analysis/settings.ts";
import { healthCsv, SCIPY } from "./_health_csv.ts";

function close(actual: unknown, expected: number, relative = 1e-9): void {
  assert.ok(
    typeof actual === "number" &&
      Math.abs(actual - expected) <= relative * Math.max(Math.abs(expected), 1e-300),
    `expected ${expected}, got ${actual}`,
  );
}

async function reportOf(text: string, settings: Settings = {}) {
  const bytes = new TextEncoder().encode(text);
  const aggregate = await aggregateCsv(ReadableStream.from([bytes]), {
    keyMetric: settings.key_metric,
  });
  return buildReport(aggregate, settings);
}

Deno.test("dimension health flags the one broken value against SciPy's chi-square, Bonferroni-corrected", async () => {
  const report = await reportOf(healthCsv());
  const [country, city] = report.dimensions;
  assert.equal(country.name, "country");
  assert.equal(country.distinct_values, 6);
  assert.equal(country.skipped, false);
  // Five values tested after pooling: 0.001 / 5.
  close(country.threshold, 0.0002);
  const values = country.values!;
  assert.deepEqual(values.map((v) => [v.value, v.users]), [
    ["NL", 2012],
    ["DE", 1590],
    ["BE", 1020],
    ["FR", 1000],
    ["(other)", 39],
  ]);
  assert.deepEqual(values[4].pooled_values, ["LU", "MT"]);
  for (const v of values) {
    const [chi, p] = SCIPY[v.value];
    close(v.srm.chi_square, chi, 1e-12);
    close(v.srm.p_value, p, 1e-9);
    assert.equal(v.srm.mismatch, v.value === "FR", v.value);
    assert.equal(v.srm.enough_data, true);
  }
  assert.deepEqual(
    report.warnings.filter((w) => w.includes("within dimension")),
    [
      'Sample ratio mismatch within dimension "country": FR (p = 2.54e-10) below the ' +
      "Bonferroni threshold 0.000200 (0.001 ÷ 5 values)",
    ],
  );
  // The whole experiment's split is not flagged (p = 0.0200 by SciPy).
  assert.equal(report.srm.mismatch, false);
  close(report.srm.p_value, 0.02002376243360836, 1e-9);

  // The key metric per value: NL's users, means and lift with its fixed-horizon interval.
  assert.equal(country.key_metric, "converted");
  const nl = values[0];
  assert.deepEqual(nl.variants, [
    { name: "A", users: 1000, metric_users: 1000, mean: 0.1 },
    { name: "B", users: 1012, metric_users: 1012, mean: 121 / 1012 },
  ]);
  const [b] = nl.key_metric;
  assert.equal(b.name, "B");
  close(b.lift, 0.19565217391304346, 1e-12);
  close(b.ci![0], -0.10365003014034813, 1e-9);
  close(b.ci![1], 0.49495437796643504, 1e-9);
  close(b.p_value, 0.1999936537535158, 1e-9);

  // city has 60 values: listed as skipped with its count, not broken down.
  assert.deepEqual(city, { name: "city", distinct_values: 60, skipped: true });
});

Deno.test("dimension health pools values under 1 % of the users and names users with several values", async () => {
  // 200 users: x and y at 99 each, z at 2 (exactly 1 %: kept), w on one row of a user first in x.
  let text = "user_id,variant,date,converted,d\n";
  for (let i = 0; i < 200; i++) {
    const value = i < 99 ? "x" : i < 198 ? "y" : "z";
    text += `u${i},${i % 2 ? "B" : "A"},2026-01-01,0,${value}\n`;
  }
  text += "u0,A,2026-01-02,1,w\n";
  const report = await reportOf(text);
  const [d] = report.dimensions;
  assert.deepEqual(d.values!.map((v) => [v.value, v.users]), [
    ["x", 99],
    ["y", 99],
    ["z", 2],
    ["(other)", 0],
  ]);
  assert.deepEqual(d.values![3].pooled_values, ["w"]);
  assert.equal(d.inconsistent_users, 1);
  assert.ok(
    report.warnings.includes(
      'Dimension "d": 1 user\'s rows hold more than one value; each user counts under the ' +
        "value of their first row",
    ),
    report.warnings.join("\n"),
  );
  // Too few users in z and (other) for a split test: not flagged.
  assert.equal(d.values![2].srm.enough_data, false);
  assert.equal(d.values![2].srm.mismatch, false);
});

Deno.test("dimension health tests each value against the settings' expected split", async () => {
  // 300 users, two thirds in A: a mismatch for equal shares, none for 2/3 : 1/3.
  let text = "user_id,variant,date,converted,device\n";
  for (let i = 0; i < 300; i++) {
    text += `u${i},${i % 3 ? "A" : "B"},2026-01-01,${i % 4 ? 0 : 1},d${i % 2}\n`;
  }
  const equal = await reportOf(text);
  assert.deepEqual(equal.dimensions[0].values!.map((v) => v.srm.mismatch), [true, true]);
  const split = await reportOf(text, { expected_split: { A: 2 / 3, B: 1 / 3 } });
  assert.deepEqual(split.dimensions[0].values!.map((v) => v.srm.mismatch), [false, false]);
});
