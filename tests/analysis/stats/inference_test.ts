/**
 * The comparison formulas of docs/api.md ("Comparisons with the control") against an independent Python computation
 * (SciPy 1.17.1, NumPy 2.4), printed with repr:
 *
 *   lift = (mB − mA) / mA;  V = vB / (mA² nB) + vA mB² / (mA⁴ nA);  se = √V
 *   df, _ = scipy.stats._stats_py._unequal_var_ttest_denom(vB, nB, vA, nA)   # SciPy's own Welch df
 *   q = scipy.stats.t.ppf(1 − α/2, df);  ci = lift ∓ q se;  p = 2 scipy.stats.t.sf(|lift| / se, df)
 *   ρ = √((−2 ln α + ln(−2 ln α + 1)) / N);  n = nA + nB;  s2 = V n
 *   h = √s2 · √(2 (n ρ² + 1) ln(√(n ρ² + 1) / α) / (n ρ)²)
 *   sequential p = min(1, √(n ρ² + 1) · exp(−ρ² n lift² / (2 V (n ρ² + 1))))
 *
 * with numpy for the closed forms; Holm by a plain Python loop over the sorted p-values. A
 * conversion arm's variance is p (1 − p) n / (n − 1).
 */

import assert from "node:assert/strict";
import {
  type ArmStatistics,
  compareArms,
  type Comparison,
  DEFAULT_SEQUENTIAL_TUNING,
  holmAdjust,
  relativeLift,
  sequentialInterval,
  sequentialRho,
  welchDegreesOfFreedom,
} from "../../../src/analysis/stats/inference.ts";

function assertClose(actual: number, expected: number, relative = 1e-12): void {
  const tolerance = relative * Math.max(1e-300, Math.abs(expected));
  assert.ok(
    Math.abs(actual - expected) <= tolerance,
    `expected ${expected}, got ${actual} (difference ${actual - expected})`,
  );
}

interface Expected {
  lift: number;
  se: number;
  df: number;
  ci: [number, number];
  p: number;
  sci: [number, number];
  sp: number;
}

function assertComparison(found: Comparison | { reason: string }, expected: Expected): void {
  assert.ok(!("reason" in found), `no comparison: ${JSON.stringify(found)}`);
  assertClose(found.lift, expected.lift);
  assertClose(found.liftSe, expected.se);
  assertClose(found.degreesOfFreedom, expected.df);
  assertClose(found.ci[0], expected.ci[0], 1e-11);
  assertClose(found.ci[1], expected.ci[1], 1e-11);
  assertClose(found.pValue, expected.p, 1e-11);
  assertClose(found.sequentialCi[0], expected.sci[0], 1e-11);
  assertClose(found.sequentialCi[1], expected.sci[1], 1e-11);
  assertClose(found.sequentialPValue, expected.sp, 1e-11);
}

function conversion(n: number, conversions: number): ArmStatistics {
  const p = conversions / n;
  return { n, mean: p, variance: p * (1 - p) * n / (n - 1) };
}

const DEFAULTS = { alpha: 0.05, tuning: DEFAULT_SEQUENTIAL_TUNING };

Deno.test("compareArms on two numeric arms matches SciPy and the closed forms", () => {
  const a = { n: 1000, mean: 10, variance: 25 };
  const b = { n: 1050, mean: 10.4, variance: 28 };
  assertComparison(compareArms(a, b, DEFAULTS), {
    lift: 0.040000000000000036,
    se: 0.023174698847378078,
    df: 2047.8739225123986,
    ci: [-0.005448436427796868, 0.08544843642779694],
    p: 0.08449459929536422,
    sci: [-0.03227238238908067, 0.11227238238908074],
    sp: 0.6600160341961046,
  });
  // α = 0.1 and N = 20 000 change both intervals (the p-value of the t-test stays).
  assertComparison(compareArms(a, b, { alpha: 0.1, tuning: 20_000 }), {
    lift: 0.040000000000000036,
    se: 0.023174698847378078,
    df: 2047.8739225123986,
    ci: [0.0018637610125909337, 0.07813623898740914],
    p: 0.08449459929536422,
    sci: [-0.04347685822054141, 0.12347685822054148],
    sp: 0.714553018655426,
  });
});

