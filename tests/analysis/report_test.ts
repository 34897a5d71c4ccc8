/**
 * The report on hand-built aggregates. Means and variances are worked by hand in the comments;
 * p-values, chances and intervals come from the independent Python 3 computations described in
 * srm_test.ts and win_probability_test.ts (420-digit `decimal` Φ and chi-square closed forms, the
 * exact beta–binomial sum in integers), the comparisons from SciPy 1.17.1 as in inference_test.ts
 * (`t.ppf`, `t.sf`, SciPy's own Welch df), and the target from the sample-size formula evaluated
 * with `statistics.NormalDist` (sample_size_test.ts).
 */

import assert from "node:assert/strict";
import { ServiceError } from "../../src/errors.ts";
import type { Aggregate } from "../../src/analysis/aggregate/aggregate_types.ts";
import { ANALYSIS_VERSION, buildReport } from "../../src/analysis/report.ts";
import { normalCdf } from "../../src/analysis/stats/_math.ts";
import { cupedAdjust } from "../../src/analysis/stats/cuped.ts";

function assertClose(actual: unknown, expected: number, absolute: number): void {
  assert.ok(
    typeof actual === "number" && Math.abs(actual - expected) <= absolute,
    `expected ${expected} ± ${absolute}, got ${actual}`,
  );
}

/**
 * A: 10 users, 2 converted; revenue from 4 users: 1, 2, 3, 4 (sum 10, squares 30).
 * B: 12 users, 6 converted; revenue from 3 users: 2, 4, 6 (sum 12, squares 56).
 * visits: a 0/1 column declared numeric by settings; only A's users have it (3 of 10 at 1).
 * 2 users were seen in both variants and excluded.
 */
function aggregate(): Aggregate {
  return {
    rows: 57,
    variants: ["A", "B"],
    users: { A: 10, B: 12 },
    excludedUsers: 2,
    metrics: [
      { name: "converted", kind: "conversion", detectedKind: "conversion" },
      { name: "revenue", kind: "numeric", detectedKind: "numeric" },
      { name: "visits", kind: "numeric", detectedKind: "conversion" },
    ],
    stats: {
      converted: {
        A: { users: 10, sum: 2, sumSquares: 2 },
        B: { users: 12, sum: 6, sumSquares: 6 },
      },
      revenue: {
        A: { users: 4, sum: 10, sumSquares: 30 },
        B: { users: 3, sum: 12, sumSquares: 56 },
      },
      visits: { A: { users: 10, sum: 3, sumSquares: 3 } },
    },
    covariates: {},
    winsorized: {},
    daily: [
      {
        date: "2024-01-01",
        variants: {
          A: {
            cumulativeUsers: 4,
            metricUsers: { converted: 4, revenue: 2 },
            metricSum: { converted: 1, revenue: 5 },
          },
        },
      },
      {
        date: "2024-01-02",
        variants: {
          A: {
            cumulativeUsers: 10,
            metricUsers: { converted: 10, revenue: 4 },
            metricSum: { converted: 2, revenue: 10 },
          },
          B: {
            cumulativeUsers: 12,
            metricUsers: { converted: 12, revenue: 3 },
            metricSum: { converted: 6, revenue: 12 },
          },
        },
      },
    ],
  };
}

