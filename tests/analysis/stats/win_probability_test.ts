/**
 * Reference values come from independent Python 3 computations that share no code with ours:
 * - P(B > A) for beta posteriors exactly, not by Miller's sum but by the beta–binomial identity
 *   P(X_B > x) = P(Binomial(α_B + β_B − 1, x) ≤ α_B − 1), which turns the integral into
 *   Σ_{j<α_B} C(n_B, j) · B(α_A + j, β_A + n_B − j) / B(α_A, β_A), summed in exact integers
 *   (`math.comb`, `math.factorial`) and divided at 38 digits;
 * - the chance to be best of beta posteriors exactly: ∫ f_i Π_{j≠i} F_j expanded in the basis
 *   xᵖ(1 − x)^q with `fractions.Fraction` coefficients and integrated term by term
 *   (∫ xᵖ(1 − x)^q dx = p! q! / (p + q + 1)!);
 * - the chance to be best of normals by Simpson's rule, 24 000 intervals on z ∈ [−12, 12], of
 *   ∫ φ(z) Π_{j≠i} Φ((m_i + s_i z − m_j) / s_j) dz with `math.erfc`;
 * - the chance to be best of beta posteriors of a million users, where the exact expansion is out
 *   of reach: SciPy 1.x `integrate.quad` of `stats.beta` pdf × cdfs over the mean ± 45 standard
 *   deviations, breakpoints every quarter standard deviation of each posterior, epsabs 1e-15 and
 *   epsrel 1e-13 (its error estimates were below 1e-12);
 * - normal tails with the 420-digit `decimal` Φ described in _math_test.ts; lifts and their delta
 *   method intervals with `fractions` and 60-digit `decimal` square roots.
 */

import assert from "node:assert/strict";
import {
  betaChanceToBeat,
  normalChanceToBeat,
  type VariantTotals,
  winProbability,
} from "../../../src/analysis/stats/win_probability.ts";

function assertClose(actual: number | null | undefined, expected: number, absolute: number): void {
  assert.ok(
    typeof actual === "number" && Math.abs(actual - expected) <= absolute,
    `expected ${expected} ± ${absolute}, got ${actual}`,
  );
}

/** Conversion totals: the per-user value is 0 or 1, so the sum of squares equals the sum. */
function conversion(name: string, users: number, conversions: number): VariantTotals {
  return { name, users, sum: conversions, sumSquares: conversions };
}

/** Numeric totals with a given mean and sample variance. */
function numeric(name: string, users: number, mean: number, variance: number): VariantTotals {
  const sum = users * mean;
  return { name, users, sum, sumSquares: (users - 1) * variance + sum * sum / users };
}

Deno.test("betaChanceToBeat matches the exact beta-binomial sum", () => {
  const cases: [[number, number], [number, number], number][] = [
    // A 20/100, B 30/100
    [[21, 81], [31, 71], 0.94760310335236915753],
    // A 100/1000, B 120/1000
    [[101, 901], [121, 881], 0.92318343897355975351],
    // A 1000/10 000, B 1100/10 000: 1101 terms, summed over the smaller parameter
    [[1001, 9001], [1101, 8901], 0.98945735443171401464],
    // A 10/100, B 0/100
    [[11, 91], [1, 101], 0.00036633327855499851],
    // A 2/6, B 3/4 (small, with the smallest parameter on B's failures)
    [[3, 5], [4, 2], 0.87878787878787878788],
  ];
  for (const [a, b, expected] of cases) {
    const p = betaChanceToBeat({ alpha: a[0], beta: a[1] }, { alpha: b[0], beta: b[1] });
    assertClose(p, expected, 1e-13);
  }
});

Deno.test("betaChanceToBeat with zero conversions and single users", () => {
  // 0/10 vs 0/10: 1/2 by symmetry. 0/10 vs 0/20: 11 ∫ (1−x)^{10} (1−x)^{20} dx = 11/32 = 0.34375.
  assertClose(betaChanceToBeat({ alpha: 1, beta: 11 }, { alpha: 1, beta: 11 }), 0.5, 1e-14);
  assertClose(betaChanceToBeat({ alpha: 1, beta: 11 }, { alpha: 1, beta: 21 }), 0.34375, 1e-14);
  // Equal large posteriors, 5000/10 000 each: 1/2 by symmetry, through 5001 rescaled terms.
  assertClose(
    betaChanceToBeat({ alpha: 5001, beta: 5001 }, { alpha: 5001, beta: 5001 }),
    0.5,
    1e-12,
  );
  // One user each, A converted and B not: ∫ 2x (1−x)² dx = 1/6.
  assertClose(betaChanceToBeat({ alpha: 2, beta: 1 }, { alpha: 1, beta: 2 }), 1 / 6, 1e-14);
  assert.throws(() => betaChanceToBeat({ alpha: 0, beta: 1 }, { alpha: 1, beta: 1 }), RangeError);
});