Deno.test("compareArms on two conversion arms matches SciPy", () => {
  assertComparison(compareArms(conversion(2000, 200), conversion(2000, 236), DEFAULTS), {
    lift: 0.17999999999999988,
    se: 0.10712300251969423,
    df: 3977.079161515623,
    ci: [-0.03002114332380207, 0.39002114332380183],
    p: 0.09297528112759046,
    sci: [-0.14569396086088343, 0.5056939608608833],
    sp: 0.8006375572304573,
  });
  // Large and clear, up and down: the sequential interval excludes 0 and its p is below α.
  assertComparison(compareArms(conversion(50000, 5000), conversion(50000, 5400), DEFAULTS), {
    lift: 0.07999999999999993,
    se: 0.02006569342537289,
    df: 99882.51481652043,
    ci: [0.04067148698319554, 0.11932851301680433],
    p: 6.698856443626845e-05,
    sci: [0.013043639722892186, 0.14695636027710768],
    sp: 0.004695160479118316,
  });
  assertComparison(compareArms(conversion(50000, 5000), conversion(50000, 4650), DEFAULTS), {
    lift: -0.07000000000000006,
    se: 0.01801084361738106,
    df: 99893.1351577377,
    ci: [-0.10530103254949166, -0.034698967450508454],
    p: 0.00010174562082888585,
    sci: [-0.13009961921451035, -0.009900380785489785],
    sp: 0.006952740841329783,
  });
});

Deno.test("compareArms on tiny samples: two and three users", () => {
  // A = [1, 3], B = [2, 5, 9] (numpy mean and var(ddof=1)).
  const a = { n: 2, mean: 2, variance: 2 };
  const b = { n: 3, mean: 16 / 3, variance: 12.333333333333334 };
  assertComparison(compareArms(a, b, DEFAULTS), {
    lift: 1.6666666666666665,
    se: 1.674979270186815,
    df: 2.764206401045069,
    ci: [-3.9305673554438694, 7.263900688777202],
    p: 0.39867019494375383,
    sci: [-44.56863435002328, 47.90196768335661],
    sp: 1.0,
  });
});

Deno.test("compareArms with a zero-variance arm: Welch's df falls to the other arm's n − 1", () => {
  const a = { n: 5, mean: 3, variance: 0 };
  const b = { n: 8, mean: 3.5, variance: 2 };
  assertComparison(compareArms(a, b, DEFAULTS), {
    lift: 0.16666666666666666,
    se: 0.16666666666666666,
    df: 7.0,
    ci: [-0.227437375265464, 0.5607707085987973],
    p: 0.3506166628202074,
    sci: [-2.7074043337730678, 3.040737667106401],
    sp: 1.0,
  });
  assert.equal(welchDegreesOfFreedom(a, b), 7);
});

Deno.test("compareArms refuses what has no lift or no variance, without NaN", () => {
  const some = { n: 10, mean: 2, variance: 1 };
  assert.deepEqual(compareArms({ n: 10, mean: 0, variance: 0 }, some, DEFAULTS), {
    reason: "zero_control_mean",
  });
  assert.deepEqual(compareArms({ n: 10, mean: 0, variance: 1 }, some, DEFAULTS), {
    reason: "zero_control_mean",
  });
  // Both arms without spread: V = 0.
  assert.deepEqual(
    compareArms({ n: 10, mean: 2, variance: 0 }, { n: 12, mean: 3, variance: 0 }, DEFAULTS),
    { reason: "zero_variance" },
  );
  // A variant that converted nobody against a spread-free control: V = 0 as well.
  assert.deepEqual(compareArms(conversion(10, 10), conversion(10, 0), DEFAULTS), {
    reason: "zero_variance",
  });
  assert.deepEqual(compareArms({ n: 1, mean: 2, variance: NaN }, some, DEFAULTS), {
    reason: "too_few_users",
  });
  assert.deepEqual(compareArms(some, { n: 0, mean: NaN, variance: NaN }, DEFAULTS), {
    reason: "too_few_users",
  });
  assert.deepEqual(relativeLift(some, { n: 1, mean: 5, variance: NaN }), {
    reason: "too_few_users",
  });
});

