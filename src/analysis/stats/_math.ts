/**
 * Numerical building blocks for the analysis: log-gamma and log-beta, the regularized incomplete
 * gamma function (chi-square tail), the standard normal CDF and quantile, the regularized incomplete
 * beta function and Student's t CDF and quantile (any real degrees of freedom, as Welch's test
 * needs), the sample variance from aggregated sums, and a seeded random source with normal, gamma
 * and beta samplers (for simulations in the tests).
 *
 * Accuracy targets: relative error of a few units in 1e-15 for the distribution tails that the
 * analysis reports (p-values down to the smallest double, normal tails down to about -37.5).
 */

const EPSILON = Number.EPSILON;
const TINY = 1e-300;
const LN_SQRT_2PI = 0.91893853320467274178; // ln(sqrt(2π))
const SQRT_2PI = 2.50662827463100050242; // sqrt(2π)
const MAX_ITERATIONS = 100_000;

/** Lanczos coefficients, g = 7, n = 9 (used below x = 10). */
const LANCZOS = [
  0.99999999999980993,
  676.5203681218851,
  -1259.1392167224028,
  771.32342877765313,
  -176.61502916214059,
  12.507343278686905,
  -0.13857109526572012,
  9.9843695780195716e-6,
  1.5056327351493116e-7,
];

/**
 * Stirling's remainder δ(x) = lnΓ(x) − [(x − ½)ln x − x + ln√(2π)] for x ≥ 10, from its
 * asymptotic series with Bernoulli-number coefficients B₂ₖ / (2k(2k − 1)).
 */
function stirlingRemainder(x: number): number {
  const r = 1 / x;
  const r2 = r * r;
  return r * (1 / 12 +
    r2 * (-1 / 360 +
        r2 * (1 / 1260 +
            r2 * (-1 / 1680 +
                r2 * (1 / 1188 +
                    r2 * (-691 / 360360 + r2 * (1 / 156 + r2 * (-3617 / 122400))))))));
}

/** ln Γ(x) for x > 0: Lanczos below 10, Stirling's series with its remainder from 10 on. */
export function logGamma(x: number): number {
  if (Number.isNaN(x) || x <= 0) return NaN;
  if (x === Infinity) return Infinity;
  if (x >= 10) return (x - 0.5) * Math.log(x) - x + LN_SQRT_2PI + stirlingRemainder(x);
  if (x < 0.5) {
    // Reflection: Γ(x)Γ(1 − x) = π / sin(πx).
    return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  }
  const z = x - 1;
  let series = LANCZOS[0];
  for (let i = 1; i < LANCZOS.length; i++) series += LANCZOS[i] / (z + i);
  const t = z + 7.5;
  return LN_SQRT_2PI + (z + 0.5) * Math.log(t) - t + Math.log(series);
}

/** ln B(a, b) for a, b > 0, without the cancellation of three large log-gammas. */
export function logBeta(a: number, b: number): number {
  if (Number.isNaN(a) || Number.isNaN(b) || a <= 0 || b <= 0) return NaN;
  const p = Math.min(a, b);
  const q = Math.max(a, b);
  const s = p + q;
  if (p >= 10) {
    const correction = stirlingRemainder(p) + stirlingRemainder(q) - stirlingRemainder(s);
    return -0.5 * Math.log(q) + LN_SQRT_2PI + correction + (p - 0.5) * Math.log(p / s) +
      q * Math.log1p(-p / s);
  }
  if (q >= 10) {
    const correction = stirlingRemainder(q) - stirlingRemainder(s);
    return logGamma(p) + correction + p - p * Math.log(s) + (q - 0.5) * Math.log1p(-p / s);
  }
  return logGamma(p) + logGamma(q) - logGamma(s);
}

/** Series for P(a, x) without its prefactor e^{−x} x^a / Γ(a): Σ xⁿ / (a(a+1)…(a+n)). */
function gammaSeries(a: number, x: number): number {
  let term = 1 / a;
  let sum = term;
  for (let n = 1; n < MAX_ITERATIONS; n++) {
    term *= x / (a + n);
    sum += term;
    if (Math.abs(term) < Math.abs(sum) * EPSILON) return sum;
  }
  throw new RangeError(`Cannot evaluate the incomplete gamma series: a=${a}, x=${x}`);
}

