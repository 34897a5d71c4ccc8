/**
 * Analysis settings of one experiment (`PUT /datasets/{experiment_id}/settings/`): the shape check
 * done when they are saved, and the check against the data done when a dataset is analysed.
 */

import { ServiceError } from "../errors.ts";
import { type DatasetFacts, metricColumns } from "./dataset_columns.ts";
import { covariatePairs } from "./covariates.ts";

export type MetricKind = "conversion" | "numeric";

/** Which figures the UI leads with: the always-valid decision, the fixed-horizon test, or Bayes. */
export type InferenceView = "sequential" | "frequentist" | "bayesian";
const INFERENCE_VIEWS: readonly InferenceView[] = ["sequential", "frequentist", "bayesian"];

/** The settings JSON; every field is optional. */
export interface Settings {
  key_metric?: string;
  control?: string;
  /** Variant → share of traffic; shares sum to 1 (± 1e-9) and name exactly the variants. */
  expected_split?: Record<string, number>;
  /** Minimum detectable effect, relative (0.05 = 5 %). */
  mde?: number;
  alpha?: number;
  power?: number;
  target_users_per_variant?: number;
  metric_kinds?: Record<string, MetricKind>;
  /** The view the UI leads with; default `sequential`. */
  inference?: InferenceView;
  /** N of the sequential intervals: the total sample where they are tightest; default 5000. */
  sequential_tuning?: number;
  /** Metric → its CUPED covariate column (instead of `<metric>_pre`). */
  covariates?: Record<string, string>;
  /** Numeric metric → percentile in (0.5, 1) to cap its per-user values at. */
  winsorize?: Record<string, number>;
  /** Metrics where a decrease is the improvement (flips `decision` and the chances). */
  lower_is_better?: string[];
  /** Users the smallest variant needs before a decision is shown; default 0. */
  min_users_per_variant?: number;
  /** Distinct dates the data needs before a decision is shown; default 0. */
  min_days?: number;
}

/** Defaults used where a setting is absent. */
export const SETTINGS_DEFAULTS = Object.freeze({
  mde: 0.05,
  alpha: 0.05,
  power: 0.8,
  inference: "sequential" as InferenceView,
  sequential_tuning: 5000,
});

const SPLIT_TOLERANCE = 1e-9;
const FIELDS = [
  "key_metric",
  "control",
  "expected_split",
  "mde",
  "alpha",
  "power",
  "target_users_per_variant",
  "metric_kinds",
  "inference",
  "sequential_tuning",
  "covariates",
  "winsorize",
  "lower_is_better",
  "min_users_per_variant",
  "min_days",
];

/** Settings that cannot be saved or applied: `invalid_settings`, naming the offending field. */
export class SettingsError extends ServiceError {
  constructor(message: string) {
    super("invalid_settings", message);
    this.name = "SettingsError";
  }
}

function invalid(message: string): SettingsError {
  return new SettingsError(message);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "object") return "an object";
  return String(value);
}

function nonEmptyString(field: string, value: unknown): string {
  if (typeof value !== "string" || value.length === 0) {
    throw invalid(`Invalid settings: ${field} must be a non-empty string, got ${describe(value)}`);
  }
  return value;
}

function numberInRange(
  field: string,
  value: unknown,
  check: (x: number) => boolean,
  range: string,
): number {
  if (typeof value !== "number" || !Number.isFinite(value) || !check(value)) {
    throw invalid(`Invalid settings: ${field} must be a number ${range}, got ${describe(value)}`);
  }
  return value;
}

function split(value: unknown): Record<string, number> {
  if (!isPlainObject(value)) {
    throw invalid(
      `Invalid settings: expected_split must be an object of variant shares, got ${
        describe(value)
      }`,
    );
  }
  const entries = Object.entries(value);
  if (entries.length === 0) throw invalid("Invalid settings: expected_split names no variant");
  const result: Record<string, number> = {};
  let total = 0;
  for (const [name, share] of entries) {
    if (typeof share !== "number" || !Number.isFinite(share) || share <= 0) {
      throw invalid(
        `Invalid settings: expected_split share of "${name}" must be a positive number, got ${
          describe(share)
        }`,
      );
    }
    result[name] = share;
    total += share;
  }
  if (Math.abs(total - 1) > SPLIT_TOLERANCE) {
    throw invalid(`Invalid settings: expected_split shares must sum to 1, got ${total}`);
  }
  return result;
}

function metricKinds(value: unknown): Record<string, MetricKind> {
  if (!isPlainObject(value)) {
    throw invalid(
      `Invalid settings: metric_kinds must be an object of column kinds, got ${describe(value)}`,
    );
  }
  const result: Record<string, MetricKind> = {};
  for (const [name, kind] of Object.entries(value)) {
    if (kind !== "conversion" && kind !== "numeric") {
      throw invalid(
        `Invalid settings: metric_kinds of "${name}" must be "conversion" or "numeric", got ${
          describe(kind)
        }`,
      );
    }
    result[name] = kind;
  }
  return result;
}

