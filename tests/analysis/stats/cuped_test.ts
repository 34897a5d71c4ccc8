/**
 * CUPED against NumPy 2.4 on per-user data drawn with `numpy.random.default_rng(2024)`: per arm
 * (A 400 users, B 420) x ~ Gamma(2, 5), and y = 2x + N(0, 3) + shift (a covariate that explains
 * most of y) or y ~ N(20 + shift, 6) (one that explains nothing), shift 0 in A and 0.3 in B. The
 * tests get the per-arm sums (printed with repr); the expected values come from the per-user
 * arrays directly: θ = np.cov(X, Y)[0, 1] / np.var(X, ddof=1) over both arms together, adjusted
 * mean = y.mean() − θ (x.mean() − X.mean()), adjusted variance = np.var(y − θ x, ddof=1) (which
 * equals s²_y + θ² s²_x − 2 θ cov(x, y)), and the variance reduction 1 − V_adjusted / V of the
 * delta-method lift variance.
 */
import assert from "node:assert/strict";
import {
  type ArmMoments,
  cupedAdjust,
  unadjustedStatistics,
} from "../../../src/analysis/stats/cuped.ts";
import { relativeLift } from "../../../src/analysis/stats/inference.ts";

function assertClose(actual: number, expected: number, relative: number): void {
  assert.ok(
    Math.abs(actual - expected) <= relative * Math.abs(expected),
    `expected ${expected}, got ${actual}`,
  );
}

function reduction(control: ArmMoments, variant: ArmMoments): number {
  const plain = relativeLift(unadjustedStatistics(control), unadjustedStatistics(variant));
  const { arms } = cupedAdjust([control, variant]);
  const adjusted = relativeLift(arms[0], arms[1]);
  assert.ok("variance" in plain && "variance" in adjusted);
  return 1 - adjusted.variance / plain.variance;
}

Deno.test("cupedAdjust with a covariate that explains most of the variance", () => {
  const a: ArmMoments = {
    n: 400,
    sumY: 7711.00253910996,
    sumYSquares: 230179.7833617674,
    sumX: 3854.3370422014723,
    sumXSquares: 56473.34958332793,
    sumXY: 113096.51014899727,
  };
  const b: ArmMoments = {
    n: 420,
    sumY: 8330.302624780063,
    sumYSquares: 252325.7213802132,
    sumX: 4105.858559544891,
    sumXSquares: 60526.68123989536,
    sumXY: 122733.13835862794,
  };
  const { theta, arms } = cupedAdjust([a, b]);
  assertClose(theta, 2.016508282796745, 1e-12);
  assertClose(arms[0].mean, 19.422116219128714, 1e-12);
  assertClose(arms[0].variance, 9.243586289967, 1e-9);
  assertClose(arms[1].mean, 19.69633018152032, 1e-12);
  assertClose(arms[1].variance, 8.245302773391103, 1e-9);
  assert.deepEqual([arms[0].n, arms[1].n], [400, 420]);
  // Plain: 19.2775063477749 (204.33805254728517) and 19.83405386852396 (207.88078849455596).
  assertClose(unadjustedStatistics(a).variance, 204.33805254728517, 1e-11);
  const r = reduction(a, b);
  assertClose(r, 0.958720630412077, 1e-9);
  assert.ok(r > 0.5);
});

Deno.test("cupedAdjust with a covariate that explains nothing: θ ≈ 0, nothing gained", () => {
  const a: ArmMoments = {
    n: 400,
    sumY: 8046.773184931578,
    sumYSquares: 175069.79731353323,
    sumX: 4072.0708039510096,
    sumXSquares: 61439.523938404716,
    sumXY: 81788.3900290352,
  };
  const b: ArmMoments = {
    n: 420,
    sumY: 8591.819704242978,
    sumYSquares: 189454.3706514401,
    sumX: 4227.3933475097365,
    sumXSquares: 62138.98725229024,
    sumXY: 86840.84011928024,
  };
  const { theta, arms } = cupedAdjust([a, b]);
  assertClose(theta, 0.005687053556044959, 1e-9);
  assertClose(arms[0].mean, 20.116598112800137, 1e-12);
  assertClose(arms[0].variance, 33.071469492757, 1e-9);
  assertClose(arms[1].mean, 20.457032485844053, 1e-12);
  assertClose(arms[1].variance, 32.67419795658436, 1e-9);
  // −2.97e−5: a pooled θ estimated from noise can even cost a little.
  const r = reduction(a, b);
  assert.ok(Math.abs(r - -2.9653581077093705e-05) < 1e-9, `reduction ${r}`);
});

Deno.test("cupedAdjust without spread in the covariate adjusts nothing", () => {
  // Everyone has x = 3 (or no covariate at all: x = 0): var(x) = 0, θ = 0.
  const arm = (n: number, sumY: number, sumYSquares: number, x: number): ArmMoments => ({
    n,
    sumY,
    sumYSquares,
    sumX: n * x,
    sumXSquares: n * x * x,
    sumXY: x * sumY,
  });
  for (const x of [0, 3]) {
    const a = arm(10, 20, 50, x);
    const b = arm(12, 30, 90, x);
    const { theta, arms } = cupedAdjust([a, b]);
    assert.equal(theta, 0);
    assert.deepEqual(arms, [unadjustedStatistics(a), unadjustedStatistics(b)]);
  }
});

Deno.test("cupedAdjust with too few users leaves NaN where nothing is defined", () => {
  const one: ArmMoments = { n: 1, sumY: 2, sumYSquares: 4, sumX: 1, sumXSquares: 1, sumXY: 2 };
  const some: ArmMoments = { n: 3, sumY: 6, sumYSquares: 14, sumX: 3, sumXSquares: 5, sumXY: 8 };
  const { arms } = cupedAdjust([one, some]);
  assert.equal(arms[0].n, 1);
  assert.ok(Number.isNaN(arms[0].variance));
  assert.ok(Number.isFinite(arms[1].variance));
});