Deno.test("buildReport with default settings fills every field", () => {
  const report = buildReport(aggregate(), { metric_kinds: { visits: "numeric" } });
  assert.deepEqual(Object.keys(report), [
    "analysis_version",
    "dataset",
    "control",
    "key_metric",
    "inference",
    "confidence_level",
    "variants",
    "srm",
    "sample",
    "too_early",
    "metrics",
    "win_probability",
    "daily",
    "dimensions",
    "changes",
    "warnings",
  ]);
  assert.equal(report.analysis_version, ANALYSIS_VERSION);
  // An aggregate without its columns listed: its metrics, detected kinds (visits looks 0/1).
  assert.deepEqual(report.dataset.columns, [
    { name: "converted", kind: "conversion" },
    { name: "revenue", kind: "numeric" },
    { name: "visits", kind: "conversion" },
  ]);
  assert.equal(report.control, "A");
  assert.equal(report.key_metric, "converted");
  assert.equal(report.inference, "sequential");
  assert.equal(report.confidence_level, 0.95);
  assert.deepEqual(report.variants, [{ name: "A", users: 10 }, { name: "B", users: 12 }]);

  // 10 vs 12, E = 11: χ² = 2/11; p = erfc(√(1/11)) = 0.66981535759941653.
  assertClose(report.srm.chi_square, 2 / 11, 1e-15);
  assertClose(report.srm.p_value, 6.6981535759941653e-1, 1e-13);
  assert.equal(report.srm.mismatch, false);
  assert.equal(report.srm.enough_data, true);
  assert.deepEqual(report.srm.expected_split, { A: 0.5, B: 0.5 });

  // Baseline 2/10 = 0.2, MDE 5 % relative: 25255.085181677037 → 25256 per variant. The smallest
  // variant, A, gained 4 then 6 users: 5 a day, so ⌈(25256 − 10) / 5⌉ = 5050 days left.
  assert.deepEqual(report.sample, {
    total_users: 22,
    target_users_per_variant: 25256,
    target_users: 50512,
    percent_of_target: 100 * 10 / 25256,
    users_per_day: 5,
    days_left: 5050,
    days: 2,
  });

  // converted: A mean 0.2, variance 0.2·0.8·10/9; B mean 0.5, variance 0.25·12/11.
  // revenue: A mean 2.5, variance (30 − 25)/3 = 5/3; B mean 4, variance (56 − 48)/2 = 4.
  // visits: A mean 0.3, variance (3 − 0.9)/9 = 7/30; B has no user with a value.
  assert.equal(report.metrics.length, 3);
  const [converted, revenue, visits] = report.metrics;
  assert.equal(converted.name, "converted");
  assert.equal(converted.kind, "conversion");
  assert.deepEqual(converted.variants.map((v) => [v.name, v.users, v.conversions]), [
    ["A", 10, 2],
    ["B", 12, 6],
  ]);
  assertClose(converted.variants[0].mean, 0.2, 1e-15);
  assertClose(converted.variants[0].variance, 0.16 * 10 / 9, 1e-15);
  assertClose(converted.variants[1].mean, 0.5, 1e-15);
  assertClose(converted.variants[1].variance, 0.25 * 12 / 11, 1e-15);
  assert.equal(revenue.kind, "numeric");
  assert.deepEqual([revenue.covariate, revenue.winsorized, revenue.lower_is_better], [
    null,
    null,
    false,
  ]);
  assert.deepEqual(revenue.variants, [
    { name: "A", users: 4, mean: 2.5, variance: 5 / 3 },
    { name: "B", users: 3, mean: 4, variance: 4 },
  ]);
  assert.equal(visits.kind, "numeric");
  assert.equal(visits.variants[0].users, 10);
  assertClose(visits.variants[0].mean, 0.3, 1e-15);
  assertClose(visits.variants[0].variance, 7 / 30, 1e-15);
  assert.equal("conversions" in visits.variants[0], false);
  assert.deepEqual(visits.variants[1], { name: "B", users: 0, mean: null, variance: null });

  // Comparisons (SciPy): converted 0.2 → 0.5 on 10 and 12 users; revenue 2.5 → 4 on 4 and 3.
  const [convertedB] = converted.comparisons;
  assert.equal(convertedB.name, "B");
  assertClose(convertedB.lift, 1.5, 1e-14);
  assertClose(convertedB.lift_se, 1.8291964344923688, 1e-14);
  assertClose(convertedB.ci?.[0], -2.315758615053624, 1e-12);
  assertClose(convertedB.ci?.[1], 5.315758615053624, 1e-12);
  assertClose(convertedB.p_value, 0.4218684878694814, 1e-12);
  assert.equal(convertedB.p_value_adjusted, convertedB.p_value);
  assertClose(convertedB.sequential_ci?.[0], -22.94494483453551, 1e-11);
  assertClose(convertedB.sequential_ci?.[1], 25.94494483453551, 1e-11);
  assert.equal(convertedB.sequential_p_value, 1);
  assert.equal(convertedB.cuped, null);
  assert.equal(convertedB.decision, "inconclusive");
  const [revenueB] = revenue.comparisons;
  assertClose(revenueB.lift, 0.6, 1e-14);
  assertClose(revenueB.lift_se, 0.6196773353931867, 1e-14);
  assertClose(revenueB.ci?.[0], -1.2935559101238114, 1e-12);
  assertClose(revenueB.ci?.[1], 2.4935559101238116, 1e-12);
  assertClose(revenueB.p_value, 0.3996128844871394, 1e-12);
  assertClose(revenueB.sequential_ci?.[0], -13.883130928702764, 1e-11);
  assert.equal("decision" in revenueB, false); // not the key metric
  // Chances to beat the control on every metric: converted's is win_probability's below;
  // revenue's the normal approximation Φ(1.5/√1.75) = 1 − 0.12841962897892831.
  assertClose(convertedB.chance_to_beat_control, 0.91644232063534796069, 1e-13);
  assertClose(revenueB.chance_to_beat_control, 1 - 0.12841962897892831, 1e-13);
  // visits: B has no user with a value, so no comparison.
  assert.deepEqual(visits.comparisons, [{
    name: "B",
    lift: null,
    lift_se: null,
    ci: null,
    p_value: null,
    p_value_adjusted: null,
    sequential_ci: null,
    sequential_p_value: null,
    cuped: null,
    chance_to_beat_control: null,
  }]);

  // Beta(3, 9) against Beta(7, 7): P(B > A) = 0.91644232063534796069 (exact). The lift and its
  // interval are the key metric's comparison.
  const win = report.win_probability;
  assert.equal(win.metric, "converted");
  assert.equal(win.variants.length, 2);
  assert.deepEqual(win.variants[0].name, "A");
  assert.equal(win.variants[0].chance_to_beat_control, null);
  assertClose(win.variants[0].chance_to_be_best, 1 - 0.91644232063534796069, 1e-13);
  assert.equal("lift" in win.variants[0], false);
  assert.equal(win.variants[1].name, "B");
  assertClose(win.variants[1].chance_to_beat_control, 0.91644232063534796069, 1e-13);
  assertClose(win.variants[1].chance_to_be_best, 0.91644232063534796069, 1e-13);
  assert.equal(win.variants[1].lift, convertedB.lift);
  assert.deepEqual(win.variants[1].lift_ci95, convertedB.ci);

  // Key metric per day: day 1 A 1/4, B not yet seen; day 2 A 2/10, B 6/12.
  assert.deepEqual(report.daily, [
    {
      date: "2024-01-01",
      variants: [
        { name: "A", cumulative_users: 4, mean: 0.25 },
        { name: "B", cumulative_users: 0, mean: null },
      ],
    },
    {
      date: "2024-01-02",
      variants: [
        { name: "A", cumulative_users: 10, mean: 0.2 },
        { name: "B", cumulative_users: 12, mean: 0.5 },
      ],
    },
  ]);

  assert.deepEqual(report.warnings, [
    "Data quality: 2 users were seen in more than one variant and excluded from the analysis",
    'No comparison of "B" with the control "A" on "visits": fewer than 2 users with a value in ' +
    '"B" or in "A"',
  ]);
  assert.deepEqual(JSON.parse(JSON.stringify(report)), report);
});