Deno.test("normalChanceToBeat is Φ of the standardized difference", () => {
  // Means 10 and 10.4, se² = 25/400 and 36/380: Φ(0.4 / √(25/400 + 36/380)) = 0.84345232991438213.
  const a = { mean: 10, se: Math.sqrt(25 / 400) };
  const b = { mean: 10.4, se: Math.sqrt(36 / 380) };
  assertClose(normalChanceToBeat(a, b), 0.84345232991438213, 1e-15);
  assertClose(normalChanceToBeat(b, a), 1 - 0.84345232991438213, 1e-15);
  assert.equal(normalChanceToBeat({ mean: 1, se: 0 }, { mean: 2, se: 0 }), 1);
  assert.equal(normalChanceToBeat({ mean: 2, se: 0 }, { mean: 1, se: 0 }), 0);
  assert.equal(normalChanceToBeat({ mean: 1, se: 0 }, { mean: 1, se: 0 }), 0.5);
});

Deno.test("winProbability for two conversion variants is exact", () => {
  const result = winProbability([conversion("A", 100, 20), conversion("B", 100, 30)], {
    kind: "conversion",
    control: "A",
  });
  assert.equal(result.length, 2);
  assert.deepEqual(Object.keys(result[0]), ["name", "chance_to_beat_control", "chance_to_be_best"]);
  assert.equal(result[0].name, "A");
  assert.equal(result[0].chance_to_beat_control, null);
  assertClose(result[0].chance_to_be_best, 1 - 0.94760310335236915753, 1e-13);
  assert.equal(result[1].name, "B");
  assertClose(result[1].chance_to_beat_control, 0.94760310335236915753, 1e-13);
  assertClose(result[1].chance_to_be_best, 0.94760310335236915753, 1e-13);
  // The lift and its interval are the comparison's (comparisons_test.ts), not given here.
  assert.deepEqual(Object.keys(result[1]), ["name", "chance_to_beat_control", "chance_to_be_best"]);
});

Deno.test("winProbability for three conversion variants: chance to be best by integration", () => {
  // A 10/50, B 15/50, C 12/50: exact chances 0.08454201941564361, 0.6900215577843387,
  // 0.22543642280001772.
  const variants = [conversion("A", 50, 10), conversion("B", 50, 15), conversion("C", 50, 12)];
  const result = winProbability(variants, { kind: "conversion", control: "A" });
  const expected = [0.08454201941564361, 0.6900215577843387, 0.22543642280001772];
  result.forEach((v, i) => assertClose(v.chance_to_be_best, expected[i], 1e-12));
  const total = result.reduce((sum, v) => sum + (v.chance_to_be_best ?? 0), 0);
  assertClose(total, 1, 1e-12);
  // Chance to beat control stays exact: Beta(11, 41) against Beta(16, 36) and Beta(13, 39).
  assert.equal(result[0].chance_to_beat_control, null);
  assertClose(result[1].chance_to_beat_control, 0.87211420072834808085, 1e-13);
  assertClose(result[2].chance_to_beat_control, 0.68187551401760548244, 1e-13);
});

Deno.test("winProbability for four conversion variants matches exact chances to be best", () => {
  // A 20/100, B 25/100, C 18/90, D 0/5: exact 0.12821997834258467, 0.5722457356422708,
  // 0.138307252863061, 0.1612270331520836.
  const variants = [
    conversion("A", 100, 20),
    conversion("B", 100, 25),
    conversion("C", 90, 18),
    conversion("D", 5, 0),
  ];
  const result = winProbability(variants, { kind: "conversion", control: "A" });
  const expected = [0.12821997834258467, 0.5722457356422708, 0.138307252863061, 0.1612270331520836];
  result.forEach((v, i) => assertClose(v.chance_to_be_best, expected[i], 1e-12));
  assertClose(result.reduce((sum, v) => sum + v.chance_to_be_best!, 0), 1, 1e-12);
});

Deno.test("winProbability for three numeric variants matches numerical integration", () => {
  // n 400/380/420, means 10/10.4/9.8, sample variances 25/36/30; exact chances to be best
  // 0.14163852936408708, 0.8118523627369889, 0.04650910789891415.
  const variants = [
    numeric("A", 400, 10, 25),
    numeric("B", 380, 10.4, 36),
    numeric("C", 420, 9.8, 30),
  ];
  const result = winProbability(variants, { kind: "numeric", control: "A" });
  const expected = [0.14163852936408708, 0.8118523627369889, 0.04650910789891415];
  result.forEach((v, i) => assertClose(v.chance_to_be_best, expected[i], 1e-12));
  assertClose(result.reduce((sum, v) => sum + v.chance_to_be_best!, 0), 1, 1e-12);
  // B against A: Φ(0.4 / √(25/400 + 36/380)).
  assertClose(result[1].chance_to_beat_control, 0.84345232991438213, 1e-13);
});

