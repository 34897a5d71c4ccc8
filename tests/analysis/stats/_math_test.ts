/**
 * Reference values, unless a test says otherwise, come from an independent Python 3 computation with
 * the standard `decimal` module at 420 significant digits (no scipy, no code shared with ours):
 * - Φ(z) = (1 ± erf(|z|/√2)) / 2 with erf(x) = 2/√π · e^{−x²} · Σ 2ⁿ x^{2n+1} / (1·3·…·(2n+1))
 *   (all terms positive; 420 digits absorb the cancellation of 1 − erf down to 1e−308), π by the
 *   series recipe of the `decimal` documentation;
 * - the normal quantile by six Newton steps on that Φ;
 * - ln Γ of integers and half-integers from exact factorials: Γ(n) = (n−1)!,
 *   Γ(n + ½) = (2n)! √π / (4ⁿ n!); ln B(a, b) of integers from factorials;
 * - chi-square tails from closed forms: even df = 2m, Q = e^{−x/2} Σ_{k<m} (x/2)^k / k!;
 *   odd df, Q = erfc(√(x/2)) + Σ (x/2)^{a} e^{−x/2} / Γ(a + 1) for a = ½, 3/2, …, (df − 2)/2.
 * Printed with 17 significant digits.
 */

import assert from "node:assert/strict";
import {
  chiSquareSurvival,
  logBeta,
  logGamma,
  logRegularizedGammaQ,
  normalCdf,
  normalQuantile,
  regularizedBeta,
  regularizedGammaP,
  regularizedGammaQ,
  sampleVariance,
  SeededRandom,
  studentTCdf,
  studentTQuantile,
} from "../../../src/analysis/stats/_math.ts";

function assertClose(actual: number, expected: number, relative: number, absolute = 0): void {
  const tolerance = Math.max(relative * Math.abs(expected), absolute);
  assert.ok(
    Math.abs(actual - expected) <= tolerance,
    `expected ${expected}, got ${actual} (difference ${actual - expected}, tolerance ${tolerance})`,
  );
}

Deno.test("logGamma matches exact factorials at integers and half-integers", () => {
  const cases: [number, number][] = [
    [1, 0],
    [2, 0],
    [3, 6.9314718055994531e-1],
    [10, 1.2801827480081470e+1],
    [20, 3.9339884187199494e+1],
    [171, 7.0657306224578735e+2],
    [1000, 5.9052204232091812e+3],
    [0.5, 5.7236494292470009e-1],
    [1.5, -1.2078223763524522e-1],
    [4.5, 2.4537365708424422e+0],
    [9.5, 1.1689333420797268e+1],
    [50.5, 1.4651925549072063e+2],
  ];
  for (const [x, expected] of cases) assertClose(logGamma(x), expected, 1e-15, 1e-15);
});

Deno.test("logGamma of a non-positive argument is NaN", () => {
  assert.ok(Number.isNaN(logGamma(0)));
  assert.ok(Number.isNaN(logGamma(-1.5)));
});

Deno.test("logBeta matches exact values, also with one huge argument", () => {
  // B(3, 10⁶) = 2! / (10⁶ (10⁶ + 1)(10⁶ + 2)) exactly; naive lnΓ differences lose 1e−9 here.
  assertClose(logBeta(3, 1e6), -4.0753387493330377e+1, 1e-14);
  assertClose(logBeta(1e6, 3), -4.0753387493330377e+1, 1e-14);
  assertClose(logBeta(20, 30), -3.3968820791977383e+1, 1e-14);
  assertClose(logBeta(10000, 20000), -1.9098908538220892e+4, 1e-14);
  assertClose(logBeta(1, 1), 0, 0, 1e-15);
  // B(½, ½) = π.
  assertClose(logBeta(0.5, 0.5), Math.log(Math.PI), 1e-15);
});

Deno.test("regularizedGammaP and Q match closed forms for integer shapes", () => {
  // P(1, x) = 1 − e^{−x}; P(3, 2) = 1 − e^{−2}(1 + 2 + 2²/2) = 0.32332358381693654.
  assertClose(regularizedGammaP(1, 0.5), -Math.expm1(-0.5), 1e-15);
  assertClose(regularizedGammaP(3, 2), 3.2332358381693654e-1, 1e-14);
  assertClose(regularizedGammaQ(3, 2), 1 - 3.2332358381693654e-1, 1e-14);
  assert.equal(regularizedGammaP(2, 0), 0);
  assert.equal(regularizedGammaQ(2, 0), 1);
});