Deno.test("buildReport follows the settings' control, key metric, split and target", () => {
  const report = buildReport(aggregate(), {
    control: "B",
    key_metric: "revenue",
    expected_split: { A: 0.4, B: 0.6 },
    target_users_per_variant: 20,
  });
  assert.equal(report.control, "B");
  assert.equal(report.key_metric, "revenue");
  // N = 22, E = 8.8 and 13.2: χ² = 1.2²/8.8 + 1.2²/13.2 = 3/11; p = 0.60150813444058986.
  assertClose(report.srm.chi_square, 3 / 11, 1e-15);
  assertClose(report.srm.p_value, 6.0150813444058986e-1, 1e-13);
  assert.deepEqual(report.srm.expected_split, { A: 0.4, B: 0.6 });
  // A is the smallest variant: 5 new users a day, ⌈(20 − 10) / 5⌉ = 2 days left.
  assert.deepEqual(report.sample, {
    total_users: 22,
    target_users_per_variant: 20,
    target_users: 40,
    percent_of_target: 50,
    users_per_day: 5,
    days_left: 2,
    days: 2,
  });
  // Normal approximation: A 2.5 ± √(5/12), B 4 ± √(4/3): P(A > B) = Φ(−1.5/√1.75) =
  // 0.12841962897892831. Lift 2.5/4 − 1 = −0.375, Welch interval (SciPy) below.
  const [a, b] = report.win_probability.variants;
  assert.equal(report.win_probability.metric, "revenue");
  assert.deepEqual(b, {
    name: "B",
    chance_to_beat_control: null,
    chance_to_be_best: b.chance_to_be_best,
  });
  assertClose(a.chance_to_beat_control, 1.2841962897892831e-1, 1e-14);
  assertClose(a.chance_to_be_best, 1.2841962897892831e-1, 1e-14);
  assertClose(b.chance_to_be_best, 1 - 1.2841962897892831e-1, 1e-14);
  assertClose(a.lift, -0.375, 1e-15);
  assertClose(a.lift_ci95?.[0], -1.114670277392114, 1e-12);
  assertClose(a.lift_ci95?.[1], 0.3646702773921139, 1e-12);
  const revenueA = report.metrics[1].comparisons[0];
  assert.equal(revenueA.name, "A");
  assertClose(revenueA.sequential_p_value, 0.9923677158504118, 1e-12);
  assert.equal(revenueA.decision, "inconclusive");
  // The daily series follows the key metric: revenue day 1 A 5/2, day 2 A 10/4 and B 12/3.
  assert.deepEqual(report.daily.map((d) => d.variants.map((v) => v.mean)), [[2.5, null], [2.5, 4]]);
});

