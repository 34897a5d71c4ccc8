/**
 * Target sample size per variant from a power calculation (two-sided test, equal group sizes).
 */

import { normalQuantile } from "./_math.ts";

/** Options of the power calculation. */
export interface SampleSizeOptions {
  /** Two-sided significance level. Default 0.05. */
  alpha?: number;
  /** Probability of detecting an effect of size `mde`. Default 0.8. */
  power?: number;
  /** Minimum detectable effect, relative to the baseline (0.05 = 5 %). Default 0.05. */
  mde?: number;
}

/** Users needed per variant (rounded up), or null with the reason in `warning`. */
export interface SampleSizeResult {
  usersPerVariant: number | null;
  warning: string | null;
}

function resolve(options: SampleSizeOptions): { alpha: number; power: number; mde: number } {
  const { alpha = 0.05, power = 0.8, mde = 0.05 } = options;
  if (!(alpha > 0 && alpha < 1)) throw new RangeError(`Cannot size the sample: alpha=${alpha}`);
  if (!(power > 0 && power < 1)) throw new RangeError(`Cannot size the sample: power=${power}`);
  if (!(mde > 0) || !Number.isFinite(mde)) {
    throw new RangeError(`Cannot size the sample: mde=${mde}`);
  }
  return { alpha, power, mde };
}

function unavailable(warning: string): SampleSizeResult {
  return { usersPerVariant: null, warning };
}

function roundUp(n: number): SampleSizeResult {
  if (!Number.isFinite(n)) return unavailable("Target sample size is too large to compute");
  return { usersPerVariant: Math.max(1, Math.ceil(n)), warning: null };
}

/**
 * Users per variant for a conversion metric, with the formula of Evan Miller's sample size
 * calculator (https://www.evanmiller.org/ab-testing/sample-size.html):
 *
 *   n = (z_{1−α/2}·√(2·p₁(1−p₁)) + z_{power}·√(p₁(1−p₁) + p₂(1−p₂)))² / (p₂ − p₁)²
 *
 * with p₁ the baseline and p₂ = p₁(1 + mde). The calculator's null-hypothesis term uses the
 * baseline p₁ (not the pooled (p₁+p₂)/2). When p₂ would exceed 1, the decrease p₂ = p₁(1 − mde)
 * is sized instead (the test is two-sided). A zero baseline gives null with a warning.
 */
export function conversionSampleSize(
  baseline: number,
  options: SampleSizeOptions = {},
): SampleSizeResult {
  const { alpha, power, mde } = resolve(options);
  if (!(baseline >= 0 && baseline <= 1)) {
    throw new RangeError(`Cannot size the sample: baseline conversion rate ${baseline}`);
  }
  if (baseline === 0) {
    return unavailable(
      "Target sample size unavailable: the control's conversion rate on the key metric is 0",
    );
  }
  let p2 = baseline * (1 + mde);
  if (p2 > 1) p2 = baseline * (1 - mde);
  if (!(p2 >= 0 && p2 <= 1) || p2 === baseline) {
    return unavailable(
      `Target sample size unavailable: a ${
        Number((mde * 100).toPrecision(6))
      } % change of the control's conversion ` +
        `rate ${baseline} is not a valid rate`,
    );
  }
  const zAlpha = normalQuantile(1 - alpha / 2);
  const zPower = normalQuantile(power);
  const p1 = baseline;
  const nullSd = Math.sqrt(2 * p1 * (1 - p1));
  const alternativeSd = Math.sqrt(p1 * (1 - p1) + p2 * (1 - p2));
  const delta = p2 - p1;
  const root = zAlpha * nullSd + zPower * alternativeSd;
  return roundUp(root * root / (delta * delta));
}

/**
 * Users per variant for a numeric metric: n = 2(z_{1−α/2} + z_{power})² σ² / δ² with σ² the
 * control's sample variance and δ = mde × the control's mean. A zero mean, or a variance that is
 * unknown (fewer than two users) or zero, gives null with a warning.
 */
export function numericSampleSize(
  mean: number,
  variance: number | null,
  options: SampleSizeOptions = {},
): SampleSizeResult {
  const { alpha, power, mde } = resolve(options);
  if (mean === 0) {
    return unavailable("Target sample size unavailable: the control's mean of the key metric is 0");
  }
  if (variance === null || !Number.isFinite(mean)) {
    return unavailable(
      "Target sample size unavailable: the control needs at least two users with a value " +
        "of the key metric",
    );
  }
  if (!(variance > 0)) {
    return unavailable(
      "Target sample size unavailable: the key metric does not vary in the control",
    );
  }
  const zSum = normalQuantile(1 - alpha / 2) + normalQuantile(power);
  const delta = mde * mean;
  return roundUp(2 * zSum * zSum * variance / (delta * delta));
}