Deno.test("logRegularizedGammaQ stays accurate where Q underflows", () => {
  // Q(1, x) = e^{−x}, so ln Q(1, 2000) = −2000 exactly, far below the smallest double.
  assertClose(logRegularizedGammaQ(1, 2000), -2000, 1e-15);
  // ln Q(½, 1000) = ln erfc(√1000) ≈ ln 1.6e−436 (computed at 1200 digits, as erfc is that small).
  assertClose(logRegularizedGammaQ(0.5, 1000), -1.0040267419589519e+3, 1e-14);
  assert.equal(regularizedGammaQ(1, 2000), 0);
});

Deno.test("chiSquareSurvival matches published 5 % critical values", () => {
  // Critical values χ²_{0.95} for df 1–5 as tabulated (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.4):
  // 3.841, 5.991, 7.815, 9.488, 11.070; here with 16 digits, their tails computed in closed form.
  const cases: [number, number, number][] = [
    [3.841458820694124, 1, 5.0000000000000058e-2],
    [5.991464547107979, 2, 5.0000000000000075e-2],
    [7.814727903251178, 3, 5.0000000000000044e-2],
    [9.487729036781154, 4, 5.0000000000000057e-2],
    [11.070497693516351, 5, 5.0000000000000061e-2],
  ];
  for (const [x, df, expected] of cases) assertClose(chiSquareSurvival(x, df), expected, 1e-13);
});

Deno.test("chiSquareSurvival matches closed forms across df and the body of the distribution", () => {
  const cases: [number, number, number][] = [
    [0.5, 1, 4.7950012218695346e-1],
    [2, 3, 5.7240670447087983e-1],
    [10, 7, 1.8857346751345007e-1],
    [0.0157907740934312, 1, 9.0000000000000008e-1],
    [30, 30, 4.6565370894400963e-1],
    [120, 99, 7.4243855805966790e-2],
    [1e-8, 1, 9.9992021154405269e-1],
    [300, 40, 1.4955969722726266e-41],
  ];
  for (const [x, df, expected] of cases) assertClose(chiSquareSurvival(x, df), expected, 1e-12);
});

Deno.test("chiSquareSurvival reaches 1e-100 and 1e-300 and underflows to 0", () => {
  // df = 2: Q = e^{−x/2}, so x = 200·ln 10 gives 1e−100 and x = 600·ln 10 gives 1e−300.
  assertClose(chiSquareSurvival(460.51701859880916, 2), 9.9999999999998840e-101, 1e-12);
  assertClose(chiSquareSurvival(1381.5510557964274, 2), 1.0000000000000052e-300, 1e-12);
  assertClose(chiSquareSurvival(455, 1), 5.8883067349669747e-101, 1e-12);
  assertClose(chiSquareSurvival(1370, 1), 6.9429373646432677e-300, 1e-12);
  assertClose(chiSquareSurvival(1400, 10), 9.9203914798001453e-295, 1e-12);
  // True values 5.9e−325, 3.7e−348 and 2.0e−341 are below the smallest double (4.9e−324).
  assert.equal(chiSquareSurvival(1500, 3), 0);
  assert.equal(chiSquareSurvival(1600, 2), 0);
  assert.equal(chiSquareSurvival(1600, 7), 0);
});

Deno.test("chiSquareSurvival is 1 at zero and for df 0", () => {
  assert.equal(chiSquareSurvival(0, 3), 1);
  assert.equal(chiSquareSurvival(5, 0), 1);
  assert.throws(() => chiSquareSurvival(1, -1), RangeError);
});

Deno.test("normalCdf matches high-precision values from the centre to the far tail", () => {
  const cases: [number, number][] = [
    [-37.5, 4.6053530095819548e-308],
    [-20, 2.7536241186062337e-89],
    [-5, 2.8665157187919391e-7],
    [-1.96, 2.4997895148220434e-2],
    [-1, 1.5865525393145705e-1],
    [-0.5, 3.0853753872598690e-1],
    [0, 0.5],
    [0.5, 6.9146246127401310e-1],
    [1.96, 9.7500210485177957e-1],
    [3, 9.9865010196836991e-1],
    [8, 9.9999999999999938e-1],
  ];
  for (const [z, expected] of cases) assertClose(normalCdf(z), expected, 1e-15);
  // Φ(−40) ≈ 3.7e−350 is below the smallest double.
  assert.equal(normalCdf(-40), 0);
  assert.equal(normalCdf(40), 1);
});