function covariates(value: unknown): Record<string, string> {
  if (!isPlainObject(value)) {
    throw invalid(
      `Invalid settings: covariates must be an object of metric → covariate column, got ${
        describe(value)
      }`,
    );
  }
  const result: Record<string, string> = {};
  for (const [metric, column] of Object.entries(value)) {
    if (typeof column !== "string" || column.length === 0) {
      throw invalid(
        `Invalid settings: covariates of "${metric}" must be a column name, got ${
          describe(column)
        }`,
      );
    }
    if (column === metric) {
      throw invalid(`Invalid settings: covariates of "${metric}" cannot be the metric itself`);
    }
    result[metric] = column;
  }
  return result;
}

function winsorize(value: unknown): Record<string, number> {
  if (!isPlainObject(value)) {
    throw invalid(
      `Invalid settings: winsorize must be an object of metric → percentile, got ${
        describe(value)
      }`,
    );
  }
  const result: Record<string, number> = {};
  for (const [metric, percentile] of Object.entries(value)) {
    result[metric] = numberInRange(
      `winsorize of "${metric}"`,
      percentile,
      (x) => x > 0.5 && x < 1,
      "(a percentile) in (0.5, 1)",
    );
  }
  return result;
}

function metricList(field: string, value: unknown): string[] {
  if (!Array.isArray(value)) {
    throw invalid(
      `Invalid settings: ${field} must be an array of metric names, got ${describe(value)}`,
    );
  }
  return value.map((name) => nonEmptyString(`each of ${field}`, name));
}

/**
 * Checks the shape of settings JSON and returns a clean copy. All fields are optional; a field set
 * to null counts as absent; an unknown field is refused (it is most likely a misspelt one).
 *
 * @throws {SettingsError} `invalid_settings` naming the offending field.
 */
export function validateSettings(input: unknown): Settings {
  if (!isPlainObject(input)) {
    throw invalid(`Invalid settings: expected a JSON object, got ${describe(input)}`);
  }
  const unknown = Object.keys(input).filter((key) => !FIELDS.includes(key));
  if (unknown.length > 0) {
    throw invalid(
      `Invalid settings: unknown field ${unknown.map((k) => `"${k}"`).join(", ")} (known: ${
        FIELDS.join(", ")
      })`,
    );
  }
  const settings: Settings = {};
  const { key_metric, control, expected_split, mde, alpha, power } = input;
  const target = input.target_users_per_variant;
  if (key_metric != null) settings.key_metric = nonEmptyString("key_metric", key_metric);
  if (control != null) settings.control = nonEmptyString("control", control);
  if (expected_split != null) settings.expected_split = split(expected_split);
  if (mde != null) {
    settings.mde = numberInRange("mde", mde, (x) => x > 0 && x <= 10, "in (0, 10]");
  }
  if (alpha != null) {
    settings.alpha = numberInRange("alpha", alpha, (x) => x > 0 && x < 1, "in (0, 1)");
  }
  if (power != null) {
    settings.power = numberInRange("power", power, (x) => x > 0 && x < 1, "in (0, 1)");
  }
  if (target != null) {
    if (typeof target !== "number" || !Number.isSafeInteger(target) || target < 1) {
      throw invalid(
        `Invalid settings: target_users_per_variant must be a positive integer, got ${
          describe(target)
        }`,
      );
    }
    settings.target_users_per_variant = target;
  }
  if (input.metric_kinds != null) settings.metric_kinds = metricKinds(input.metric_kinds);
  if (input.inference != null) {
    if (!INFERENCE_VIEWS.includes(input.inference as InferenceView)) {
      throw invalid(
        `Invalid settings: inference must be one of ${
          INFERENCE_VIEWS.map((v) => `"${v}"`).join(", ")
        }, got ${describe(input.inference)}`,
      );
    }
    settings.inference = input.inference as InferenceView;
  }
  if (input.sequential_tuning != null) {
    settings.sequential_tuning = numberInRange(
      "sequential_tuning",
      input.sequential_tuning,
      (x) => x > 0,
      "above 0 (the total number of users where the sequential interval is tightest)",
    );
  }
  if (input.covariates != null) settings.covariates = covariates(input.covariates);
  if (input.winsorize != null) settings.winsorize = winsorize(input.winsorize);
  if (input.lower_is_better != null) {
    settings.lower_is_better = metricList("lower_is_better", input.lower_is_better);
  }
  for (const field of ["min_users_per_variant", "min_days"] as const) {
    const value = input[field];
    if (value == null) continue;
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
      throw invalid(
        `Invalid settings: ${field} must be a whole number of 0 or more, got ${describe(value)}`,
      );
    }
    settings[field] = value;
  }
  return settings;
}

function quoteList(names: readonly string[]): string {
  return names.length === 0 ? "none" : names.map((n) => `"${n}"`).join(", ");
}

/** The settings fields that name variants or columns: what {@linkcode checkSettingsAgainstData} checks. */
const NAMING_DATA = [
  "key_metric",
  "control",
  "expected_split",
  "metric_kinds",
  "covariates",
  "winsorize",
  "lower_is_better",
] as const;

