/**
 * The `comparisons` of a metric: which variant is compared how, Holm across arms, the decision,
 * CUPED per pair, and the entries without a comparison. Reference values from SciPy 1.17.1 and
 * NumPy 2.4 exactly as described in inference_test.ts and cuped_test.ts (the CUPED moments are
 * cuped_test.ts's strong-covariate sample).
 */
import assert from "node:assert/strict";
import type { MetricVariantStats } from "../../src/analysis/aggregate/aggregate_types.ts";
import { metricComparisons, type MetricComparisonsInput } from "../../src/analysis/comparisons.ts";

function assertClose(actual: number | null | undefined, expected: number, relative = 1e-11) {
  assert.ok(
    typeof actual === "number" && Math.abs(actual - expected) <= relative * Math.abs(expected),
    `expected ${expected}, got ${actual}`,
  );
}

function conversions(n: number, c: number): MetricVariantStats {
  return { users: n, sum: c, sumSquares: c };
}

function input(
  stats: Record<string, MetricVariantStats>,
  more: Partial<MetricComparisonsInput> = {},
): MetricComparisonsInput {
  return {
    metric: "converted",
    kind: "conversion",
    control: "A",
    variants: Object.keys(stats),
    stats: (name) => stats[name] ?? { users: 0, sum: 0, sumSquares: 0 },
    covariate: null,
    alpha: 0.05,
    tuning: 5000,
    decide: false,
    lowerIsBetter: false,
    ...more,
  };
}

Deno.test("metricComparisons with four arms: Holm over the three, ties sharing one value", () => {
  // A 400/4000; B and C 480/4000 (tied p-values), D 350/4000.
  const { comparisons, warnings } = metricComparisons(input({
    A: conversions(4000, 400),
    B: conversions(4000, 480),
    C: conversions(4000, 480),
    D: conversions(4000, 350),
  }));
  assert.deepEqual(warnings, []);
  assert.deepEqual(comparisons.map((c) => c.name), ["B", "C", "D"]);
  const [b, c, d] = comparisons;
  assertClose(b.lift, 0.2, 1e-14);
  assertClose(b.p_value, 0.00912761765378653);
  assert.equal(c.p_value, b.p_value);
  assertClose(d.p_value, 0.04044162016324573);
  assertClose(b.p_value_adjusted, 0.02738285296135959);
  assert.equal(c.p_value_adjusted, b.p_value_adjusted);
  assertClose(d.p_value_adjusted, 0.04044162016324573);
  // Significant at the fixed horizon, not yet by the always-valid interval.
  assertClose(b.ci?.[0], 0.04966600665619583);
  assertClose(b.sequential_ci?.[0], -0.03370765367285644);
  assertClose(b.sequential_p_value, 0.15824047226445115);
  assertClose(d.sequential_ci?.[1], 0.060858643797688794);
  assert.equal("decision" in b, false);
});

Deno.test("metricComparisons decides on the sequential interval, flipped when lower is better", () => {
  // SciPy: 5400/50000 vs 5000/50000 has sequential interval [0.01304…, 0.14695…]; 4650/50000
  // [−0.13009…, −0.00990…]; 5050/50000 straddles 0.
  const stats = {
    A: conversions(50000, 5000),
    B: conversions(50000, 5400),
    C: conversions(50000, 4650),
    D: conversions(50000, 5050),
  };
  const decisions = (lowerIsBetter: boolean) =>
    metricComparisons(input(stats, { decide: true, lowerIsBetter })).comparisons.map((c) =>
      c.decision
    );
  assert.deepEqual(decisions(false), ["better", "worse", "inconclusive"]);
  assert.deepEqual(decisions(true), ["worse", "better", "inconclusive"]);
  const [b] = metricComparisons(input(stats, { decide: true })).comparisons;
  assertClose(b.sequential_ci?.[0], 0.013043639722892186);
  assertClose(b.sequential_ci?.[1], 0.14695636027710768);
  assertClose(b.sequential_p_value, 0.004695160479118316);
});

