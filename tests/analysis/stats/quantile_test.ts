/**
 * `linearQuantile` against NumPy 2.4's `numpy.quantile(values, p)` (default method "linear"),
 * printed with repr. The heavy-tailed sample is x_i = 1e6 / ((7919 i mod 997) + 1)² for
 * i = 0 … 499, built the same way on both sides (integer arithmetic, one rounded division).
 */
import assert from "node:assert/strict";
import { linearQuantile } from "../../../src/analysis/stats/quantile.ts";

const heavy = () => Float64Array.from({ length: 500 }, (_, i) => 1e6 / ((i * 7919) % 997 + 1) ** 2);

Deno.test("linearQuantile matches numpy.quantile on a heavy-tailed sample", () => {
  const cases: [number, number][] = [
    [0.99, 2502.7008310249284],
    [0.95, 343.5886805149618],
    [0.5, 3.852235934027725],
    [0.999, 502949.2187499764],
    [0.75, 15.28876692182694],
    [0, 1.0060271084064631],
    [1, 1000000.0],
  ];
  for (const [p, expected] of cases) {
    const q = linearQuantile(heavy(), p);
    assert.ok(Math.abs(q - expected) <= 1e-12 * expected, `p ${p}: ${q} vs ${expected}`);
  }
});

Deno.test("linearQuantile on one value, ties, two values and a huge one", () => {
  assert.equal(linearQuantile(Float64Array.of(5), 0.99), 5);
  assert.equal(linearQuantile(Float64Array.of(1, 2, 2, 2, 3), 0.6), 2);
  assert.ok(Math.abs(linearQuantile(Float64Array.of(3, 1), 0.99) - 2.98) < 1e-15);
  const q = linearQuantile(Float64Array.of(-2.5, 7, 0, 0, 1e300), 0.9);
  assert.ok(Math.abs(q - 6.000000000000001e299) <= 1e-15 * 6e299);
  assert.equal(linearQuantile(new Float64Array(1000).fill(4), 0.99), 4);
  assert.throws(() => linearQuantile(new Float64Array(0), 0.5), RangeError);
  assert.throws(() => linearQuantile(Float64Array.of(1), 1.5), RangeError);
});

Deno.test("linearQuantile equals the sorted order statistic on random samples", () => {
  let seed = 7;
  const next = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
  for (let trial = 0; trial < 200; trial++) {
    const n = 1 + Math.floor(next() * 60);
    const values = Float64Array.from({ length: n }, () => Math.floor(next() * 8) * next());
    const p = next();
    const sorted = values.slice().sort();
    const h = (n - 1) * p;
    const low = Math.floor(h);
    const expected = low + 1 < n
      ? sorted[low] + (h - low) * (sorted[low + 1] - sorted[low])
      : sorted[low];
    assert.equal(linearQuantile(values, p), expected);
  }
});
