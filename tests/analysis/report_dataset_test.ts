/**
 * A whole analysis of a small file, through `aggregateCsv` and `buildReport`, against NumPy 2.4
 * and SciPy 1.17.1 reading the same file (Python's `csv` module, per user: max of converted, sums
 * of revenue and of revenue_pre).
 *
 * tests/testdata/heavy_tail.csv: 900 users, 1 803 rows, A and B alternating; per user a
 * Pareto(1.6)-tailed revenue spread over 1–3 rows (B 6 % higher), revenue_pre ≈ 0.9 × that with
 * lognormal noise on the user's first row (missing for every 17th user, so x = 0), written by
 * `numpy.random.default_rng(99)`. The reference: cap = np.quantile(per-user revenue, 0.99); y and
 * x capped at it; θ = np.cov(X, Y)[0, 1] / np.var(X, ddof=1) over both arms; adjusted means
 * y.mean() − θ (x.mean() − X.mean()) and variances np.var(y − θ x, ddof=1); then the formulas of
 * inference_test.ts (SciPy's `t.ppf`, `t.sf` and Welch df).
 */
import assert from "node:assert/strict";
import { aggregateCsv } from "../../src/analysis/aggregate/aggregate.ts";
import { buildReport } from "../../src/analysis/report.ts";

function assertClose(actual: unknown, expected: number, relative = 1e-10): void {
  assert.ok(
    typeof actual === "number" && Math.abs(actual - expected) <= relative * Math.abs(expected),
    `expected ${expected}, got ${actual}`,
  );
}

const FILE = new URL("../testdata/heavy_tail.csv", import.meta.url);

Deno.test("a heavy-tailed metric capped at 0.99 and adjusted by its _pre column", async () => {
  const settings = { key_metric: "revenue", winsorize: { revenue: 0.99 } };
  const file = await Deno.open(FILE);
  const aggregate = await aggregateCsv(file.readable, settings);
  const report = buildReport(aggregate, settings);

  assert.deepEqual(report.metrics.map((m) => m.name), ["converted", "revenue"]);
  const revenue = report.metrics[1];
  assert.equal(revenue.covariate, "revenue_pre");
  assert.equal(revenue.winsorized?.percentile, 0.99);
  assertClose(revenue.winsorized?.cap, 124.80819999999989, 1e-13); // the largest user: 607.4
  assert.deepEqual(revenue.variants.map((v) => v.users), [450, 450]);
  assertClose(revenue.variants[0].mean, 8699.2428 / 450, 1e-13);
  assertClose(revenue.variants[1].mean, 8784.471000000001 / 450, 1e-13);
  // Capping cut A's variance from 1225.67 to 369.12.
  assertClose(revenue.variants[0].variance, 369.1237656455339, 1e-11);

  const [b] = revenue.comparisons;
  assert.equal(b.cuped?.covariate, "revenue_pre");
  assertClose(b.cuped?.theta, 0.9763394647425468);
  assertClose(b.cuped?.variance_reduction, 0.8795761499936077);
  assert.ok(b.cuped!.variance_reduction > 0.5);
  assertClose(b.lift, -0.012582446643584998, 1e-9);
  assertClose(b.lift_se, 0.023479913074990824);
  assertClose(b.ci?.[0], -0.05866773576246975, 1e-9);
  assertClose(b.ci?.[1], 0.03350284247529975);
  assertClose(b.p_value, 0.5921805236225871);
  assertClose(b.sequential_ci?.[0], -0.09287576792241574);
  assertClose(b.sequential_ci?.[1], 0.06771087463524574);
  assert.equal(b.sequential_p_value, 1);
  assert.equal(b.decision, "inconclusive");
  // The chance to beat the control and the interval shown there use the same statistics.
  const winB = report.win_probability.variants[1];
  assert.equal(winB.lift, b.lift);
  assert.deepEqual(winB.lift_ci95, b.ci);
  assert.ok(winB.chance_to_beat_control! < 0.5);

  const [convertedB] = report.metrics[0].comparisons;
  assertClose(convertedB.lift, 0.13658536585365857);
  assertClose(convertedB.ci?.[0], -0.016926010301684613);
  assertClose(convertedB.ci?.[1], 0.29009674200900176);
  assertClose(convertedB.p_value, 0.08111572805859613);
  assertClose(convertedB.sequential_p_value, 0.635599183198219);
  assert.equal(convertedB.cuped, null);

  // The daily key-metric means end at the capped means.
  const last = report.daily[report.daily.length - 1];
  assertClose(last.variants[0].mean, 8699.2428 / 450, 1e-12);
  assertClose(last.variants[1].mean, 8784.471000000001 / 450, 1e-12);
  assert.deepEqual(JSON.parse(JSON.stringify(report)), report);
});