Deno.test("holmAdjust across four arms matches a plain step-down", () => {
  // B, C, D against A = 500/5000: 560, 540, 470 of 5000 (SciPy p-values as above).
  const control = conversion(5000, 500);
  const found = [560, 540, 470].map((c) => compareArms(control, conversion(5000, c), DEFAULTS));
  const expected = [
    {
      p: 0.06562586848014322,
      sp: 0.8338811637632164,
      ci: [-0.007757795858831712, 0.24775779585883165],
    },
    { p: 0.20746213144505338, sp: 1.0, ci: [-0.04439244215277477, 0.20439244215277463] },
    { p: 0.2958863976649836, sp: 1.0, ci: [-0.1725097395929904, 0.052509739592990295] },
  ];
  const pValues = found.map((f, i) => {
    assert.ok(!("reason" in f));
    assertClose(f.pValue, expected[i].p, 1e-11);
    assertClose(f.sequentialPValue, expected[i].sp, 1e-11);
    assertClose(f.ci[0], expected[i].ci[0], 1e-11);
    assertClose(f.ci[1], expected[i].ci[1], 1e-11);
    return f.pValue;
  });
  // Sorted: B (×3), C (×2, then the running maximum), D (×1, likewise).
  const adjusted = holmAdjust(pValues);
  assertClose(adjusted[0]!, 0.19687760544042965, 1e-11);
  assertClose(adjusted[1]!, 0.41492426289010675, 1e-11);
  assertClose(adjusted[2]!, 0.41492426289010675, 1e-11);
});

Deno.test("holmAdjust: ties get one adjusted value, nulls are skipped, one p stays as it is", () => {
  // k = 4, sorted 0.01, 0.03, 0.04, 0.04: 0.04, max(0.04, 0.09), max(0.09, 0.08), max(0.09, 0.04).
  const tied = holmAdjust([0.04, 0.01, 0.04, 0.03]);
  assert.deepEqual(tied.map((p) => Number(p!.toPrecision(12))), [0.09, 0.04, 0.09, 0.09]);
  // Nulls do not count in k: two p-values, 0.2 ×2 = 0.4, then max(0.4, 0.3).
  assert.deepEqual(holmAdjust([null, 0.3, 0.2, null]), [null, 0.4, 0.4, null]);
  assert.deepEqual(holmAdjust([0.052]), [0.052]);
  // Capped at 1.
  assert.deepEqual(holmAdjust([0.6, 0.7, 0.9]), [1, 1, 1]);
  assert.deepEqual(holmAdjust([]), []);
});

Deno.test("sequentialInterval: its p-value is below α exactly when the interval excludes 0", () => {
  // ρ for α = 0.05, N = 5000: √((−2 ln 0.05 + ln(−2 ln 0.05 + 1)) / 5000) = 0.03984006677137368
  // (numpy).
  assertClose(sequentialRho(0.05, 5000), 0.03984006677137368);
  for (const alpha of [0.01, 0.05, 0.2]) {
    for (const n of [10, 1000, 1e6]) {
      for (const lift of [-0.3, -0.02, 0, 0.001, 0.05, 0.4]) {
        const { ci, pValue } = sequentialInterval(lift, 0.0004, n, alpha, 5000);
        const excludes = ci[0] > 0 || ci[1] < 0;
        assert.equal(pValue < alpha, excludes, `α ${alpha}, n ${n}, lift ${lift}`);
        assert.ok(pValue <= 1 && pValue > 0);
      }
    }
  }
});
