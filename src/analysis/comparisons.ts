/**
 * The `comparisons` of one metric in the analysis JSON: each non-control variant against the
 * control by the formulas of `stats/inference.ts`, on the metric's (capped) per-user statistics,
 * CUPED-adjusted per pair when the metric has a covariate; Holm's adjustment across the variants;
 * on the key metric, the `decision` read off the sequential interval. A variant that cannot be
 * compared is listed with null figures and a warning saying why.
 */

import type { CovariateMoments, MetricVariantStats } from "./aggregate/aggregate_types.ts";
import type { MetricKind } from "./settings.ts";
import { sampleVariance } from "./stats/_math.ts";
import { type ArmMoments, cupedAdjust } from "./stats/cuped.ts";
import {
  type ArmStatistics,
  compareArms,
  holmAdjust,
  type NoComparisonReason,
  relativeLift,
} from "./stats/inference.ts";

/**
 * The sequential verdict on the key metric, in the metric's own direction; `too_early` replaces
 * it while the settings' `min_users_per_variant` or `min_days` are not reached (see `report.ts`).
 */
export type Decision = "better" | "worse" | "inconclusive" | "too_early";

/** One entry of a metric's `comparisons`. */
export interface ComparisonReport {
  name: string;
  lift: number | null;
  lift_se: number | null;
  ci: [number, number] | null;
  p_value: number | null;
  p_value_adjusted: number | null;
  sequential_ci: [number, number] | null;
  sequential_p_value: number | null;
  cuped: { covariate: string; theta: number; variance_reduction: number } | null;
  /**
   * The Bayesian chance that the variant beats the control on this metric (`win_probability`'s on
   * the key metric); null without enough data. Set by the report.
   */
  chance_to_beat_control?: number | null;
  /** Key metric only; null when there is no comparison. */
  decision?: Decision | null;
}

/** What {@linkcode metricComparisons} needs to know of one metric. */
export interface MetricComparisonsInput {
  metric: string;
  kind: MetricKind;
  control: string;
  /** Every variant, the control included, in the order of the JSON. */
  variants: readonly string[];
  /** Per variant: the per-user statistics (capped where the metric is). */
  stats: (variant: string) => MetricVariantStats;
  /** The metric's covariate and its moments per variant, or null. */
  covariate: { column: string; moments: Record<string, CovariateMoments> } | null;
  alpha: number;
  tuning: number;
  /** Give each comparison a `decision` (the key metric). */
  decide: boolean;
  lowerIsBetter: boolean;
}

/** The result of {@linkcode metricComparisons}. */
export interface MetricComparisons {
  comparisons: ComparisonReport[];
  warnings: string[];
  /** Per variant compared: the (adjusted) statistics of the pair, for the Bayesian chances. */
  pairs: Map<string, { control: ArmStatistics; variant: ArmStatistics }>;
}

const REASONS: Record<NoComparisonReason, (variant: string, control: string) => string> = {
  too_few_users: (variant, control) =>
    `fewer than 2 users with a value in "${variant}" or in "${control}"`,
  zero_control_mean: (_variant, control) =>
    `the mean of the control "${control}" is 0, so a relative lift is undefined`,
  zero_variance: () => "the lift's variance is 0 (no spread in the values compared)",
};

/** n, mean and sample variance of a metric in one variant, as the `metrics` entries show them. */
export function armStatistics(kind: MetricKind, s: MetricVariantStats): ArmStatistics {
  const n = s.users;
  const mean = n > 0 ? s.sum / n : NaN;
  if (n < 2) return { n, mean, variance: NaN };
  if (kind === "conversion") return { n, mean, variance: mean * (1 - mean) * n / (n - 1) };
  return { n, mean, variance: sampleVariance(n, s.sum, s.sumSquares) ?? NaN };
}

/** A variant's sums for CUPED. */
export function armMoments(s: MetricVariantStats, x: CovariateMoments | undefined): ArmMoments {
  return {
    n: s.users,
    sumY: s.sum,
    sumYSquares: s.sumSquares,
    sumX: x?.sumX ?? 0,
    sumXSquares: x?.sumXSquares ?? 0,
    sumXY: x?.sumXY ?? 0,
  };
}

/**
 * The verdict of the sequential interval `ci` of the relative lift over a control whose mean is
 * `controlMean`. The lift is m_B − m_A divided by m_A: below a negative control mean, a lift above 0
 * means a lower value, so that `better` always means a better value.
 */
function decide(ci: [number, number], lowerIsBetter: boolean, controlMean: number): Decision {
  const up = ci[0] > 0;
  const down = ci[1] < 0;
  if (!up && !down) return "inconclusive";
  return up !== lowerIsBetter !== controlMean < 0 ? "better" : "worse";
}

/** Compares every non-control variant with the control on one metric. */
export function metricComparisons(input: MetricComparisonsInput): MetricComparisons {
  const { control, covariate } = input;
  const warnings: string[] = [];
  const pairs = new Map<string, { control: ArmStatistics; variant: ArmStatistics }>();
  const options = { alpha: input.alpha, tuning: input.tuning };
  const controlStats = input.stats(control);
  const entries = input.variants.filter((name) => name !== control).map((name) => {
    const variantStats = input.stats(name);
    let a = armStatistics(input.kind, controlStats);
    let b = armStatistics(input.kind, variantStats);
    let cuped: ComparisonReport["cuped"] = null;
    if (covariate !== null) {
      const plain = relativeLift(a, b);
      const adjustment = cupedAdjust([
        armMoments(controlStats, covariate.moments[control]),
        armMoments(variantStats, covariate.moments[name]),
      ]);
      // θ = 0 (no spread in x) adjusts nothing: the plain statistics stay, as they are shown.
      if (adjustment.theta !== 0) [a, b] = adjustment.arms;
      const adjusted = relativeLift(a, b);
      if ("variance" in plain && "variance" in adjusted) {
        cuped = {
          covariate: covariate.column,
          theta: adjustment.theta,
          variance_reduction: 1 - adjusted.variance / plain.variance,
        };
      }
    }
    const found = compareArms(a, b, options);
    if ("reason" in found) {
      warnings.push(
        `No comparison of "${name}" with the control "${control}" on "${input.metric}": ${
          REASONS[found.reason](name, control)
        }`,
      );
      return { name, found: null, cuped: null };
    }
    pairs.set(name, { control: a, variant: b });
    return { name, found, cuped };
  });
  if ([...pairs.values()].some((pair) => pair.control.mean < 0)) {
    warnings.push(
      `The control "${control}" has a negative mean of "${input.metric}": a positive lift means a ` +
        "lower value than the control's",
    );
  }
  const adjustedP = holmAdjust(entries.map((e) => e.found?.pValue ?? null));
  const comparisons = entries.map(({ name, found, cuped }, i): ComparisonReport => {
    const entry: ComparisonReport = {
      name,
      lift: found?.lift ?? null,
      lift_se: found?.liftSe ?? null,
      ci: found?.ci ?? null,
      p_value: found?.pValue ?? null,
      p_value_adjusted: adjustedP[i],
      sequential_ci: found?.sequentialCi ?? null,
      sequential_p_value: found?.sequentialPValue ?? null,
      cuped,
    };
    if (input.decide) {
      entry.decision = found === null
        ? null
        : decide(found.sequentialCi, input.lowerIsBetter, pairs.get(name)!.control.mean);
    }
    return entry;
  });
  return { comparisons, warnings, pairs };
}
