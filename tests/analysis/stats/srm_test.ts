/**
 * Expected chi-square statistics are worked by hand (Σ (O − E)² / E, shown in each test); their
 * p-values come from the closed forms of the chi-square tail evaluated in an independent Python 3
 * `decimal` computation at 420 digits (df = 1: erfc(√(x/2)); df = 2: e^{−x/2}).
 */

import assert from "node:assert/strict";
import { pValueText, srm } from "../../../src/analysis/stats/srm.ts";

function assertClose(actual: number, expected: number, relative: number): void {
  assert.ok(
    Math.abs(actual - expected) <= relative * Math.abs(expected),
    `expected ${expected}, got ${actual}`,
  );
}

Deno.test("srm of a plausible 1000/1100 split finds no mismatch", () => {
  // E = 1050 each: χ² = 2 · 50² / 1050 = 100/21; p = erfc(√(50/21)) = 0.029096331741252216.
  const result = srm({ A: 1000, B: 1100 });
  assertClose(result.chi_square, 100 / 21, 1e-15);
  assertClose(result.p_value, 2.9096331741252216e-2, 1e-13);
  assert.equal(result.enough_data, true);
  assert.equal(result.mismatch, false);
  assert.deepEqual(result.expected_split, { A: 0.5, B: 0.5 });
});

Deno.test("srm tests three variants against a custom split and flags p < 0.001", () => {
  // N = 10 000, E = 5000/2500/2500: χ² = 200²/5000 + 100²/2500 + 100²/2500 = 16; df 2: p = e^{−8}.
  const split = { A: 0.5, B: 0.25, C: 0.25 };
  const result = srm({ A: 5200, B: 2400, C: 2400 }, split);
  assertClose(result.chi_square, 16, 1e-15);
  assertClose(result.p_value, 3.3546262790251184e-4, 1e-13);
  assert.equal(result.mismatch, true);
  assert.deepEqual(result.expected_split, split);
});

Deno.test("srm reports a p-value near 1e-199 for a gross mismatch", () => {
  // χ² = 2 · 5000² / 55 000 = 10 000/11; p = erfc(√(5000/11)) = 1.0365190862301917e−199.
  const result = srm({ A: 50_000, B: 60_000 });
  assertClose(result.chi_square, 10_000 / 11, 1e-15);
  assertClose(result.p_value, 1.0365190862301917e-199, 1e-12);
  assert.equal(result.mismatch, true);
});

Deno.test("srm reports 0 for a p-value below the smallest double", () => {
  // χ² = 2 · 25 000² / 125 000 = 10 000; erfc(√5000) ≈ 1e−2174.
  const result = srm({ A: 100_000, B: 150_000 });
  assert.equal(result.chi_square, 10_000);
  assert.equal(result.p_value, 0);
  assert.equal(result.mismatch, true);
  // Warnings say so, where three digits of 0 read "p = 0.00".
  assert.equal(pValueText(result.p_value), "p < 5e-324");
  assert.equal(pValueText(1.0365190862301917e-199), "p = 1.04e-199");
});

Deno.test("srm with fewer than 8 users in a variant never flags a mismatch", () => {
  // 7 vs 30: E = 18.5, χ² = 2 · 11.5² / 18.5 = 14.297297…, p = 1.5608882750954235e−4 < 0.001.
  const result = srm({ A: 7, B: 30 });
  assertClose(result.chi_square, 14.297297297297296, 1e-15);
  assertClose(result.p_value, 1.5608882750954235e-4, 1e-13);
  assert.equal(result.enough_data, false);
  assert.equal(result.mismatch, false);
  assert.equal(srm({ A: 8, B: 8 }).enough_data, true);
});

Deno.test("srm of a single variant has df 0, p 1 and not enough data", () => {
  assert.deepEqual(srm({ A: 50 }), {
    chi_square: 0,
    p_value: 1,
    mismatch: false,
    enough_data: false,
    expected_split: { A: 1 },
  });
});

Deno.test("srm without users gives chi-square 0 and p 1", () => {
  const result = srm({ A: 0, B: 0 });
  assert.equal(result.chi_square, 0);
  assert.equal(result.p_value, 1);
  assert.equal(result.enough_data, false);
});

Deno.test("srm refuses a split that does not name exactly the variants", () => {
  assert.throws(() => srm({ A: 10, B: 10 }, { A: 1 }), RangeError);
  assert.throws(() => srm({ A: 10 }, { A: 0.5, B: 0.5 }), RangeError);
  assert.throws(() => srm({ A: 10, B: 10 }, { A: 0, B: 1 }), RangeError);
  assert.throws(() => srm({ A: -1, B: 10 }), RangeError);
});