Deno.test("normalQuantile inverts the CDF to full double precision", () => {
  // 1.959963984540054 is the textbook z_{0.975}; the double nearest 0.975 is
  // 0.97499999999999997780, whose exact quantile is 1.95996398454005385…: both within 4e−16.
  assertClose(normalQuantile(0.975), 1.959963984540054, 0, 4e-16);
  assertClose(normalQuantile(0.975), 1.9599639845400539, 0, 2.3e-16);
  const cases: [number, number][] = [
    [0.8, 8.4162123357291436e-1],
    [0.025, -1.9599639845400542],
    [1e-10, -6.3613409024040562],
    [1e-300, -3.7047096299361199e+1],
    [0.999, 3.0902323061678133],
    [0.3, -5.2440051270804082e-1],
  ];
  for (const [p, expected] of cases) assertClose(normalQuantile(p), expected, 3e-16);
  assert.equal(normalQuantile(0.5), 0);
  assert.equal(normalQuantile(0), -Infinity);
  assert.equal(normalQuantile(1), Infinity);
  assert.throws(() => normalQuantile(1.5), RangeError);
});

Deno.test("sampleVariance uses n − 1 and is null below two values", () => {
  // 1, 2, 3, 4: mean 2.5, squared deviations 2.25 + 0.25 + 0.25 + 2.25 = 5, / 3.
  assertClose(sampleVariance(4, 10, 30) as number, 5 / 3, 1e-15);
  assert.equal(sampleVariance(1, 7, 49), null);
  assert.equal(sampleVariance(0, 0, 0), null);
});

Deno.test("sampleVariance of equal values is exactly 0 despite rounding", () => {
  // Three users with 0.1 each: the float sums leave a rounding residue that must not show.
  const values = [0.1, 0.1, 0.1];
  const sum = values.reduce((a, b) => a + b, 0);
  const sumSquares = values.reduce((a, b) => a + b * b, 0);
  assert.equal(sampleVariance(3, sum, sumSquares), 0);
});

Deno.test("SeededRandom gives the same sequence for the same seed", () => {
  const a = new SeededRandom(42);
  const b = new SeededRandom(42);
  const c = new SeededRandom(43);
  const first = Array.from({ length: 5 }, () => a.uniform());
  assert.deepEqual(first, Array.from({ length: 5 }, () => b.uniform()));
  assert.notDeepEqual(first, Array.from({ length: 5 }, () => c.uniform()));
});

Deno.test("SeededRandom.uniform follows mulberry32", () => {
  // From an independent Python transcription of mulberry32 (32-bit arithmetic by masking):
  //   def mulberry32(a):
  //       a = (a + 0x6D2B79F5) & 0xFFFFFFFF; t = a
  //       t = imul(t ^ (t >> 15), t | 1); t ^= (t + imul(t ^ (t >> 7), t | 61)) & 0xFFFFFFFF
  //       return a, ((t ^ (t >> 14)) & 0xFFFFFFFF) / 2**32
  // with imul(x, y) = (x * y) & 0xFFFFFFFF, seed 1: 0.6270739405881613, 0.002735721180215478,
  // 0.5274470399599522.
  const random = new SeededRandom(1);
  assert.deepEqual(
    [random.uniform(), random.uniform(), random.uniform()],
    [0.6270739405881613, 0.002735721180215478, 0.5274470399599522],
  );
});

Deno.test("SeededRandom samplers have the moments of their distributions", () => {
  // Normal(0, 1): mean 0, variance 1. Gamma(k): mean k, variance k. Beta(3, 9): mean 3/12 = 0.25,
  // variance αβ/((α+β)²(α+β+1)) = 27/1872. 200 000 draws: tolerances are over 5 standard errors.
  const random = new SeededRandom(7);
  const n = 200_000;
  const moments = (draw: () => number) => {
    let sum = 0;
    let sumSquares = 0;
    for (let i = 0; i < n; i++) {
      const x = draw();
      sum += x;
      sumSquares += x * x;
    }
    const mean = sum / n;
    return { mean, variance: sumSquares / n - mean * mean };
  };
  const normal = moments(() => random.normal());
  assertClose(normal.mean, 0, 0, 0.012);
  assertClose(normal.variance, 1, 0.02);
  for (const shape of [0.5, 1, 3.5, 1000]) {
    const gamma = moments(() => random.gamma(shape));
    assertClose(gamma.mean, shape, 0, 6 * Math.sqrt(shape / n));
    assertClose(gamma.variance, shape, 0.04);
  }
  const beta = moments(() => random.beta(3, 9));
  assertClose(beta.mean, 0.25, 0, 0.0015);
  assertClose(beta.variance, 27 / 1872, 0.03);
});

