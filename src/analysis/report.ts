/**
 * Turns an aggregated dataset and the experiment's settings into the analysis JSON of
 * `GET /datasets/{experiment_id}/analysis/` (without the envelope: experiment_id, status, error,
 * dataset). Numbers are not rounded; every number is finite (null where there is none).
 */

import type { Aggregate, MetricVariantStats } from "./aggregate/aggregate_types.ts";
import { sampleVariance } from "./stats/_math.ts";
import {
  conversionSampleSize,
  numericSampleSize,
  type SampleSizeResult,
} from "./stats/sample_size.ts";
import {
  checkSettingsAgainstData,
  type MetricKind,
  type Settings,
  SETTINGS_DEFAULTS,
} from "./settings.ts";
import { srm, type SrmResult } from "./stats/srm.ts";
import { type VariantWinProbability, winProbability } from "./stats/win_probability.ts";

export interface MetricVariantReport {
  name: string;
  /** Users with a value of the metric. */
  users: number;
  mean: number | null;
  /** Sample variance (n − 1); null below two users. */
  variance: number | null;
  /** Conversion metrics only: converted users. */
  conversions?: number;
}

export interface AnalysisReport {
  control: string | null;
  key_metric: string | null;
  variants: { name: string; users: number }[];
  srm: SrmResult;
  sample: {
    total_users: number;
    target_users_per_variant: number | null;
    target_users: number | null;
    percent_of_target: number | null;
  };
  metrics: { name: string; kind: MetricKind; variants: MetricVariantReport[] }[];
  win_probability: { metric: string | null; variants: VariantWinProbability[] };
  daily: {
    date: string;
    variants: { name: string; cumulative_users: number; mean: number | null }[];
  }[];
  warnings: string[];
}

/** Options of {@linkcode buildReport}. */
export interface BuildReportOptions {
  /** Monte Carlo draws for the chance to be best (three or more variants). Default 250 000. */
  draws?: number;
  /** Seed of those draws; the default keeps the answer the same for the same data. */
  seed?: number;
}

const EMPTY_STATS: MetricVariantStats = { users: 0, sum: 0, sumSquares: 0 };

function finite(x: number): number | null {
  return Number.isFinite(x) ? x : null;
}

function statsOf(aggregate: Aggregate, metric: string, variant: string): MetricVariantStats {
  return aggregate.stats[metric]?.[variant] ?? EMPTY_STATS;
}