Deno.test("metricComparisons: below a negative control mean, a positive lift is a lower value", () => {
  // Numeric, 2,000 users an arm, variance 9: A's mean −10, B's −11 (lower), C's −9 (higher).
  // Δ = (m_B − m_A) / m_A = 0.1 for B, −0.1 for C, each with the sequential interval on its side.
  const numeric = (mean: number): MetricVariantStats => ({
    users: 2000,
    sum: 2000 * mean,
    sumSquares: 1999 * 9 + 2000 * mean * mean,
  });
  const stats = { A: numeric(-10), B: numeric(-11), C: numeric(-9) };
  const run = (lowerIsBetter: boolean) =>
    metricComparisons(
      input(stats, { metric: "balance", kind: "numeric", decide: true, lowerIsBetter }),
    );
  const { comparisons, warnings } = run(false);
  const [b, c] = comparisons;
  assertClose(b.lift, 0.1, 1e-12);
  assertClose(c.lift, -0.1, 1e-12);
  assert.ok(b.sequential_ci![0] > 0 && c.sequential_ci![1] < 0);
  assert.deepEqual(comparisons.map((e) => e.decision), ["worse", "better"]);
  assert.deepEqual(run(true).comparisons.map((e) => e.decision), ["better", "worse"]);
  assert.deepEqual(warnings, [
    'The control "A" has a negative mean of "balance": a positive lift means a lower value than ' +
    "the control's",
  ]);
  // A positive control mean: no warning, the decision as the interval says.
  const positive = metricComparisons(input({ A: numeric(10), B: numeric(11) }, {
    kind: "numeric",
    decide: true,
  }));
  assert.deepEqual(positive.warnings, []);
  assert.equal(positive.comparisons[0].decision, "better");
});

Deno.test("metricComparisons lists variants it cannot compare with null figures and a warning", () => {
  const { comparisons, warnings, pairs } = metricComparisons(input({
    A: conversions(100, 0),
    B: conversions(100, 7),
  }, { metric: "signed_up", decide: true }));
  assert.deepEqual(comparisons, [{
    name: "B",
    lift: null,
    lift_se: null,
    ci: null,
    p_value: null,
    p_value_adjusted: null,
    sequential_ci: null,
    sequential_p_value: null,
    cuped: null,
    decision: null,
  }]);
  assert.deepEqual(warnings, [
    'No comparison of "B" with the control "A" on "signed_up": the mean of the control "A" is 0, ' +
    "so a relative lift is undefined",
  ]);
  assert.equal(pairs.size, 0);
  // Numeric, no spread anywhere; and one user only. Holm counts only the comparable variant.
  const numeric = metricComparisons(input({
    A: { users: 5, sum: 15, sumSquares: 45 }, // 3, 3, 3, 3, 3
    B: { users: 4, sum: 16, sumSquares: 64 }, // 4, 4, 4, 4
    C: { users: 1, sum: 9, sumSquares: 81 },
    D: { users: 8, sum: 28, sumSquares: 112 }, // mean 3.5, variance 2
  }, { metric: "items", kind: "numeric" }));
  assert.deepEqual(numeric.warnings, [
    'No comparison of "B" with the control "A" on "items": the lift\'s variance is 0 (no spread ' +
    "in the values compared)",
    'No comparison of "C" with the control "A" on "items": fewer than 2 users with a value in ' +
    '"C" or in "A"',
  ]);
  const d = numeric.comparisons[2];
  // The zero-variance control against D: SciPy, df = 7 (inference_test.ts).
  assertClose(d.p_value, 0.3506166628202074);
  assert.equal(d.p_value_adjusted, d.p_value);
  assert.deepEqual(JSON.parse(JSON.stringify(numeric)), {
    ...numeric,
    pairs: {},
  });
});

Deno.test("metricComparisons with a covariate compares the CUPED-adjusted statistics", () => {
  const y = {
    A: { users: 400, sum: 7711.00253910996, sumSquares: 230179.7833617674 },
    B: { users: 420, sum: 8330.302624780063, sumSquares: 252325.7213802132 },
  };
  const moments = {
    A: { sumX: 3854.3370422014723, sumXSquares: 56473.34958332793, sumXY: 113096.51014899727 },
    B: { sumX: 4105.858559544891, sumXSquares: 60526.68123989536, sumXY: 122733.13835862794 },
  };
  const { comparisons, pairs } = metricComparisons(input(y, {
    metric: "revenue",
    kind: "numeric",
    covariate: { column: "revenue_pre", moments },
  }));
  const [b] = comparisons;
  // SciPy on the adjusted arms (means 19.4221…, 19.6963…; variances 9.2435…, 8.2453…).
  assertClose(b.lift, 0.014118644914787117, 1e-9);
  assertClose(b.lift_se, 0.010725985572019373, 1e-9);
  assertClose(b.ci?.[0], -0.006935401565462129, 1e-8);
  assertClose(b.ci?.[1], 0.035172691395036364, 1e-9);
  assertClose(b.p_value, 0.18844527073427586, 1e-8);
  assertClose(b.sequential_p_value, 0.9294835231748594, 1e-9);
  assert.equal(b.cuped?.covariate, "revenue_pre");
  assertClose(b.cuped?.theta, 2.016508282796745, 1e-12);
  assertClose(b.cuped?.variance_reduction, 0.958720630412077, 1e-9);
  assertClose(pairs.get("B")?.control.mean, 19.422116219128714, 1e-12);
});