Deno.test("buildReport without a usable baseline leaves the target null with a warning", () => {
  const data = aggregate();
  data.stats.converted.A = { users: 10, sum: 0, sumSquares: 0 };
  data.excludedUsers = 1;
  const report = buildReport(data);
  assert.deepEqual(report.sample, {
    total_users: 22,
    target_users_per_variant: null,
    target_users: null,
    percent_of_target: null,
    users_per_day: 5,
    days_left: null,
    days: 2,
  });
  assert.deepEqual(report.warnings.slice(0, 3), [
    "Data quality: 1 user was seen in more than one variant and excluded from the analysis",
    "Target sample size unavailable: the control's conversion rate on the key metric is 0",
    'No comparison of "B" with the control "A" on "converted": the mean of the control "A" is ' +
    "0, so a relative lift is undefined",
  ]);
  // Control at 0 %: the lift is undefined, and so is the decision.
  assert.equal(report.win_probability.variants[1].lift, null);
  assert.equal(report.win_probability.variants[1].lift_ci95, null);
  assert.equal(report.metrics[0].comparisons[0].decision, null);
  assert.deepEqual(JSON.parse(JSON.stringify(report)), report);
});

Deno.test("buildReport warns of a sample ratio mismatch", () => {
  const data = aggregate();
  data.users = { A: 1000, B: 1300 };
  data.excludedUsers = 0;
  const report = buildReport(data);
  // χ² = 2 · 150² / 1150 = 39.13…, p = erfc(√19.565…) = 3.9641597078900160e−10.
  assert.equal(report.srm.mismatch, true);
  assertClose(report.srm.p_value, 3.9641597078900160e-10, 1e-22);
  assert.match(report.warnings[0], /^Sample ratio mismatch: .*\(chi-square p = 3\.96e-10\)$/);
  assert.equal(report.sample.percent_of_target, 100 * 1000 / 25256);
});

