/**
 * Reference sample sizes, unless a test says otherwise, come from an independent Python 3
 * computation of the same formulas with `statistics.NormalDist().inv_cdf` (Wichura's AS241) for the
 * z-values:
 *   conversion: (z_{1−α/2}·√(2p₁(1−p₁)) + z_{power}·√(p₁(1−p₁) + p₂(1−p₂)))² / (p₂ − p₁)²
 *   numeric:    2(z_{1−α/2} + z_{power})² σ² / δ²
 * The unrounded value is quoted next to each expected (rounded-up) answer.
 */

import assert from "node:assert/strict";
import {
  conversionSampleSize,
  numericSampleSize,
} from "../../../src/analysis/stats/sample_size.ts";

Deno.test("conversionSampleSize reproduces Evan Miller's calculator example", () => {
  // https://www.evanmiller.org/ab-testing/sample-size.html with its default inputs (baseline 20 %,
  // minimum detectable effect 5 percentage points, power 80 %, significance 5 %) shows 1,030 per
  // variation. 5 points on 20 % is a relative MDE of 25 %. The unrounded value is 1030.219…, which
  // we round up; a pooled-variance null term would give 1093.7 instead.
  const result = conversionSampleSize(0.2, { mde: 0.25 });
  assert.deepEqual(result, { usersPerVariant: 1031, warning: null });
});

Deno.test("conversionSampleSize matches the formula for the default 5 % relative MDE", () => {
  const cases: [number, number][] = [
    [0.2, 25256], // 25255.085181677037
    [0.1, 56886], // 56885.4037685611
    [0.05, 120146], // 120145.99264661426
    [0.01, 626231], // 626230.6102947736
  ];
  for (const [baseline, expected] of cases) {
    assert.equal(conversionSampleSize(baseline).usersPerVariant, expected, `baseline ${baseline}`);
  }
});

Deno.test("conversionSampleSize honours alpha and power", () => {
  // α = 0.01, power 0.9, p₁ = 0.1, p₂ = 0.11: 27170.62781613811.
  const result = conversionSampleSize(0.1, { alpha: 0.01, power: 0.9, mde: 0.1 });
  assert.equal(result.usersPerVariant, 27171);
});

Deno.test("conversionSampleSize sizes a decrease when an increase would pass 100 %", () => {
  // p₁ = 0.98: 0.98 · 1.05 > 1, so p₂ = 0.98 · 0.95 = 0.931: 166.2227156069519.
  assert.equal(conversionSampleSize(0.98).usersPerVariant, 167);
});

Deno.test("conversionSampleSize of a zero baseline is null with a warning", () => {
  const result = conversionSampleSize(0);
  assert.equal(result.usersPerVariant, null);
  assert.match(result.warning ?? "", /conversion rate on the key metric is 0/);
});

Deno.test("numericSampleSize follows 2(z_a + z_b)² σ² / δ²", () => {
  // σ²/δ² = 1 gives 15.697759468698171, Lehr's well-known "16 (σ/δ)²" rule of thumb.
  assert.equal(numericSampleSize(20, 1, { mde: 0.05 }).usersPerVariant, 16);
  // mean 10, σ² = 25, δ = 0.05 · 10 = 0.5: 1569.775946869817.
  assert.deepEqual(numericSampleSize(10, 25), { usersPerVariant: 1570, warning: null });
  // α = 0.01, power 0.9, σ/δ = 1: 29.758774338497062.
  assert.equal(numericSampleSize(10, 1, { alpha: 0.01, power: 0.9, mde: 0.1 }).usersPerVariant, 30);
  // mean 3, σ² = 2.5, mde 10 % (δ = 0.3): 436.04887413050466; a negative mean sizes the same.
  assert.equal(numericSampleSize(3, 2.5, { mde: 0.1 }).usersPerVariant, 437);
  assert.equal(numericSampleSize(-3, 2.5, { mde: 0.1 }).usersPerVariant, 437);
});

Deno.test("numericSampleSize without a usable baseline is null with a warning", () => {
  const zeroMean = numericSampleSize(0, 4);
  assert.equal(zeroMean.usersPerVariant, null);
  assert.match(zeroMean.warning ?? "", /mean of the key metric is 0/);
  const oneUser = numericSampleSize(5, null);
  assert.equal(oneUser.usersPerVariant, null);
  assert.match(oneUser.warning ?? "", /at least two users/);
  const constant = numericSampleSize(5, 0);
  assert.equal(constant.usersPerVariant, null);
  assert.match(constant.warning ?? "", /does not vary/);
});

Deno.test("sample size functions refuse out-of-range options", () => {
  assert.throws(() => conversionSampleSize(0.1, { alpha: 0 }), RangeError);
  assert.throws(() => conversionSampleSize(0.1, { power: 1 }), RangeError);
  assert.throws(() => numericSampleSize(1, 1, { mde: 0 }), RangeError);
  assert.throws(() => conversionSampleSize(1.5), RangeError);
});
