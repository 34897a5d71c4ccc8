/**
 * Dimension health in the analysis JSON (docs/api.md, "Dimension health"): for
 * every dimension column with at most 50 distinct values, per value (values held by under 1 % of
 * the users pooled into `(other)`) the users per variant with an SRM test against the expected
 * split, flagged below a Bonferroni threshold (0.001 ÷ the number of values tested), and the key
 * metric per value: users and mean per variant, and each variant's lift over the control with its
 * fixed-horizon interval (the formulas of `stats/inference.ts`, without CUPED). A column with
 * more values is listed as skipped with its count. Warnings name the values that fail and the
 * users whose rows hold more than one value (they count under their first row's).
 */
import type { DimensionAggregate, MetricVariantStats } from "./aggregate/aggregate_types.ts";
import { armStatistics } from "./comparisons.ts";
import type { MetricKind } from "./settings.ts";
import { compareArms } from "./stats/inference.ts";
import { pValueText, srm, SRM_P_THRESHOLD } from "./stats/srm.ts";

/** Values held by fewer than this share of a dimension's users are pooled. */
export const POOL_SHARE = 0.01;
/** The name of the pooled values. */
export const OTHER = "(other)";

/** One value of a dimension (or the pooled ones). */
export interface DimensionValueReport {
  value: string;
  /** `(other)` only: the values pooled into it. */
  pooled_values?: string[];
  /** Users with this value, all variants. */
  users: number;
  /** Per variant: users, and the key metric's users with a value and mean. */
  variants: { name: string; users: number; metric_users: number; mean: number | null }[];
  srm: { chi_square: number; p_value: number; mismatch: boolean; enough_data: boolean };
  /** Each non-control variant against the control on the key metric, fixed horizon. */
  key_metric: {
    name: string;
    lift: number | null;
    ci: [number, number] | null;
    p_value: number | null;
  }[];
}

/** One entry of `dimensions`. */
export interface DimensionReport {
  name: string;
  /** Distinct values over all rows, counted up to 10 000. */
  distinct_values: number;
  /** More than 50 values: not broken down. */
  skipped: boolean;
  /** The p-value below which a value's split is a mismatch: 0.001 ÷ values tested. */
  threshold?: number;
  /** Users in one variant whose rows hold more than one value (counted under their first). */
  inconsistent_users?: number;
  /** The metric of `values[].key_metric`, or null. */
  key_metric?: string | null;
  /** By users, most first; `(other)` last. */
  values?: DimensionValueReport[];
}

/** What {@linkcode dimensionReports} needs besides the dimensions. */
export interface DimensionReportOptions {
  variants: readonly string[];
  control: string | null;
  /** The key metric's kind (null: no key metric). */
  kind: MetricKind | null;
  expectedSplit?: Record<string, number>;
  alpha: number;
}

interface Pooled {
  value: string;
  pooled?: string[];
  users: Record<string, number>;
  stats: Record<string, MetricVariantStats>;
}

function total(users: Record<string, number>): number {
  return Object.values(users).reduce((sum, n) => sum + n, 0);
}

/** Pools the values under `POOL_SHARE` of the users into one `(other)` entry. */
function pool(
  values: NonNullable<DimensionAggregate["values"]>,
  variants: readonly string[],
): Pooled[] {
  const all = values.reduce((sum, v) => sum + total(v.users), 0);
  const kept: Pooled[] = [];
  const small = values.filter((v) => {
    const keep = all === 0 || total(v.users) >= POOL_SHARE * all;
    if (keep) kept.push(v);
    return !keep;
  });
  kept.sort((a, b) => total(b.users) - total(a.users));
  if (small.length === 0) return kept;
  const other: Pooled = {
    value: OTHER,
    pooled: small.map((v) => v.value),
    users: Object.fromEntries(variants.map((name) => [name, 0])),
    stats: Object.fromEntries(variants.map((name) => [name, { users: 0, sum: 0, sumSquares: 0 }])),
  };
  for (const v of small) {
    for (const name of variants) {
      other.users[name] += v.users[name] ?? 0;
      const s = v.stats[name];
      if (s === undefined) continue;
      other.stats[name].users += s.users;
      other.stats[name].sum += s.sum;
      other.stats[name].sumSquares += s.sumSquares;
    }
  }
  return [...kept, other];
}

/** The `dimensions` of the analysis, and its warnings about them. */
export function dimensionReports(
  dimensions: readonly DimensionAggregate[],
  options: DimensionReportOptions,
): { dimensions: DimensionReport[]; warnings: string[] } {
  const warnings: string[] = [];
  const { variants, control, kind } = options;
  const reports = dimensions.map((d): DimensionReport => {
    if (d.values === null) {
      return { name: d.name, distinct_values: d.distinctValues, skipped: true };
    }
    const pooled = pool(d.values, variants);
    const threshold = SRM_P_THRESHOLD / Math.max(1, pooled.length);
    const values = pooled.map((v): DimensionValueReport => {
      const test = srm(
        Object.fromEntries(variants.map((name) => [name, v.users[name] ?? 0])),
        options.expectedSplit,
      );
      const controlStats = control === null ? undefined : v.stats[control];
      const key_metric = control === null || kind === null || controlStats === undefined
        ? []
        : variants.filter((name) => name !== control).map((name) => {
          const found = compareArms(
            armStatistics(kind, controlStats),
            armStatistics(kind, v.stats[name] ?? { users: 0, sum: 0, sumSquares: 0 }),
            { alpha: options.alpha, tuning: 1 },
          );
          return "reason" in found
            ? { name, lift: null, ci: null, p_value: null }
            : { name, lift: found.lift, ci: found.ci, p_value: found.pValue };
        });
      return {
        value: v.value,
        ...(v.pooled ? { pooled_values: v.pooled } : {}),
        users: total(v.users),
        variants: variants.map((name) => {
          const s = v.stats[name] ?? { users: 0, sum: 0, sumSquares: 0 };
          const mean = s.users > 0 ? s.sum / s.users : null;
          return {
            name,
            users: v.users[name] ?? 0,
            metric_users: s.users,
            mean: mean !== null && Number.isFinite(mean) ? mean : null,
          };
        }),
        srm: {
          chi_square: test.chi_square,
          p_value: test.p_value,
          mismatch: test.enough_data && test.p_value < threshold,
          enough_data: test.enough_data,
        },
        key_metric,
      };
    });
    const failing = values.filter((v) => v.srm.mismatch);
    if (failing.length > 0) {
      warnings.push(
        `Sample ratio mismatch within dimension "${d.name}": ${
          failing.map((v) => `${v.value} (${pValueText(v.srm.p_value)})`).join(", ")
        } below the Bonferroni threshold ${threshold.toPrecision(3)} (0.001 ÷ ${values.length} ` +
          `values)`,
      );
    }
    if (d.inconsistentUsers > 0) {
      warnings.push(
        `Dimension "${d.name}": ${d.inconsistentUsers} ${
          d.inconsistentUsers === 1 ? "user's rows hold" : "users' rows hold"
        } more than one value; each user counts under the value of their first row`,
      );
    }
    return {
      name: d.name,
      distinct_values: d.distinctValues,
      skipped: false,
      threshold,
      inconsistent_users: d.inconsistentUsers,
      key_metric: kind === null ? null : d.metric,
      values,
    };
  });
  return { dimensions: reports, warnings };
}