Deno.test("winProbability of three variants with a million users each, and of rare conversions", () => {
  // The reference is SciPy's quad (see the top of the file): 0.012356418956889723,
  // 0.17711527536238986, 0.8105283056807213; and 0.07870357638893004, 0.28472208564819784,
  // 0.6365743379629487.
  const large = winProbability([
    conversion("A", 576_643, 57_000),
    conversion("B", 576_792, 57_500),
    conversion("C", 1, 0),
  ], { kind: "conversion", control: "A" });
  const expected = [0.012356418956889723, 0.17711527536238986, 0.8105283056807213];
  large.forEach((v, i) => assertClose(v.chance_to_be_best, expected[i], 1e-9));
  const rareVariants = [
    conversion("A", 1_000_000, 0),
    conversion("B", 1_000_000, 1),
    conversion("C", 1_000_000, 2),
  ];
  const rare = winProbability(rareVariants, { kind: "conversion", control: "A" });
  const rareExpected = [0.07870357638893004, 0.28472208564819784, 0.6365743379629487];
  rare.forEach((v, i) => assertClose(v.chance_to_be_best, rareExpected[i], 1e-9));
  // Lower is better mirrors the posteriors: the rarest converter is the likeliest lowest.
  const lowest = winProbability(rareVariants, {
    kind: "conversion",
    control: "A",
    lowerIsBetter: true,
  });
  assert.ok(lowest[0].chance_to_be_best! > lowest[1].chance_to_be_best!);
  assertClose(lowest.reduce((sum, v) => sum + v.chance_to_be_best!, 0), 1, 1e-9);
});

Deno.test("winProbability of identical posteriors shares the chance to be best evenly", () => {
  // By symmetry, exactly 1/k each.
  for (const k of [3, 4, 7]) {
    const variants = Array.from({ length: k }, (_, i) => conversion(`V${i}`, 50, 10));
    const result = winProbability(variants, { kind: "conversion", control: "V0" });
    result.forEach((v) => assertClose(v.chance_to_be_best, 1 / k, 1e-12));
    const normals = Array.from({ length: k }, (_, i) => numeric(`V${i}`, 400, 10, 25));
    const spread = winProbability(normals, { kind: "numeric", control: "V0" });
    spread.forEach((v) => assertClose(v.chance_to_be_best, 1 / k, 1e-12));
  }
});

Deno.test("winProbability with variants without spread: best when the others fall below", () => {
  // A and C hold one value each (0 and 0.5); B is Normal(1, 4/30): B is best when above 0.5,
  // C when B falls below it: Φ((0.5 − 1) / √(4/30)) = 0.08545176011539873 (mpmath `ncdf`, 50 digits).
  const result = winProbability(
    [numeric("A", 3, 0, 0), numeric("B", 30, 1, 4), numeric("C", 3, 0.5, 0)],
    { kind: "numeric", control: "A" },
  );
  assert.equal(result[0].chance_to_be_best, 0);
  assertClose(result[2].chance_to_be_best, 0.08545176011539873, 1e-12);
  assertClose(result[1].chance_to_be_best, 1 - 0.08545176011539873, 1e-12);
});

Deno.test("winProbability with zero conversions everywhere splits evenly", () => {
  const result = winProbability([conversion("A", 10, 0), conversion("B", 10, 0)], {
    kind: "conversion",
    control: "A",
  });
  assertClose(result[1].chance_to_beat_control, 0.5, 1e-14);
  assertClose(result[0].chance_to_be_best, 0.5, 1e-14);
});

Deno.test("winProbability with a single user per variant", () => {
  // Conversion: A converted, B did not: P(B > A) = 1/6.
  const conv = winProbability([conversion("A", 1, 1), conversion("B", 1, 0)], {
    kind: "conversion",
    control: "A",
  });
  assertClose(conv[1].chance_to_beat_control, 1 / 6, 1e-14);
  // Numeric: one value has no sample variance, so no chance can be given.
  const num = winProbability(
    [{ name: "A", users: 1, sum: 4, sumSquares: 16 }, numeric("B", 5, 5, 2)],
    { kind: "numeric", control: "A" },
  );
  assert.deepEqual(num, [
    { name: "A", chance_to_beat_control: null, chance_to_be_best: null },
    { name: "B", chance_to_beat_control: null, chance_to_be_best: 1 },
  ]);
});