/**
 * Continued fraction for Q(a, x) without its prefactor e^{−x} x^a / Γ(a) (modified Lentz), valid
 * and fast for x > a + 1.
 */
function gammaContinuedFraction(a: number, x: number): number {
  let b = x + 1 - a;
  let c = 1 / TINY;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i < MAX_ITERATIONS; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < TINY) d = TINY;
    c = b + an / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < EPSILON) return h;
  }
  throw new RangeError(`Cannot evaluate the incomplete gamma fraction: a=${a}, x=${x}`);
}

function checkGammaArguments(a: number, x: number): void {
  if (!(a > 0) || !(x >= 0)) {
    throw new RangeError(`Cannot evaluate the incomplete gamma function: a=${a}, x=${x}`);
  }
}

/** ln of the prefactor e^{−x} x^a / Γ(a). */
function logGammaPrefactor(a: number, x: number): number {
  return -x + a * Math.log(x) - logGamma(a);
}

/** Regularized lower incomplete gamma P(a, x) = γ(a, x) / Γ(a). */
export function regularizedGammaP(a: number, x: number): number {
  checkGammaArguments(a, x);
  if (x === 0) return 0;
  if (x < a + 1) return gammaSeries(a, x) * Math.exp(logGammaPrefactor(a, x));
  return 1 - Math.exp(logRegularizedGammaQ(a, x));
}

/** Regularized upper incomplete gamma Q(a, x) = 1 − P(a, x); 0 below the smallest double. */
export function regularizedGammaQ(a: number, x: number): number {
  return Math.exp(logRegularizedGammaQ(a, x));
}

/** ln Q(a, x), accurate in the far tail (e.g. ln Q = −2000 where Q itself underflows). */
export function logRegularizedGammaQ(a: number, x: number): number {
  checkGammaArguments(a, x);
  if (x === 0) return 0;
  if (x === Infinity) return -Infinity;
  if (x < a + 1) return Math.log1p(-gammaSeries(a, x) * Math.exp(logGammaPrefactor(a, x)));
  return logGammaPrefactor(a, x) + Math.log(gammaContinuedFraction(a, x));
}

/**
 * Survival function of the chi-square distribution, P(X ≥ x) for df degrees of freedom:
 * Q(df / 2, x / 2). With df = 0 the distribution is a point mass at 0, so the answer is 1.
 */
export function chiSquareSurvival(x: number, df: number): number {
  if (!(df >= 0) || Number.isNaN(x)) {
    throw new RangeError(`Cannot evaluate the chi-square tail: x=${x}, df=${df}`);
  }
  if (df === 0 || x <= 0) return 1;
  return regularizedGammaQ(df / 2, x / 2);
}

/**
 * e^{−t²/2} for t ≥ 0 without the rounding error of forming t² (which costs t² ulps of relative
 * accuracy): t is split into a part with few significant bits, whose square is exact, and a rest.
 */
function expHalfSquareNegated(t: number): number {
  const high = Math.floor(t * 16) / 16;
  const low = t - high;
  return Math.exp(-0.5 * high * high) * Math.exp(-0.5 * low * (t + high));
}

/** Standard normal density φ(z). */
export function normalPdf(z: number): number {
  return expHalfSquareNegated(Math.abs(z)) / SQRT_2PI;
}

/**
 * P(Z > t) for t ≥ 1 as φ(t)·R(t), with Mills' ratio R from the even contraction of Laplace's
 * continued fraction, R(t) = t / (t² + 1 − 1·2 / (t² + 5 − 3·4 / (t² + 9 − …))), evaluated
 * backwards from a fixed depth (enough terms for 1e-17 relative accuracy at t = 1; fewer further
 * out, where it converges faster).
 */
function normalUpperTail(t: number): number {
  if (t > 40) return 0; // φ(40) ≈ 1.5e-349: below the smallest double
  const t2 = t * t;
  let fraction = 0;
  for (let k = 20 + Math.ceil(300 / t2); k > 0; k--) {
    fraction = (2 * k - 1) * (2 * k) / (t2 + 4 * k + 1 - fraction);
  }
  return normalPdf(t) * (t / (t2 + 1 - fraction));
}