Deno.test("buildReport of a single variant compares nothing", () => {
  const data: Aggregate = {
    rows: 3,
    variants: ["only"],
    users: { only: 3 },
    excludedUsers: 0,
    metrics: [{ name: "converted", kind: "conversion", detectedKind: "conversion" }],
    stats: { converted: { only: { users: 3, sum: 1, sumSquares: 1 } } },
    covariates: {},
    winsorized: {},
    daily: [],
  };
  const report = buildReport(data);
  assert.equal(report.control, "only");
  assert.deepEqual(report.srm, {
    chi_square: 0,
    p_value: 1,
    mismatch: false,
    enough_data: false,
    expected_split: { only: 1 },
  });
  assert.deepEqual(report.win_probability.variants, [
    { name: "only", chance_to_beat_control: null, chance_to_be_best: 1 },
  ]);
  assert.equal(report.warnings[0], "Only 1 variant in the data: nothing to compare");
  assert.equal(report.sample.target_users, report.sample.target_users_per_variant);
});

Deno.test("buildReport of three variants lists all of them in the win probability", () => {
  const data = aggregate();
  data.variants = ["A", "B", "C"];
  data.users = { A: 10, B: 12, C: 11 };
  data.stats.converted.C = { users: 11, sum: 4, sumSquares: 4 };
  const report = buildReport(data, {});
  const win = report.win_probability.variants;
  assert.deepEqual(win.map((v) => v.name), ["A", "B", "C"]);
  assertClose(win.reduce((sum, v) => sum + (v.chance_to_be_best ?? 0), 0), 1, 1e-9);
  assert.deepEqual(buildReport(data, {}), report);
  assert.deepEqual(report.metrics[2].variants[2], {
    name: "C",
    users: 0,
    mean: null,
    variance: null,
  });
});

Deno.test("buildReport rejects settings that do not fit the data", () => {
  const cases: [object, RegExp][] = [
    [{ key_metric: "clicks" }, /key_metric "clicks" is not a metric column/],
    [{ control: "Z" }, /control "Z" is not a variant/],
    [{ expected_split: { A: 1 } }, /expected_split must name exactly the variants/],
  ];
  for (const [settings, message] of cases) {
    assert.throws(
      () => buildReport(aggregate(), settings),
      (error: unknown) =>
        error instanceof ServiceError && error.code === "invalid_settings" &&
        message.test(error.message),
    );
  }
});

Deno.test("buildReport: a _pre column is a covariate, not a metric nor the default key metric", () => {
  const data = aggregate();
  // converted_pre first in the header: it is still not the key metric.
  data.metrics.unshift({ name: "converted_pre", kind: "numeric", detectedKind: "numeric" });
  data.stats.converted_pre = {
    A: { users: 6, sum: 9, sumSquares: 20 },
    B: { users: 7, sum: 10, sumSquares: 22 },
  };
  // Per variant, over the users with a converted value: x sums, squares and x·y.
  data.covariates = {
    converted: {
      column: "converted_pre",
      moments: {
        A: { sumX: 9, sumXSquares: 20, sumXY: 4 },
        B: { sumX: 10, sumXSquares: 22, sumXY: 7 },
      },
    },
  };
  const report = buildReport(data, { metric_kinds: { visits: "numeric" } });
  assert.equal(report.key_metric, "converted");
  assert.deepEqual(report.metrics.map((m) => m.name), ["converted", "revenue", "visits"]);
  const converted = report.metrics[0];
  assert.equal(converted.covariate, "converted_pre");
  const cuped = converted.comparisons[0].cuped;
  assert.equal(cuped?.covariate, "converted_pre");
  // Pooled over both arms (22 users): cov(x, y) = (11 − 19·8/22) / 21, var(x) = (42 − 19²/22) / 21.
  assert.ok(Math.abs(cuped!.theta - (11 - 19 * 8 / 22) / (42 - 19 * 19 / 22)) < 1e-14);
  // The Bayesian chances use the adjusted normals: no longer the exact beta comparison.
  assert.notEqual(
    report.win_probability.variants[1].chance_to_beat_control,
    0.91644232063534796069,
  );
  // Naming the covariate as key metric is refused.
  assert.throws(() => buildReport(data, { key_metric: "converted_pre" }), ServiceError);
});

