/**
 * Turns an aggregated dataset and the experiment's settings into the analysis JSON of
 * `GET /datasets/{experiment_id}/analysis/` (without the envelope: experiment_id, status, error,
 * dataset). Numbers are not rounded; every number is finite (null where there is none).
 */

import type { Aggregate, MetricVariantStats } from "./aggregate/aggregate_types.ts";
import { armMoments, type ComparisonReport, metricComparisons } from "./comparisons.ts";
import { covariatePairs } from "./covariates.ts";
import { sampleVariance } from "./stats/_math.ts";
import { daysLeft, newestLooksIncomplete, usersPerDay } from "./stats/accrual.ts";
import { cupedAdjust } from "./stats/cuped.ts";
import type { ArmStatistics } from "./stats/inference.ts";
import {
  conversionSampleSize,
  numericSampleSize,
  type SampleSizeResult,
} from "./stats/sample_size.ts";
import {
  checkSettingsAgainstData,
  type InferenceView,
  type MetricKind,
  type Settings,
  SETTINGS_DEFAULTS,
} from "./settings.ts";
import { pValueText, srm, type SrmResult } from "./stats/srm.ts";
import {
  type AdjustedNormals,
  chancesToBeatControl,
  type NormalModel,
  type VariantWinProbability,
  winProbability,
} from "./stats/win_probability.ts";
import { type DimensionReport, dimensionReports } from "./dimensions.ts";
import type { Changes } from "./history/delivery_summary.ts";
import { type DatasetColumn, datasetColumns } from "./dataset_columns.ts";

/**
 * The version of the analysis that made a stored result; a newer service re-runs results of
 * older versions. 1: SRM, sample, win probability, daily series. 2: comparisons on every metric
 * (fixed-horizon, Holm, sequential, decision), CUPED, capping, days left. 3: dimension health,
 * changes since the previous delivery, provisional dates, `too_early`, rows per date, the chance
 * to beat the control on every metric. 4: `dataset.columns` (the columns as read: a metric's
 * kind, or a dimension), where the saved result carried a private copy of the aggregate.
 */
export const ANALYSIS_VERSION = 4;

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

/** One entry of `metrics`. */
export interface MetricReport {
  name: string;
  kind: MetricKind;
  /** The CUPED covariate column, or null. */
  covariate: string | null;
  /** Numeric metrics capped by the settings: the percentile and the cap; else null. */
  winsorized: { percentile: number; cap: number } | null;
  /** A decrease is the improvement (settings `lower_is_better`). */
  lower_is_better: boolean;
  variants: MetricVariantReport[];
  /** Each non-control variant against the control. */
  comparisons: ComparisonReport[];
}

export interface AnalysisReport {
  analysis_version: number;
  /** What the analysis read of the dataset (the envelope adds size, rows, ETag, delivery time). */
  dataset: { columns: DatasetColumn[] };
  control: string | null;
  key_metric: string | null;
  /** The view the UI leads with (settings `inference`). */
  inference: InferenceView;
  /** 1 − alpha: of every interval (fixed-horizon and sequential). */
  confidence_level: number;
  variants: { name: string; users: number }[];
  srm: SrmResult;
  sample: {
    total_users: number;
    target_users_per_variant: number | null;
    target_users: number | null;
    percent_of_target: number | null;
    /** New users a day of the smallest variant, over the last 7 dates not provisional. */
    users_per_day: number | null;
    days_left: number | null;
    /** Distinct dates in the data. */
    days: number;
  };
  /** Decisions wait (`too_early`): `min_users_per_variant` or `min_days` not reached yet. */
  too_early: boolean;
  metrics: MetricReport[];
  win_probability: { metric: string | null; variants: VariantWinProbability[] };
  daily: {
    date: string;
    /** The date's own rows; absent in results made from aggregates without them. */
    rows?: number;
    /** Present (true) on a newest date judged incomplete. */
    provisional?: true;
    variants: { name: string; cumulative_users: number; mean: number | null }[];
  }[];
  /** Dimension health: every dimension column. */
  dimensions: DimensionReport[];
  /** Since the previous delivery; null on the first one. */
  changes: Changes | null;
  warnings: string[];
}