/** Standard normal CDF Φ(z), with full relative precision in the lower tail (Φ(−37.5) ≈ 4.6e−308). */
export function normalCdf(z: number): number {
  if (Number.isNaN(z)) return NaN;
  const t = Math.abs(z);
  if (t < 1) {
    // Φ(z) = ½ + φ(z) · Σ z^{2n+1} / (1·3·…·(2n+1)), all terms of one sign.
    let term = z;
    let sum = z;
    for (let n = 1; Math.abs(term) > EPSILON * Math.abs(sum) * 0.01; n++) {
      term *= t * t / (2 * n + 1);
      sum += term;
    }
    return 0.5 + normalPdf(z) * sum;
  }
  const tail = normalUpperTail(t);
  return z < 0 ? tail : 1 - tail;
}

// Acklam's rational approximation of the normal quantile (relative error below 1.15e-9), refined
// below by Halley steps against normalCdf to full double precision.
const ACKLAM_A = [
  -3.969683028665376e+01,
  2.209460984245205e+02,
  -2.759285104469687e+02,
  1.383577518672690e+02,
  -3.066479806614716e+01,
  2.506628277459239e+00,
];
const ACKLAM_B = [
  -5.447609879822406e+01,
  1.615858368580409e+02,
  -1.556989798598866e+02,
  6.680131188771972e+01,
  -1.328068155288572e+01,
];
const ACKLAM_C = [
  -7.784894002430293e-03,
  -3.223964580411365e-01,
  -2.400758277161838e+00,
  -2.549732539343734e+00,
  4.374664141464968e+00,
  2.938163982698783e+00,
];
const ACKLAM_D = [
  7.784695709041462e-03,
  3.224671290700398e-01,
  2.445134137142996e+00,
  3.754408661907416e+00,
];
const ACKLAM_LOW = 0.02425;

function polynomial(coefficients: number[], x: number): number {
  let value = 0;
  for (const c of coefficients) value = value * x + c;
  return value;
}

/** Acklam's starting value for p ≤ ½. */
function acklamLower(p: number): number {
  if (p < ACKLAM_LOW) {
    const q = Math.sqrt(-2 * Math.log(p));
    return polynomial(ACKLAM_C, q) / (polynomial(ACKLAM_D, q) * q + 1);
  }
  const q = p - 0.5;
  const r = q * q;
  return polynomial(ACKLAM_A, r) * q / (polynomial(ACKLAM_B, r) * r + 1);
}

/** Quantile of the standard normal distribution: Φ⁻¹(p); ±Infinity at 0 and 1. */
export function normalQuantile(p: number): number {
  if (Number.isNaN(p) || p < 0 || p > 1) {
    throw new RangeError(`Cannot evaluate the normal quantile: p=${p} is outside [0, 1]`);
  }
  if (p === 0) return -Infinity;
  if (p === 1) return Infinity;
  // 1 − p is exact for p ≥ ½, so the upper half loses nothing by symmetry.
  if (p > 0.5) return -normalQuantile(1 - p);
  let x = acklamLower(p);
  for (let i = 0; i < 3; i++) {
    const density = normalPdf(x);
    if (density === 0) break;
    const u = (normalCdf(x) - p) / density;
    const step = u / (1 + 0.5 * x * u);
    x -= step;
    if (Math.abs(step) <= 2 * EPSILON * Math.abs(x)) break;
  }
  return x;
}

/**
 * Continued fraction for I_x(a, b) without its prefactor x^a y^b / (a B(a, b)) (modified Lentz,
 * Numerical Recipes 6.4); converges quickly for x < (a + 1) / (a + b + 2), in O(√max(a, b)) terms
 * near that point. `y` is 1 − x, passed separately so that neither loses digits.
 */