Deno.test("buildReport: lower is better flips the decision and the chances; alpha sets the level", () => {
  const data = aggregate();
  const plain = buildReport(data);
  const lower = buildReport(data, {
    lower_is_better: ["converted"],
    alpha: 0.1,
    inference: "bayesian",
  });
  assert.equal(lower.inference, "bayesian");
  assert.deepEqual(lower.metrics.map((m) => m.lower_is_better), [true, false, false]);
  assert.ok(Math.abs(lower.confidence_level - 0.9) < 1e-15);
  const [a, b] = lower.win_probability.variants;
  assertClose(b.chance_to_beat_control, 1 - 0.91644232063534796069, 1e-13);
  assertClose(a.chance_to_be_best, 0.91644232063534796069, 1e-13);
  // A narrower (90 %) interval around the same lift.
  const ci90 = lower.metrics[0].comparisons[0].ci!;
  const ci95 = plain.metrics[0].comparisons[0].ci!;
  assert.ok(ci90[0] > ci95[0] && ci90[1] < ci95[1]);
  assert.equal(lower.metrics[0].comparisons[0].lift, plain.metrics[0].comparisons[0].lift);
});

Deno.test("buildReport with three variants and a covariate: each pair's own adjustment", () => {
  const data = aggregate();
  data.variants = ["A", "B", "C"];
  data.users = { A: 10, B: 12, C: 11 };
  data.metrics.splice(1, 0, { name: "revenue_pre", kind: "numeric", detectedKind: "numeric" });
  data.stats.revenue.C = { users: 5, sum: 20, sumSquares: 90 };
  data.covariates = {
    revenue: {
      column: "revenue_pre",
      moments: {
        A: { sumX: 8, sumXSquares: 20, sumXY: 25 },
        B: { sumX: 6, sumXSquares: 14, sumXY: 30 },
        C: { sumX: 11, sumXSquares: 29, sumXY: 50 },
      },
    },
  };
  const report = buildReport(data, { key_metric: "revenue" });
  const arms = (name: string) => {
    const s = data.stats.revenue[name];
    return {
      n: s.users,
      sumY: s.sum,
      sumYSquares: s.sumSquares,
      ...data.covariates.revenue.moments[name],
    };
  };
  const [b, c] = report.metrics.find((m) => m.name === "revenue")!.comparisons;
  // θ per pair: A with B, A with C.
  assert.equal(b.cuped?.theta, cupedAdjust([arms("A"), arms("B")]).theta);
  assert.equal(c.cuped?.theta, cupedAdjust([arms("A"), arms("C")]).theta);
  assert.notEqual(b.cuped?.theta, c.cuped?.theta);
  // The chance to beat the control of C uses the (A, C) adjustment.
  const [adjA, adjC] = cupedAdjust([arms("A"), arms("C")]).arms;
  const expected = normalCdf(
    (adjC.mean - adjA.mean) / Math.sqrt(adjA.variance / adjA.n + adjC.variance / adjC.n),
  );
  const win = report.win_probability.variants;
  assertClose(win[2].chance_to_beat_control, expected, 1e-14);
  assertClose(win.reduce((sum, v) => sum + (v.chance_to_be_best ?? 0), 0), 1, 1e-9);
  assert.deepEqual(win[2].lift_ci95, c.ci);
  assert.deepEqual(
    buildReport(data, { key_metric: "revenue" }),
    report,
  );
});

