/**
 * Frequentist comparisons of a variant with the control on one metric, as docs/api.md's
 * "Comparisons with the control" gives them (the same formulas as GrowthBook's):
 *
 * - relative lift Δ = (m_B − m_A) / m_A with its delta-method variance
 *   V = s²_B / (m_A² n_B) + s²_A m_B² / (m_A⁴ n_A);
 * - fixed horizon: Welch's degrees of freedom, the interval Δ ± t(1 − α/2, ν) √V and the two-sided
 *   p-value 2 (1 − T_ν(|Δ| / √V));
 * - Holm's step-down adjustment of the p-values of several variants;
 * - sequential (always valid): the asymptotic confidence sequence of Waudby-Smith et al. (2023),
 *   tuned to be tightest at `tuning` users, with the p-value that is below α exactly when the
 *   interval excludes 0.
 *
 * Pure functions of per-arm statistics: n, mean and sample variance (n − 1) over the users with a
 * value (possibly capped and CUPED-adjusted before they get here).
 */

import { studentTCdf, studentTQuantile } from "./_math.ts";

/** One arm's statistics of a metric, over its users with a value. */
export interface ArmStatistics {
  n: number;
  mean: number;
  /** Sample variance (n − 1 denominator). */
  variance: number;
}

/** Why a variant cannot be compared with the control. */
export type NoComparisonReason = "too_few_users" | "zero_control_mean" | "zero_variance";

/** The comparison of one variant with the control. */
export interface Comparison {
  lift: number;
  /** √V, the delta-method standard error of the lift. */
  liftSe: number;
  /** Welch's degrees of freedom. */
  degreesOfFreedom: number;
  /** Fixed-horizon interval at confidence 1 − α. */
  ci: [number, number];
  pValue: number;
  /** Always-valid interval at confidence 1 − α. */
  sequentialCi: [number, number];
  sequentialPValue: number;
}

/** Options of {@linkcode compareArms}. */
export interface CompareOptions {
  /** Two-sided error rate; the intervals have confidence 1 − alpha. */
  alpha: number;
  /** The sequential tuning N: the total sample at which the sequential interval is tightest. */
  tuning: number;
}

export const DEFAULT_SEQUENTIAL_TUNING = 5000;

/**
 * The relative lift of `variant` over `control` and its delta-method variance V, or why there is
 * none: fewer than two users in an arm, a control mean of 0, or V = 0 (no spread anywhere the
 * formula looks).
 */
export function relativeLift(
  control: ArmStatistics,
  variant: ArmStatistics,
): { lift: number; variance: number } | { reason: NoComparisonReason } {
  if (!(control.n >= 2 && variant.n >= 2)) return { reason: "too_few_users" };
  const ma = control.mean;
  const mb = variant.mean;
  if (ma === 0) return { reason: "zero_control_mean" };
  const variance = variant.variance / (ma * ma * variant.n) +
    control.variance * mb * mb / (ma * ma * ma * ma * control.n);
  if (!(variance > 0) || !Number.isFinite(variance)) return { reason: "zero_variance" };
  return { lift: (mb - ma) / ma, variance };
}

/**
 * Welch–Satterthwaite degrees of freedom
 * ν = (s²_B/n_B + s²_A/n_A)² / (s⁴_B / (n_B² (n_B − 1)) + s⁴_A / (n_A² (n_A − 1))).
 */
export function welchDegreesOfFreedom(control: ArmStatistics, variant: ArmStatistics): number {
  const a = control.variance / control.n;
  const b = variant.variance / variant.n;
  return (a + b) * (a + b) / (b * b / (variant.n - 1) + a * a / (control.n - 1));
}

/** The fixed-horizon interval Δ ± t(1 − α/2, ν) √V and p-value 2 (1 − T_ν(|Δ| / √V)). */
export function fixedHorizon(
  lift: number,
  variance: number,
  degreesOfFreedom: number,
  alpha: number,
): { ci: [number, number]; pValue: number } {
  const se = Math.sqrt(variance);
  const half = studentTQuantile(1 - alpha / 2, degreesOfFreedom) * se;
  // 2 T_ν(−|t|) is 2 (1 − T_ν(|t|)) without the cancellation.
  const pValue = Math.min(1, 2 * studentTCdf(-Math.abs(lift) / se, degreesOfFreedom));
  return { ci: [lift - half, lift + half], pValue };
}

/** ρ = √((−2 ln α + ln(−2 ln α + 1)) / N), the mixture's tuning for a total sample of N. */
export function sequentialRho(alpha: number, tuning: number): number {
  const l = -2 * Math.log(alpha);
  return Math.sqrt((l + Math.log(l + 1)) / tuning);
}

/**
 * The asymptotic confidence sequence at a look with n users in both arms: half-width
 * h = √(V n) · √(2 (n ρ² + 1) ln(√(n ρ² + 1) / α) / (n ρ)²) and p-value
 * min(1, √(n ρ² + 1) · exp(−ρ² n Δ² / (2 V (n ρ² + 1)))).
 */
export function sequentialInterval(
  lift: number,
  variance: number,
  n: number,
  alpha: number,
  tuning: number,
): { ci: [number, number]; pValue: number } {
  const rho = sequentialRho(alpha, tuning);
  const r2 = n * rho * rho;
  const s2 = variance * n;
  // (n ρ)² = n · n ρ².
  const half = Math.sqrt(s2) *
    Math.sqrt(2 * (r2 + 1) * Math.log(Math.sqrt(r2 + 1) / alpha) / (n * r2));
  const pValue = Math.min(
    1,
    Math.sqrt(r2 + 1) * Math.exp(-r2 * lift * lift / (2 * variance * (r2 + 1))),
  );
  return { ci: [lift - half, lift + half], pValue };
}

/**
 * Holm's step-down adjustment: with the k p-values present sorted ascending,
 * p'_(i) = max over j ≤ i of min(1, (k − j + 1) p_(j)). Null entries (no comparison) stay null and
 * do not count in k; tied p-values get the same adjusted value.
 */
export function holmAdjust(pValues: readonly (number | null)[]): (number | null)[] {
  const present = pValues.flatMap((p, i) => p === null ? [] : [i]);
  present.sort((i, j) => pValues[i]! - pValues[j]! || i - j);
  const k = present.length;
  const adjusted: (number | null)[] = pValues.map(() => null);
  let running = 0;
  present.forEach((i, rank) => {
    running = Math.max(running, Math.min(1, (k - rank) * pValues[i]!));
    adjusted[i] = running;
  });
  return adjusted;
}

/** Compares `variant` with `control` by every formula above, or tells why it cannot. */
export function compareArms(
  control: ArmStatistics,
  variant: ArmStatistics,
  options: CompareOptions,
): Comparison | { reason: NoComparisonReason } {
  const found = relativeLift(control, variant);
  if ("reason" in found) return found;
  const { lift, variance } = found;
  const degreesOfFreedom = welchDegreesOfFreedom(control, variant);
  const fixed = fixedHorizon(lift, variance, degreesOfFreedom, options.alpha);
  const sequential = sequentialInterval(
    lift,
    variance,
    control.n + variant.n,
    options.alpha,
    options.tuning,
  );
  return {
    lift,
    liftSe: Math.sqrt(variance),
    degreesOfFreedom,
    ci: fixed.ci,
    pValue: fixed.pValue,
    sequentialCi: sequential.ci,
    sequentialPValue: sequential.pValue,
  };
}