function betaContinuedFraction(a: number, b: number, x: number): number {
  const qab = a + b;
  const qap = a + 1;
  const qam = a - 1;
  let c = 1;
  let d = 1 - qab * x / qap;
  if (Math.abs(d) < TINY) d = TINY;
  d = 1 / d;
  let h = d;
  for (let m = 1; m < MAX_ITERATIONS; m++) {
    const m2 = 2 * m;
    let an = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + an * d;
    if (Math.abs(d) < TINY) d = TINY;
    c = 1 + an / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    h *= d * c;
    an = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + an * d;
    if (Math.abs(d) < TINY) d = TINY;
    c = 1 + an / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < EPSILON) return h;
  }
  throw new RangeError(`Cannot evaluate the incomplete beta fraction: a=${a}, b=${b}, x=${x}`);
}

/**
 * I_x(a, b) with y = 1 − x given exactly: by the large-a expansion where it applies, else by the
 * continued fraction on whichever side it converges.
 */
function incompleteBeta(a: number, b: number, x: number, y: number): number {
  if (x <= 0) return 0;
  if (y <= 0) return 1;
  if (a >= LARGE_A && b <= 1 && y < 0.35) return incompleteBetaLargeA(a, b, x, y);
  // ln of the prefactor x^a y^b / B(a, b), with ln x and ln y from whichever of x, y is exact.
  const lnX = x < 0.5 ? Math.log(x) : Math.log1p(-y);
  const lnY = y < 0.5 ? Math.log(y) : Math.log1p(-x);
  const prefactor = Math.exp(a * lnX + b * lnY - logBeta(a, b));
  if (x < (a + 1) / (a + b + 2)) return prefactor * betaContinuedFraction(a, b, x) / a;
  return 1 - prefactor * betaContinuedFraction(b, a, y) / b;
}

/** Regularized incomplete beta function I_x(a, b) for a, b > 0 and 0 ≤ x ≤ 1. */
export function regularizedBeta(x: number, a: number, b: number): number {
  if (!(a > 0) || !(b > 0) || !(x >= 0 && x <= 1) || a === Infinity || b === Infinity) {
    throw new RangeError(`Cannot evaluate the incomplete beta function: x=${x}, a=${a}, b=${b}`);
  }
  return incompleteBeta(a, b, x, 1 - x);
}

function checkDegrees(df: number, what: string): void {
  if (!(df > 0)) throw new RangeError(`Cannot evaluate ${what}: df=${df} is not positive`);
}

/** From this a on (with b ≤ 1 and x near 1), I_x(a, b) comes from the large-a expansion. */
const LARGE_A = 15;

/** 1/(2n + 1)! for n = 0 … BGRAT_TERMS. */
const BGRAT_TERMS = 30;
const ODD_FACTORIAL_INVERSE = Array.from({ length: BGRAT_TERMS + 1 }, (_, n) => {
  let f = 1;
  for (let k = 2; k <= 2 * n + 1; k++) f *= k;
  return 1 / f;
});

/**
 * I_x(a, b) for large a and b ≤ 1 with x near 1 (y = 1 − x small), by DiDonato and Morris's
 * asymptotic expansion in incomplete gamma functions (TOMS 708's BGRAT, their equations 9 to 9.6;
 * Boost's `beta_small_b_large_a_series`). The continued fraction loses digits there: its terms
 * cancel when (a + b) x ≈ a + 1.
 */
function incompleteBetaLargeA(a: number, b: number, x: number, y: number): number {
  const bm1 = b - 1;
  const t = a + bm1 / 2;
  const lx = y < 0.35 ? Math.log1p(-y) : Math.log(x);
  const u = -t * lx;
  if (u === 0) return 1;
  // h = u^b e^{−u} / Γ(b); the expansion is Γ(a + b) / (Γ(a) t^b) · h · Σ p_n J_n.
  const logH = b * Math.log(u) - u - logGamma(b);
  const logPrefix = logH + logGamma(b) - logBeta(a, b) - b * Math.log(t);
  let j = Math.exp(logRegularizedGammaQ(b, u) - logH);
  const p = new Float64Array(BGRAT_TERMS);
  p[0] = 1;
  let sum = j;
  const lx2 = (lx / 2) * (lx / 2);
  const t4 = 4 * t * t;
  let lxp = 1;
  let b2n = b;
  for (let n = 1; n < BGRAT_TERMS; n++) {
    let pn = 0;
    for (let m = 1; m < n; m++) pn += (m * b - n) * p[n - m] * ODD_FACTORIAL_INVERSE[m];
    p[n] = pn / n + bm1 * ODD_FACTORIAL_INVERSE[n];
    j = (b2n * (b2n + 1) * j + (u + b2n + 1) * lxp) / t4;
    lxp *= lx2;
    b2n += 2;
    const term = p[n] * j;
    sum += term;
    if (Math.abs(term) <= EPSILON * Math.abs(sum)) break;
  }
  return Math.exp(logPrefix) * sum;
}