Deno.test("winProbability gives null chances to a variant without users", () => {
  const result = winProbability(
    [conversion("A", 100, 20), conversion("B", 0, 0), conversion("C", 100, 30)],
    { kind: "conversion", control: "A" },
  );
  assert.equal(result[1].chance_to_beat_control, null);
  assert.equal(result[1].chance_to_be_best, null);
  // The other two are compared exactly, as a pair.
  assertClose(result[2].chance_to_be_best, 0.94760310335236915753, 1e-13);
  assertClose(result[0].chance_to_be_best, 1 - 0.94760310335236915753, 1e-13);
  // An empty control leaves every chance to beat it null.
  const emptyControl = winProbability([conversion("A", 0, 0), conversion("B", 10, 3)], {
    kind: "conversion",
    control: "A",
  });
  assert.deepEqual(emptyControl[1], {
    name: "B",
    chance_to_beat_control: null,
    chance_to_be_best: 1,
  });
});

Deno.test("winProbability output survives JSON unchanged (no NaN or Infinity)", () => {
  const cases: [VariantTotals[], "conversion" | "numeric"][] = [
    [[conversion("A", 0, 0), conversion("B", 0, 0), conversion("C", 0, 0)], "conversion"],
    [[numeric("A", 3, 0, 0), numeric("B", 3, 1, 0), numeric("C", 3, 1, 0)], "numeric"],
    [[{ name: "A", users: 0, sum: 0, sumSquares: 0 }, numeric("B", 4, 2, 1)], "numeric"],
  ];
  for (const [variants, kind] of cases) {
    const result = winProbability(variants, { kind, control: "A" });
    assert.deepEqual(JSON.parse(JSON.stringify(result)), result);
  }
  // Zero-variance normals: C and B tie for best, A never wins.
  const ties = winProbability(
    [numeric("A", 3, 0, 0), numeric("B", 3, 1, 0), numeric("C", 3, 1, 0)],
    { kind: "numeric", control: "A" },
  );
  assert.deepEqual(ties.map((v) => v.chance_to_be_best), [0, 0.5, 0.5]);
  assert.deepEqual(ties.map((v) => v.chance_to_beat_control), [null, 1, 1]);
});

Deno.test("winProbability with lower is better gives the chances of being lower", () => {
  // The same posteriors as the two-variant test: P(B < A) = 1 − 0.94760310335236915753.
  const two = winProbability([conversion("A", 100, 20), conversion("B", 100, 30)], {
    kind: "conversion",
    control: "A",
    lowerIsBetter: true,
  });
  assertClose(two[1].chance_to_beat_control, 1 - 0.94760310335236915753, 1e-13);
  assertClose(two[1].chance_to_be_best, 1 - 0.94760310335236915753, 1e-13);
  assertClose(two[0].chance_to_be_best, 0.94760310335236915753, 1e-13);
  // Three numeric variants: "best" is the lowest. Simpson's rule as above with the means negated
  // gives 0.2774506146937597, 0.038922771531861196, 0.6836266137743676.
  const three = winProbability([
    numeric("A", 400, 10, 25),
    numeric("B", 380, 10.4, 36),
    numeric("C", 420, 9.8, 30),
  ], { kind: "numeric", control: "A", lowerIsBetter: true });
  const expected = [0.2774506146937597, 0.038922771531861196, 0.6836266137743676];
  three.forEach((v, i) => assertClose(v.chance_to_be_best, expected[i], 1e-12));
  assertClose(three[1].chance_to_beat_control, 1 - 0.84345232991438213, 1e-13);
});

Deno.test("winProbability with CUPED-adjusted normals uses them instead of the posteriors", () => {
  // Adjusted A 10 ± 0.2, B 10.5 ± 0.25 for the pair: Φ(0.5 / √0.1025) = 0.9408250936321858;
  // for the chance to be best the all-variant adjustment, here A 10 ± 0.2 and B 10.3 ± 0.25:
  // Φ(0.3 / √0.1025) = 0.8256316699305974 (SciPy 1.17 `norm.cdf`).
  const result = winProbability([conversion("A", 100, 20), conversion("B", 100, 30)], {
    kind: "conversion",
    control: "A",
    adjusted: {
      best: [{ mean: 10, se: 0.2 }, { mean: 10.3, se: 0.25 }],
      versusControl: [null, { control: { mean: 10, se: 0.2 }, variant: { mean: 10.5, se: 0.25 } }],
    },
  });
  assertClose(result[1].chance_to_beat_control, 0.9408250936321858, 1e-14);
  assertClose(result[1].chance_to_be_best, 0.8256316699305974, 1e-14);
  assertClose(result[0].chance_to_be_best, 1 - 0.8256316699305974, 1e-14);
});

Deno.test("winProbability refuses an unknown control", () => {
  assert.throws(
    () => winProbability([conversion("A", 1, 0)], { kind: "conversion", control: "Z" }),
    RangeError,
  );
});