/** Options of {@linkcode buildReport}. */
export interface BuildReportOptions {
  /**
   * What changed since the previous delivery (its `provisional_date` is set here); default null
   * (a first delivery).
   */
  changes?: Changes | null;
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

/** `record[key]` when the record has it as its own (a metric may be named "constructor"). */
function own<T>(record: Record<string, T>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

function normal(arm: ArmStatistics): NormalModel | null {
  const se = Math.sqrt(arm.variance / arm.n);
  return Number.isFinite(se) && Number.isFinite(arm.mean) ? { mean: arm.mean, se } : null;
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

/** What every step of the report reads: the aggregate, the settings and what follows from them. */
interface ReportContext {
  aggregate: Aggregate;
  settings: Settings;
  /** The variants, sorted. */
  names: string[];
  control: string | null;
  /** Metric → its covariate column (see `covariatePairs`). */
  pairs: Map<string, string>;
  /** The metrics reported (covariates are not). */
  analysed: Aggregate["metrics"];
  keyMetric: Aggregate["metrics"][number] | undefined;
  alpha: number;
  lowerIsBetter: Set<string>;
  usersOf: (name: string) => number;
  /** Users of the smallest variant. */
  smallest: number;
  /** Distinct dates. */
  days: number;
  /** Whether the newest date looks incomplete (see `newestLooksIncomplete`). */
  provisional: boolean;
  /** Decisions wait: `min_users_per_variant` or `min_days` not reached. */
  tooEarly: boolean;
  /** Sentences about the data, in the order the steps add them. */
  warnings: string[];
}

/**
 * Builds the analysis of an aggregated dataset, step by step: the columns and the settings
 * check, the data's quality, SRM, the sample, the metrics and their comparisons, the win
 * probability, the daily series, dimension health, and the changes since the previous delivery.
 * Settings that do not fit the data (unknown key metric, control or metric_kinds column; a split
 * not naming exactly the variants) throw the `SettingsError` of
 * {@linkcode checkSettingsAgainstData}.
 */
export function buildReport(
  aggregate: Aggregate,
  settings: Settings = {},
  options: BuildReportOptions = {},
): AnalysisReport {
  const columns = datasetColumns(aggregate);
  checkSettingsAgainstData(settings, { variants: aggregate.variants, columns });
  const context = reportContext(aggregate, settings);
  const { names, control, keyMetric, usersOf, warnings } = context;
  warnings.push(...dataWarnings(aggregate));
  const srmResult = srmOf(context);
  const sample = sampleOf(context);
  const { metrics, pairsOfKey } = metricReports(context);
  const winVariants = winVariantsOf(context, metrics, pairsOfKey);
  const health = dimensionReports(aggregate.dimensions ?? [], {
    variants: names,
    control,
    kind: keyMetric?.kind ?? null,
    expectedSplit: settings.expected_split,
    alpha: context.alpha,
  });
  warnings.push(...health.warnings);
  const changes = changesOf(context, options.changes ?? null);
  warnings.push(...closingWarnings(context, changes));
  return {
    analysis_version: ANALYSIS_VERSION,
    dataset: { columns },
    control,
    key_metric: keyMetric?.name ?? null,
    inference: settings.inference ?? SETTINGS_DEFAULTS.inference,
    confidence_level: 1 - context.alpha,
    variants: names.map((name) => ({ name, users: usersOf(name) })),
    srm: srmResult,
    sample,
    too_early: context.tooEarly,
    metrics,
    win_probability: { metric: keyMetric?.name ?? null, variants: winVariants },
    daily: dailyOf(context),
    dimensions: health.dimensions,
    changes,
    warnings,
  };
}

/** The control, the key metric and what the other steps take from the settings and the data. */
function reportContext(aggregate: Aggregate, settings: Settings): ReportContext {
  const names = aggregate.variants;
  const pairs = covariatePairs(aggregate.metrics.map((m) => m.name), settings.covariates);
  const covariateColumns = new Set(pairs.values());
  const analysed = aggregate.metrics.filter((m) => !covariateColumns.has(m.name));
  const usersOf = (name: string) => aggregate.users[name] ?? 0;
  const smallest = names.length > 0 ? Math.min(...names.map(usersOf)) : 0;
  const days = aggregate.daily.length;
  const minUsers = settings.min_users_per_variant ?? 0;
  const minDays = settings.min_days ?? 0;
  return {
    aggregate,
    settings,
    names,
    control: settings.control ?? names[0] ?? null,
    pairs,
    analysed,
    keyMetric: settings.key_metric !== undefined
      ? analysed.find((m) => m.name === settings.key_metric)
      : analysed[0],
    alpha: settings.alpha ?? SETTINGS_DEFAULTS.alpha,
    lowerIsBetter: new Set(settings.lower_is_better ?? []),
    usersOf,
    smallest,
    days,
    provisional: newestLooksIncomplete(names.map((name) => cumulativeOf(aggregate, name))),
    tooEarly: names.length > 0 && (smallest < minUsers || days < minDays),
    warnings: [],
  };
}

/** The cumulative users of `variant` by date. */
function cumulativeOf(aggregate: Aggregate, variant: string): number[] {
  return aggregate.daily.map((day) => day.variants[variant]?.cumulativeUsers ?? 0);
}

/** Users seen in two variants, and too few variants to compare. */
function dataWarnings(aggregate: Aggregate): string[] {
  const warnings: string[] = [];
  if (aggregate.excludedUsers > 0) {
    warnings.push(
      `Data quality: ${
        plural(aggregate.excludedUsers, "user was", "users were")
      } seen in more than one variant and excluded from the analysis`,
    );
  }
  const variants = aggregate.variants.length;
  if (variants < 2) {
    warnings.push(
      `Only ${plural(variants, "variant", "variants")} in the data: nothing to compare`,
    );
  }
  return warnings;
}

/** The sample ratio test of the users per variant against the expected split. */
function srmOf(context: ReportContext): SrmResult {
  const observed: Record<string, number> = {};
  for (const name of context.names) observed[name] = context.usersOf(name);
  const result = srm(observed, context.settings.expected_split);
  if (result.mismatch) {
    context.warnings.push(
      `Sample ratio mismatch: the users per variant do not fit the expected split ` +
        `(chi-square ${pValueText(result.p_value)})`,
    );
  }
  return result;
}

/** The accumulated sample against its target, and the pace of new users. */
function sampleOf(context: ReportContext): AnalysisReport["sample"] {
  const { aggregate, settings, names, usersOf, smallest, days, provisional } = context;
  const target = targetSample(aggregate, settings, context.control, context.keyMetric);
  if (target.warning !== null) context.warnings.push(target.warning);
  const perVariant = target.usersPerVariant;
  // The slowest of the smallest variants sets the pace.
  const rates = names.filter((name) => usersOf(name) === smallest).map((name) =>
    usersPerDay(
      cumulativeOf(aggregate, name).map((cumulativeUsers, d) => ({
        cumulativeUsers,
        provisional: provisional && d === days - 1,
      })),
    )
  );
  const rate = rates.length === 0 || rates.includes(null) ? null : Math.min(...rates as number[]);
  return {
    total_users: names.reduce((sum, name) => sum + usersOf(name), 0),
    target_users_per_variant: perVariant,
    target_users: perVariant === null ? null : perVariant * names.length,
    percent_of_target: perVariant === null ? null : 100 * smallest / perVariant,
    users_per_day: rate,
    days_left: daysLeft(perVariant, smallest, rate),
    days,
  };
}

/** The key metric's compared arms per variant (for the win probability). */
type KeyPairs = Map<string, { control: ArmStatistics; variant: ArmStatistics }>;

/** Every metric reported, with its comparisons; and the key metric's compared arms. */
function metricReports(context: ReportContext): { metrics: MetricReport[]; pairsOfKey: KeyPairs } {
  const pairsOfKey: KeyPairs = new Map();
  const metrics = context.analysed.map((metric) => metricReport(context, metric, pairsOfKey));
  return { metrics, pairsOfKey };
}

/** One metric's report: per variant, and each variant against the control. */
function metricReport(
  context: ReportContext,
  metric: Aggregate["metrics"][number],
  pairsOfKey: KeyPairs,
): MetricReport {
  const { aggregate, names, control, lowerIsBetter } = context;
  const column = context.pairs.get(metric.name);
  const moments = own(aggregate.covariates, metric.name);
  const covariate = column !== undefined && moments?.column === column ? moments : null;
  const isKey = metric.name === context.keyMetric?.name;
  const compared = control === null ? null : metricComparisons({
    metric: metric.name,
    kind: metric.kind,
    control,
    variants: names,
    stats: (name) => statsOf(aggregate, metric.name, name),
    covariate,
    alpha: context.alpha,
    tuning: context.settings.sequential_tuning ?? SETTINGS_DEFAULTS.sequential_tuning,
    decide: isKey,
    lowerIsBetter: lowerIsBetter.has(metric.name),
  });
  context.warnings.push(...compared?.warnings ?? []);
  if (isKey) { for (const [name, pair] of compared?.pairs ?? []) pairsOfKey.set(name, pair); }
  const comparisons = compared?.comparisons ?? [];
  if (compared !== null && control !== null) {
    // The chance to beat the control, on the (capped, CUPED-adjusted) statistics compared.
    const chances = chancesToBeatControl(
      names.map((name) => ({ name, ...statsOf(aggregate, metric.name, name) })),
      {
        kind: metric.kind,
        control,
        lowerIsBetter: lowerIsBetter.has(metric.name),
        adjusted: covariate === null ? undefined : {
          best: names.map(() => null),
          versusControl: names.map((n) => normals(compared.pairs.get(n))),
        },
      },
    );
    for (const c of comparisons) c.chance_to_beat_control = chances[names.indexOf(c.name)];
  }
  if (isKey && context.tooEarly) {
    for (const c of comparisons) if (c.decision) c.decision = "too_early";
  }
  return {
    name: metric.name,
    kind: metric.kind,
    covariate: covariate?.column ?? null,
    winsorized: own(aggregate.winsorized, metric.name) ?? null,
    lower_is_better: lowerIsBetter.has(metric.name),
    variants: names.map((name) =>
      metricVariant(name, metric.kind, statsOf(aggregate, metric.name, name))
    ),
    comparisons,
  };
}

/** A compared pair of arms as normal models, or null where either has none. */
function normals(
  pair: { control: ArmStatistics; variant: ArmStatistics } | undefined,
): { control: NormalModel; variant: NormalModel } | null {
  const a = pair && normal(pair.control);
  const b = pair && normal(pair.variant);
  return a && b ? { control: a, variant: b } : null;
}

/**
 * The key metric's chances for every variant, with the lift and its interval of each
 * non-control variant's comparison. A CUPED-adjusted key metric's chance to be best compares all
 * variants at once: one θ over all of them.
 */
function winVariantsOf(
  context: ReportContext,
  metrics: MetricReport[],
  pairsOfKey: KeyPairs,
): VariantWinProbability[] {
  const { aggregate, names, control, keyMetric } = context;
  if (keyMetric === undefined || control === null) return [];
  const keyReport = metrics.find((m) => m.name === keyMetric.name);
  let adjusted: AdjustedNormals | undefined;
  const keyCovariate = keyReport?.covariate ? own(aggregate.covariates, keyMetric.name) : undefined;
  if (keyCovariate !== undefined) {
    const all = cupedAdjust(
      names.map((name) =>
        armMoments(statsOf(aggregate, keyMetric.name, name), keyCovariate.moments[name])
      ),
    );
    adjusted = {
      best: all.arms.map(normal),
      versusControl: names.map((name) => normals(pairsOfKey.get(name))),
    };
  }
  return winProbability(
    names.map((name) => ({ name, ...statsOf(aggregate, keyMetric.name, name) })),
    {
      kind: keyMetric.kind,
      control,
      lowerIsBetter: context.lowerIsBetter.has(keyMetric.name),
      adjusted,
    },
  ).map((entry) => {
    if (entry.name === control) return entry;
    const comparison = keyReport?.comparisons.find((c) => c.name === entry.name);
    return { ...entry, lift: comparison?.lift ?? null, lift_ci95: comparison?.ci ?? null };
  });
}

/** The daily cumulative series: users so far per variant, and the key metric's mean. */
function dailyOf(context: ReportContext): AnalysisReport["daily"] {
  const { aggregate, names, keyMetric, provisional, days } = context;
  return aggregate.daily.map((day, d) => ({
    date: day.date,
    ...(day.rows === undefined ? {} : { rows: day.rows }),
    ...(provisional && d === days - 1 ? { provisional: true as const } : {}),
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
}

/** The changes since the previous delivery, with the newest date when it looks incomplete. */
function changesOf(context: ReportContext, changes: Changes | null): Changes | null {
  if (!changes) return null;
  const newest = context.aggregate.daily[context.days - 1]?.date ?? null;
  return { ...changes, provisional_date: context.provisional ? newest : null };
}

/** The changes in sentences, a provisional newest date, and decisions that must wait. */
function closingWarnings(context: ReportContext, changes: Changes | null): string[] {
  const { settings, smallest, days } = context;
  const warnings = changes === null ? [] : changeWarnings(changes);
  if (context.provisional) {
    const newest = context.aggregate.daily[days - 1]?.date ?? null;
    warnings.push(
      `The newest date ${newest} looks incomplete (its new users are under half the median of ` +
        `the dates before it): it is marked provisional and left out of the users per day`,
    );
  }
  if (context.tooEarly) {
    const minUsers = settings.min_users_per_variant ?? 0;
    const minDays = settings.min_days ?? 0;
    warnings.push(
      `Too early for a decision: ` + [
        smallest < minUsers ? `${smallest} of ${minUsers} users in the smallest variant` : "",
        days < minDays ? `${days} of ${minDays} days` : "",
      ].filter((part) => part !== "").join(", "),
    );
  }
  return warnings;
}

function grouped(n: number): string {
  return n.toLocaleString("en-US");
}

/** The `changes` in sentences: what was added, and what a growing file should not show. */
export function changeWarnings(changes: Changes): string[] {
  const out = [
    `Since the previous delivery: ${changes.rows_added >= 0 ? "+" : "−"}${
      grouped(Math.abs(changes.rows_added))
    } rows, +${grouped(changes.users_added)} users`,
  ];
  if (changes.users_switched_variant > 0) {
    out.push(
      `Since the previous delivery, ${
        plural(changes.users_switched_variant, "user is", "users are")
      } in another variant than before`,
    );
  }
  if (changes.users_vanished > 0) {
    out.push(
      `Since the previous delivery, ${
        plural(changes.users_vanished, "user has", "users have")
      } vanished from the data`,
    );
  }
  if (changes.restated_dates.length > 0) {
    out.push(
      `History restated: the row counts of ${
        plural(changes.restated_dates.length, "past date", "past dates")
      } changed since the previous delivery (${changes.restated_dates.join(", ")})`,
    );
  }
  return out;
}