/**
 * P(T > t) for t ≥ 0, T Student-distributed with df degrees of freedom:
 * ½ I_{df/(df + t²)}(df/2, ½), with both arguments of I formed without cancellation.
 */
function studentUpperTail(t: number, df: number): number {
  if (t === Infinity) return 0;
  const t2 = t * t;
  // x = df / (df + t²) and y = t² / (df + t²), each to rounding.
  const x = t2 > df ? (df / t2) / (1 + df / t2) : df / (df + t2);
  const y = t2 > df ? 1 / (1 + df / t2) : (t2 / df) / (1 + t2 / df);
  return 0.5 * incompleteBeta(df / 2, 0.5, x, y);
}

/**
 * Student's t CDF P(T ≤ t) for df > 0 degrees of freedom (not necessarily whole), with full
 * relative precision in the lower tail; the normal CDF for df = Infinity.
 */
export function studentTCdf(t: number, df: number): number {
  checkDegrees(df, "the t distribution");
  if (Number.isNaN(t)) return NaN;
  if (df === Infinity) return normalCdf(t);
  const tail = studentUpperTail(Math.abs(t), df);
  return t < 0 ? tail : 1 - tail;
}

/** ln of Student's t density at t. */
function logStudentPdf(t: number, df: number): number {
  return -0.5 * Math.log(df) - logBeta(df / 2, 0.5) - (df + 1) / 2 * Math.log1p(t * t / df);
}

/**
 * Cornish–Fisher expansion of the t quantile around the normal one (Abramowitz & Stegun 26.7.5),
 * terms to 1/df⁴: a starting value, good far beyond it for large df.
 */
function cornishFisher(z: number, df: number): number {
  const z2 = z * z;
  const g1 = (z2 + 1) * z / 4;
  const g2 = ((5 * z2 + 16) * z2 + 3) * z / 96;
  const g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384;
  const g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160;
  return z + g1 / df + g2 / df ** 2 + g3 / df ** 3 + g4 / df ** 4;
}

/**
 * Quantile of Student's t distribution with df > 0 degrees of freedom: the t with P(T ≤ t) = p;
 * ±Infinity at 0 and 1, the normal quantile for df = Infinity. Newton steps on the tail
 * probability (so p near 1 loses nothing), kept inside a bracket that shrinks around the root.
 */
export function studentTQuantile(p: number, df: number): number {
  checkDegrees(df, "the t quantile");
  if (Number.isNaN(p) || p < 0 || p > 1) {
    throw new RangeError(`Cannot evaluate the t quantile: p=${p} is outside [0, 1]`);
  }
  if (df === Infinity) return normalQuantile(p);
  if (p === 0) return -Infinity;
  if (p === 1) return Infinity;
  if (p === 0.5) return 0;
  // Solve P(T > t) = q for t > 0; 1 − p is exact for p ≥ ½.
  const q = p > 0.5 ? 1 - p : p;
  const sign = p > 0.5 ? 1 : -1;
  let t = df >= 4 ? cornishFisher(-normalQuantile(q), df) : 1;
  if (!(t > 0) || !Number.isFinite(t)) t = 1;
  let low = 0;
  let high = Infinity;
  for (let i = 0; i < 200; i++) {
    const excess = studentUpperTail(t, df) - q; // falls as t grows
    if (excess > 0) low = t;
    else if (excess < 0) high = t;
    else break;
    let next = t + excess / Math.exp(logStudentPdf(t, df));
    if (!(next > low && next < high)) next = high === Infinity ? 2 * t : (low + high) / 2;
    if (Math.abs(next - t) <= 2 * EPSILON * next) {
      t = next;
      break;
    }
    t = next;
  }
  return sign * t;
}