// Student's t and the incomplete beta function against SciPy 1.17.1 (`scipy.stats.t.cdf`,
// `t.ppf`, `scipy.special.betainc`; printed with repr), which agree with mpmath's 40-digit
// `quad` of the t density and `betainc` to about 1e-15 here. Cases cover small and non-integer
// df, both sides of df = 30 (where the tails near the centre switch to the large-df expansion),
// Welch-sized df up to 1e9, and far tails.
const T_CDF: [number, number, number][] = [
  [-2, 1, 0.14758361765043326],
  [2, 1, 0.8524163823495667],
  [0.5, 2.5, 0.6711510400651426],
  [-3, 7.3, 0.009490275511566748],
  [-40, 30, 6.863022597203209e-28],
  [-1000.0, 3, 1.102653821288296e-09],
  [-1.96, 29.9, 0.029686936740410088],
  [-2.5, 30, 0.009057824534033344],
  [-4, 31, 0.00018265252678232165],
  [-6, 45.5, 1.5030369303293536e-07],
  [-1.96, 1000, 0.025136592477874368],
  [-3, 1e4, 0.001353224094998833],
  [-4, 1e6, 3.167351700502405e-05],
  [-2, 2e7, 0.022750138697050174],
  [-10, 1e6, 7.63930538408909e-24],
  [-6, 1e9, 9.865879822492407e-10],
  [0.1, 5e8, 0.5398278372569829],
  [-0.01, 200, 0.4960156275766405],
];

Deno.test("studentTCdf matches SciPy for small, non-integer and huge degrees of freedom", () => {
  for (const [t, df, expected] of T_CDF) assertClose(studentTCdf(t, df), expected, 1e-13);
  assert.equal(studentTCdf(0, 4.5), 0.5);
  assert.equal(studentTCdf(-Infinity, 3), 0);
  assert.equal(studentTCdf(Infinity, 3), 1);
  assert.equal(studentTCdf(1.5, Infinity), normalCdf(1.5));
  assert.throws(() => studentTCdf(1, 0), RangeError);
});

Deno.test("studentTQuantile matches SciPy and inverts studentTCdf", () => {
  const cases: [number, number, number][] = [
    [0.975, 1, 12.706204736174694],
    [0.975, 2, 4.302652729749462],
    [0.975, 3.7, 2.8675207071911895],
    [0.975, 30, 2.0422724563012378],
    [0.995, 31, 2.744041919294269],
    [0.975, 1234.5, 1.9618874833313453],
    [0.975, 1e6, 1.959966356814107],
    [0.975, 5e8, 1.9599639892845964],
    [0.9, 1.01, 3.045252756626367],
    [0.999999, 1, 318309.88617359026],
    [1e-10, 2.2, -27267.755886474093],
    [0.6, 9, 0.260955336473911],
    [0.025, 100, -1.983971518523552],
  ];
  for (const [p, df, expected] of cases) assertClose(studentTQuantile(p, df), expected, 1e-13);
  for (const df of [1.5, 7, 64, 3e5]) {
    for (const p of [0.001, 0.2, 0.8, 0.975]) {
      assertClose(studentTCdf(studentTQuantile(p, df), df), p, 1e-13);
    }
  }
  assert.equal(studentTQuantile(0.5, 3), 0);
  assert.equal(studentTQuantile(1, 3), Infinity);
  assert.equal(studentTQuantile(0.975, Infinity), normalQuantile(0.975));
  assert.throws(() => studentTQuantile(1.2, 3), RangeError);
});

Deno.test("regularizedBeta matches SciPy", () => {
  const cases: [number, number, number, number][] = [
    [0.3, 2.5, 4.1, 0.3631825104219686],
    [0.999, 1e5, 0.5, 1.9865718783974146e-45],
    [0.5, 0.5, 0.5, 0.5000000000000001],
    [0.01, 3, 200, 0.32876182896161066],
    [0.9, 50, 0.5, 0.001204149832559813],
    [0.2, 1, 1, 0.2],
  ];
  for (const [x, a, b, expected] of cases) assertClose(regularizedBeta(x, a, b), expected, 1e-13);
  assert.equal(regularizedBeta(0, 2, 3), 0);
  assert.equal(regularizedBeta(1, 2, 3), 1);
  assert.throws(() => regularizedBeta(0.5, 0, 1), RangeError);
});