function metricVariant(name: string, kind: MetricKind, s: MetricVariantStats): MetricVariantReport {
  const mean = s.users > 0 ? finite(s.sum / s.users) : null;
  if (kind === "conversion") {
    const variance = mean !== null && s.users >= 2
      ? mean * (1 - mean) * s.users / (s.users - 1)
      : null;
    return { name, users: s.users, mean, variance, conversions: s.sum };
  }
  const variance = sampleVariance(s.users, s.sum, s.sumSquares);
  return { name, users: s.users, mean, variance: variance === null ? null : finite(variance) };
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

function targetSample(
  aggregate: Aggregate,
  settings: Settings,
  control: string | null,
  keyMetric: { name: string; kind: MetricKind } | undefined,
): SampleSizeResult {
  if (settings.target_users_per_variant !== undefined) {
    return { usersPerVariant: settings.target_users_per_variant, warning: null };
  }
  if (control === null || keyMetric === undefined) {
    return { usersPerVariant: null, warning: "Target sample size unavailable: no data to size it" };
  }
  const options = {
    alpha: settings.alpha ?? SETTINGS_DEFAULTS.alpha,
    power: settings.power ?? SETTINGS_DEFAULTS.power,
    mde: settings.mde ?? SETTINGS_DEFAULTS.mde,
  };
  const s = statsOf(aggregate, keyMetric.name, control);
  if (s.users === 0) {
    return {
      usersPerVariant: null,
      warning: `Target sample size unavailable: no user of the control "${control}" has a ` +
        `value of the key metric "${keyMetric.name}"`,
    };
  }
  const mean = s.sum / s.users;
  if (keyMetric.kind === "conversion") {
    return conversionSampleSize(Math.min(1, Math.max(0, mean)), options);
  }
  return numericSampleSize(mean, sampleVariance(s.users, s.sum, s.sumSquares), options);
}

/**
 * Builds the analysis of an aggregated dataset. Settings that do not fit the data (unknown key
 * metric, control or metric_kinds column; a split not naming exactly the variants) throw the
 * `invalid_settings` ApiError of {@linkcode checkSettingsAgainstData}.
 */
export function buildReport(
  aggregate: Aggregate,
  settings: Settings = {},
  options: BuildReportOptions = {},
): AnalysisReport {
  checkSettingsAgainstData(settings, aggregate);
  const warnings: string[] = [];
  const names = aggregate.variants;
  const control = settings.control ?? names[0] ?? null;
  const keyMetric = settings.key_metric !== undefined
    ? aggregate.metrics.find((m) => m.name === settings.key_metric)
    : aggregate.metrics[0];
  const usersOf = (name: string) => aggregate.users[name] ?? 0;

  if (aggregate.excludedUsers > 0) {
    warnings.push(
      `Data quality: ${
        plural(aggregate.excludedUsers, "user was", "users were")
      } seen in more than one variant and excluded from the analysis`,
    );
  }
  if (names.length < 2) {
    warnings.push(
      `Only ${plural(names.length, "variant", "variants")} in the data: nothing to compare`,
    );
  }

  const observed: Record<string, number> = {};
  for (const name of names) observed[name] = usersOf(name);
  const srmResult = srm(observed, settings.expected_split);
  if (srmResult.mismatch) {
    warnings.push(
      `Sample ratio mismatch: the users per variant do not fit the expected split ` +
        `(chi-square p = ${srmResult.p_value.toPrecision(3)})`,
    );
  }

  const totalUsers = names.reduce((sum, name) => sum + usersOf(name), 0);
  const target = targetSample(aggregate, settings, control, keyMetric);
  if (target.warning !== null) warnings.push(target.warning);
  const perVariant = target.usersPerVariant;
  const smallest = names.length > 0 ? Math.min(...names.map(usersOf)) : 0;

  const metrics = aggregate.metrics.map((metric) => ({
    name: metric.name,
    kind: metric.kind,
    variants: names.map((name) =>
      metricVariant(name, metric.kind, statsOf(aggregate, metric.name, name))
    ),
  }));

  const winVariants = keyMetric === undefined || control === null ? [] : winProbability(
    names.map((name) => ({ name, ...statsOf(aggregate, keyMetric.name, name) })),
    { kind: keyMetric.kind, control, draws: options.draws, seed: options.seed },
  );

  const daily = aggregate.daily.map((day) => ({
    date: day.date,
    variants: names.map((name) => {
      const point = day.variants[name];
      const users = keyMetric === undefined ? 0 : point?.metricUsers[keyMetric.name] ?? 0;
      const sum = keyMetric === undefined ? 0 : point?.metricSum[keyMetric.name] ?? 0;
      return {
        name,
        cumulative_users: point?.cumulativeUsers ?? 0,
        mean: users > 0 ? finite(sum / users) : null,
      };
    }),
  }));

  return {
    control,
    key_metric: keyMetric?.name ?? null,
    variants: names.map((name) => ({ name, users: usersOf(name) })),
    srm: srmResult,
    sample: {
      total_users: totalUsers,
      target_users_per_variant: perVariant,
      target_users: perVariant === null ? null : perVariant * names.length,
      percent_of_target: perVariant === null ? null : 100 * smallest / perVariant,
    },
    metrics,
    win_probability: { metric: keyMetric?.name ?? null, variants: winVariants },
    daily,
    warnings,
  };
}