/**
 * Sample variance (n − 1 denominator) from a count, a sum and a sum of squares, or null when n < 2
 * (the sample variance is undefined). The sum of squared deviations is sumSquares − sum·mean; a
 * result within the rounding error of that subtraction (n·ε·sumSquares) is reported as 0, so equal
 * values never come out with a tiny positive or negative variance.
 */
export function sampleVariance(n: number, sum: number, sumSquares: number): number | null {
  if (!(n >= 2)) return null;
  const deviations = sumSquares - sum * (sum / n);
  if (!(deviations > n * EPSILON * Math.abs(sumSquares))) return 0;
  return deviations / (n - 1);
}

/**
 * A seeded source of random numbers (mulberry32: 32-bit state, period 2³²), with Marsaglia's polar
 * method for normals, Marsaglia–Tsang for gammas, and betas as ratios of gammas. The same seed
 * always gives the same sequence.
 */
export class SeededRandom {
  #state: number;
  #spareNormal: number | null = null;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** A uniform number in [0, 1) with 32 random bits. */
  uniform(): number {
    this.#state = (this.#state + 0x6d2b79f5) | 0;
    let t = Math.imul(this.#state ^ (this.#state >>> 15), 1 | this.#state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** A standard normal number (Marsaglia's polar method; the second value is kept for later). */
  normal(): number {
    if (this.#spareNormal !== null) {
      const spare = this.#spareNormal;
      this.#spareNormal = null;
      return spare;
    }
    let u: number;
    let v: number;
    let s: number;
    do {
      u = 2 * this.uniform() - 1;
      v = 2 * this.uniform() - 1;
      s = u * u + v * v;
    } while (s >= 1 || s === 0);
    const factor = Math.sqrt(-2 * Math.log(s) / s);
    this.#spareNormal = v * factor;
    return u * factor;
  }

  /** A Gamma(shape, 1) number (Marsaglia–Tsang; shapes below 1 through Gamma(shape + 1)·U^{1/shape}). */
  gamma(shape: number): number {
    if (!(shape > 0) || shape === Infinity) {
      throw new RangeError(`Cannot sample a gamma variate: shape=${shape}`);
    }
    if (shape < 1) {
      const u = this.uniform();
      return this.gamma(shape + 1) * Math.pow(u === 0 ? Number.MIN_VALUE : u, 1 / shape);
    }
    const d = shape - 1 / 3;
    return this.#marsagliaTsang(d, 1 / Math.sqrt(9 * d));
  }

  /** Marsaglia–Tsang for shape ≥ 1 with its constants d = shape − ⅓ and c = 1/√(9d). */
  #marsagliaTsang(d: number, c: number): number {
    for (;;) {
      let x: number;
      let v: number;
      do {
        x = this.normal();
        v = 1 + c * x;
      } while (v <= 0);
      v = v * v * v;
      const u = this.uniform();
      const x2 = x * x;
      if (u < 1 - 0.0331 * x2 * x2) return d * v;
      if (Math.log(u) < 0.5 * x2 + d * (1 - v + Math.log(v))) return d * v;
    }
  }

  /**
   * A function drawing Beta(a, b) numbers from this source, with the gamma constants computed
   * once (for the many draws of a Monte Carlo); a and b must be at least 1.
   */
  betaSampler(a: number, b: number): () => number {
    if (!(a >= 1 && b >= 1) || a === Infinity || b === Infinity) {
      throw new RangeError(`Cannot sample a beta variate: a=${a}, b=${b}`);
    }
    const da = a - 1 / 3;
    const ca = 1 / Math.sqrt(9 * da);
    const db = b - 1 / 3;
    const cb = 1 / Math.sqrt(9 * db);
    return () => {
      const x = this.#marsagliaTsang(da, ca);
      return x / (x + this.#marsagliaTsang(db, cb));
    };
  }

  /** A Beta(a, b) number, as X / (X + Y) with X ~ Gamma(a) and Y ~ Gamma(b). */
  beta(a: number, b: number): number {
    const x = this.gamma(a);
    const y = this.gamma(b);
    return x / (x + y);
  }
}