Deno.test("buildReport shows too_early instead of a decision until both minimums are reached", () => {
  const data = aggregate();
  data.users = { A: 1000, B: 1200 };
  data.stats.converted = {
    A: { users: 1000, sum: 100, sumSquares: 100 },
    B: { users: 1200, sum: 400, sumSquares: 400 },
  };
  data.excludedUsers = 0;
  const plain = buildReport(data);
  assert.equal(plain.too_early, false);
  assert.equal(plain.metrics[0].comparisons[0].decision, "better");
  // The smallest variant has 1000 users and the data 2 dates.
  const cases: [Record<string, number>, boolean, string | null][] = [
    [{ min_users_per_variant: 1000, min_days: 2 }, false, null],
    [
      { min_users_per_variant: 1001 },
      true,
      "Too early for a decision: 1000 of 1001 users in the smallest variant",
    ],
    [{ min_days: 3 }, true, "Too early for a decision: 2 of 3 days"],
    [
      { min_users_per_variant: 2000, min_days: 5 },
      true,
      "Too early for a decision: 1000 of 2000 users in the smallest variant, 2 of 5 days",
    ],
  ];
  for (const [settings, early, warning] of cases) {
    const report = buildReport(data, settings);
    assert.equal(report.too_early, early, JSON.stringify(settings));
    assert.equal(report.metrics[0].comparisons[0].decision, early ? "too_early" : "better");
    // Only the decision waits: the figures and the chances are there.
    assert.deepEqual(report.metrics[0].comparisons[0].ci, plain.metrics[0].comparisons[0].ci);
    assert.deepEqual(report.win_probability, plain.win_probability);
    assert.equal(report.warnings.at(-1) === warning, warning !== null, report.warnings.join("\n"));
  }
});

Deno.test("buildReport marks an incomplete newest date provisional and leaves it out of the rate", () => {
  const data = aggregate();
  // A and B each gain 10 users a date for 8 dates, then 3 on the newest.
  const added = [10, 10, 10, 10, 10, 10, 10, 10, 3];
  let users = 0;
  data.daily = added.map((n, d) => {
    users += n;
    const point = { cumulativeUsers: users, metricUsers: {}, metricSum: {} };
    return { date: `2024-01-0${d + 1}`, rows: 2 * n, variants: { A: point, B: point } };
  });
  data.users = { A: users, B: users };
  const report = buildReport(data);
  assert.deepEqual(report.daily.map((d) => d.provisional ?? false), [
    ...Array(8).fill(false),
    true,
  ]);
  assert.equal(report.daily[8].rows, 6);
  assert.equal(report.sample.users_per_day, 10);
  assert.ok(
    report.warnings.includes(
      "The newest date 2024-01-09 looks incomplete (its new users are under half the median of " +
        "the dates before it): it is marked provisional and left out of the users per day",
    ),
    report.warnings.join("\n"),
  );
  // With the previous delivery's comparison, the date is named in `changes` too.
  const changes = {
    previous_etag: "e1",
    previous_delivered_at: "2024-01-09T01:00:00.000Z",
    rows_added: 1234,
    users_added: 56,
    users_switched_variant: 2,
    users_vanished: 1,
    restated_dates: ["2024-01-03"],
    provisional_date: null,
  };
  const next = buildReport(data, {}, { changes });
  assert.deepEqual(next.changes, { ...changes, provisional_date: "2024-01-09" });
  assert.deepEqual(next.warnings.slice(-5, -1), [
    "Since the previous delivery: +1,234 rows, +56 users",
    "Since the previous delivery, 2 users are in another variant than before",
    "Since the previous delivery, 1 user has vanished from the data",
    "History restated: the row counts of 1 past date changed since the previous delivery " +
    "(2024-01-03)",
  ]);
  assert.equal(buildReport(aggregate()).changes, null);
});