/** Whether `settings` name variants or columns, so that only the data can tell if they fit. */
export function namesData(settings: Settings): boolean {
  return NAMING_DATA.some((field) => settings[field] !== undefined);
}

/**
 * Checks settings against the dataset's variants and columns: the key metric, the control and every
 * metric_kinds column must exist; a column holding other values than 0 and 1 cannot be declared a
 * conversion; the expected split must name exactly the variants present.
 *
 * @throws {SettingsError} `invalid_settings` with a message naming what does not match.
 */
export function checkSettingsAgainstData(settings: Settings, data: DatasetFacts): void {
  const metrics = metricColumns(data);
  const metricNames = metrics.map((m) => m.name);
  if (settings.key_metric !== undefined && !metricNames.includes(settings.key_metric)) {
    throw invalid(
      `Invalid settings: key_metric "${settings.key_metric}" is not a metric column of the ` +
        `dataset (metric columns: ${quoteList(metricNames)})`,
    );
  }
  checkInferenceAgainstData(settings, data);
  if (settings.control !== undefined && !data.variants.includes(settings.control)) {
    throw invalid(
      `Invalid settings: control "${settings.control}" is not a variant of the dataset ` +
        `(variants: ${quoteList(data.variants)})`,
    );
  }
  for (const [name, kind] of Object.entries(settings.metric_kinds ?? {})) {
    const metric = metrics.find((m) => m.name === name);
    if (metric === undefined) {
      throw invalid(
        `Invalid settings: metric_kinds names "${name}", which is not a metric column of the ` +
          `dataset (metric columns: ${quoteList(metricNames)})`,
      );
    }
    if (kind === "conversion" && metric.kind === "numeric") {
      throw invalid(
        `Invalid settings: metric_kinds declares "${name}" a conversion, but the column holds ` +
          `values other than 0 and 1`,
      );
    }
  }
  if (settings.expected_split !== undefined) {
    const named = Object.keys(settings.expected_split);
    const missing = data.variants.filter((v) => !named.includes(v));
    const extra = named.filter((v) => !data.variants.includes(v));
    if (missing.length > 0 || extra.length > 0) {
      const details = [
        missing.length > 0 ? `missing ${quoteList(missing)}` : "",
        extra.length > 0 ? `not in the data ${quoteList(extra)}` : "",
      ].filter((s) => s !== "").join("; ");
      throw invalid(
        `Invalid settings: expected_split must name exactly the variants ` +
          `${quoteList(data.variants)} (${details})`,
      );
    }
  }
}

/**
 * The inference settings against the data: covariates name metric columns (and a metric that is
 * not itself another's covariate), the key metric is not a covariate, winsorize names numeric
 * metrics, lower_is_better names metrics.
 */
function checkInferenceAgainstData(settings: Settings, data: DatasetFacts): void {
  const metrics = metricColumns(data);
  const metricNames = metrics.map((m) => m.name);
  const columns = `(metric columns: ${quoteList(metricNames)})`;
  const pairs = covariatePairs(metricNames, settings.covariates);
  const covariateOf = new Map([...pairs].map(([metric, column]) => [column, metric]));
  const isMetric = (field: string, name: string) => {
    if (!metricNames.includes(name)) {
      throw invalid(
        `Invalid settings: ${field} names "${name}", which is not a metric column of the ` +
          `dataset ${columns}`,
      );
    }
    const of = covariateOf.get(name);
    if (of !== undefined) {
      throw invalid(
        `Invalid settings: ${field} names "${name}", which is the covariate of "${of}", not a ` +
          `metric`,
      );
    }
  };
  for (const [metric, column] of Object.entries(settings.covariates ?? {})) {
    if (!metricNames.includes(column)) {
      throw invalid(
        `Invalid settings: covariates of "${metric}" names "${column}", which is not a column ` +
          `of numbers in the dataset ${columns}`,
      );
    }
    isMetric("covariates", metric);
    if (pairs.get(metric) !== column) {
      // Left out because `metric` is itself some metric's covariate (e.g. a cycle).
      throw invalid(
        `Invalid settings: covariates pairs "${metric}" with "${column}", but "${metric}" is ` +
          `also named as a covariate; a covariate cannot have one of its own`,
      );
    }
  }
  if (settings.key_metric !== undefined) isMetric("key_metric", settings.key_metric);
  for (const [metric] of Object.entries(settings.winsorize ?? {})) {
    isMetric("winsorize", metric);
    const found = metrics.find((m) => m.name === metric)!;
    const kinds = settings.metric_kinds ?? {};
    const kind = Object.hasOwn(kinds, metric) ? kinds[metric] : found.kind;
    if (kind !== "numeric") {
      throw invalid(
        `Invalid settings: winsorize names "${metric}", a conversion metric; only numeric ` +
          `metrics are capped`,
      );
    }
  }
  for (const metric of settings.lower_is_better ?? []) isMetric("lower_is_better", metric);
}
