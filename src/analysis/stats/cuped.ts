/**
 * CUPED (Deng et al. 2013): a pre-period covariate x that predicts the metric y removes part of
 * y's variance. As docs/api.md's "Comparisons with the control" gives it, over the users of the arms compared together
 * (not within arms, n − 1): θ = cov(x, y) / var(x); each arm's adjusted mean is
 * m'_i = m_y,i − θ (m_x,i − m_x,pooled) and adjusted variance
 * s'²_i = s²_y,i + θ² s²_x,i − 2 θ cov_i(x, y). var(x) = 0 means no adjustment (θ = 0).
 *
 * Works from per-arm sums over the users with a value of y (a user without a covariate value has
 * x = 0), as the aggregation produces them.
 */

import { sampleVariance } from "./_math.ts";
import type { ArmStatistics } from "./inference.ts";

/** Per-arm sums over the users with a value of the metric y. */
export interface ArmMoments {
  n: number;
  sumY: number;
  sumYSquares: number;
  sumX: number;
  sumXSquares: number;
  sumXY: number;
}

/** The result of {@linkcode cupedAdjust}: θ and each arm's adjusted statistics, in order. */
export interface CupedAdjustment {
  theta: number;
  arms: ArmStatistics[];
}

/** Sample covariance (n − 1) from sums; NaN below two observations. */
function sampleCovariance(n: number, sumX: number, sumY: number, sumXY: number): number {
  return n >= 2 ? (sumXY - sumX * (sumY / n)) / (n - 1) : NaN;
}

/** n, mean and sample variance of y alone (NaN where undefined: no users, or one). */
export function unadjustedStatistics(arm: ArmMoments): ArmStatistics {
  return {
    n: arm.n,
    mean: arm.n > 0 ? arm.sumY / arm.n : NaN,
    variance: sampleVariance(arm.n, arm.sumY, arm.sumYSquares) ?? NaN,
  };
}

/**
 * θ over all the given arms taken together, and each arm's adjusted statistics. For a comparison
 * pass the pair (control, variant); passing every arm gives one θ for all of them.
 */
export function cupedAdjust(arms: readonly ArmMoments[]): CupedAdjustment {
  let n = 0, sumX = 0, sumY = 0, sumXSquares = 0, sumXY = 0;
  for (const arm of arms) {
    n += arm.n;
    sumX += arm.sumX;
    sumY += arm.sumY;
    sumXSquares += arm.sumXSquares;
    sumXY += arm.sumXY;
  }
  const varianceX = sampleVariance(n, sumX, sumXSquares) ?? 0;
  const theta = varianceX > 0 ? sampleCovariance(n, sumX, sumY, sumXY) / varianceX : 0;
  const meanX = n > 0 ? sumX / n : 0;
  return {
    theta,
    arms: arms.map((arm) => {
      const y = unadjustedStatistics(arm);
      if (theta === 0) return y;
      const armMeanX = arm.n > 0 ? arm.sumX / arm.n : NaN;
      const armVarianceX = sampleVariance(arm.n, arm.sumX, arm.sumXSquares) ?? NaN;
      const covariance = sampleCovariance(arm.n, arm.sumX, arm.sumY, arm.sumXY);
      const variance = y.variance + theta * theta * armVarianceX - 2 * theta * covariance;
      return {
        n: arm.n,
        mean: y.mean - theta * (armMeanX - meanX),
        // Rounding can leave a tiny negative where x explains y entirely.
        variance: Number.isNaN(variance) ? NaN : Math.max(0, variance),
      };
    }),
  };
}
