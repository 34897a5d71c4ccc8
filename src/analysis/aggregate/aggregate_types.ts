/**
 * The per-variant numbers the analysis works from, produced from the stored CSV by the aggregation
 * step and turned into the analysis JSON by `report.ts`, and the options of that step.
 */
import type { Header } from "../../csv/header.ts";
import type { MetricKind } from "./_row_reader.ts";

/** Options of `aggregateCsv` (and, in part, `CsvAggregator`). */
export interface AggregateOptions {
  /** Metric kinds that replace the detected ones, by column name; default none. */
  metricKinds?: Readonly<Record<string, MetricKind>>;
  /**
   * CUPED covariate columns by metric, over the `<metric>_pre` columns (see `covariates.ts`);
   * default none. Pairs naming columns the data lacks are left out.
   */
  covariates?: Readonly<Record<string, string>>;
  /** Numeric metric → percentile in (0, 1) to cap its per-user values at; default none. */
  winsorize?: Readonly<Record<string, number>>;
  /**
   * Called with each chunk before it is read, e.g. the caller's validator; when it throws,
   * `aggregateCsv` stops with that error. Default none.
   */
  onChunk?: (chunk: Uint8Array) => void;
  /** Called once with the header as read (delimiter and trimmed names). Default none. */
  onHeader?: (header: Header) => void;
  /**
   * Whether `aggregateCsv` may start a worker for the second thread; default true. Without one
   * it reads on the calling thread alone (the same answer; it saves a worker's start-up).
   */
  worker?: boolean;
  /**
   * The input's length in bytes, when known: up to `SMALL_INPUT_BYTES` it is read on the calling
   * thread, as starting a worker costs more (tens of milliseconds) than reading such a file.
   * Default unknown (a worker is started).
   */
  sizeBytes?: number;
}

/** Per-user statistics of one metric in one variant, over the users with a value. */
export interface MetricVariantStats {
  /** Users with a value. */
  users: number;
  sum: number;
  /** Of per-user values. */
  sumSquares: number;
}

/**
 * Per-user sums of a metric's CUPED covariate x in one variant, over the users with a value of the
 * metric y (x = the sum of the user's covariate cells, 0 without any; capped as the metric is).
 */
export interface CovariateMoments {
  sumX: number;
  sumXSquares: number;
  sumXY: number;
}

/** One variant on one date of the cumulative daily series. */
export interface DailyVariantPoint {
  cumulativeUsers: number;
  /** Per candidate metric: users with a value so far. */
  metricUsers: Record<string, number>;
  /** Per candidate metric: sum of per-user values so far. */
  metricSum: Record<string, number>;
}

export interface Aggregate {
  /** Data rows read. */
  rows: number;
  /** Sorted (code-unit order); users in one variant only. */
  variants: string[];
  /** Users per variant (excluded users not counted). */
  users: Record<string, number>;
  /** Users seen in more than one variant. */
  excludedUsers: number;
  /** Metric columns in header order; kind after settings.metric_kinds. */
  metrics: {
    name: string;
    kind: "conversion" | "numeric";
    detectedKind: "conversion" | "numeric";
  }[];
  /**
   * Metric → variant → per-user stats (conversion: per-user value = max; numeric: sum; capped
   * where `winsorized` says so).
   */
  stats: Record<string, Record<string, MetricVariantStats>>;
  /** Metric → its covariate column and, per variant, the covariate's moments (see `covariates.ts`). */
  covariates: Record<string, { column: string; moments: Record<string, CovariateMoments> }>;
  /**
   * Numeric metric → the percentile its per-user values were capped at, and the cap: the pooled
   * quantile of the per-user values (NumPy's linear interpolation). Applies to `stats`, the daily
   * sums and the metric's covariate.
   */
  winsorized: Record<string, { percentile: number; cap: number }>;
  /**
   * Sorted by date, cumulative: users first seen up to that date; metricSum/metricUsers over those
   * users using their rows up to that date.
   */
  daily: { date: string; variants: Record<string, DailyVariantPoint> }[];
}
