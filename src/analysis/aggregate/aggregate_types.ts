/**
 * The per-variant numbers the analysis works from, produced from the stored CSV by the aggregation
 * step and turned into the analysis JSON by `report.ts`, and the options of that step.
 */
import type { Header } from "../../csv/header.ts";
import type { MetricKind } from "./_row_reader.ts";
import type { UserHashes } from "./_user_hashes.ts";

export type { UserHashes };

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
  /**
   * How many users the input is expected to hold, e.g. the previous delivery's: the user tables
   * start that large instead of growing on the way (see `UserTable`). A wrong guess gives the
   * same answer. Default unknown.
   */
  expectedUsers?: number;
  /**
   * A large input's user records keep their days in 16 bits (1950 to 2126), unless this is true;
   * a date outside that span then fails the run with `DaysOutOfRange`, and the caller aggregates
   * the input again with `wideDays` (see `runAnalysis`). Default false. An input read on
   * the calling thread (`sizeBytes` up to `SMALL_INPUT_BYTES`) always has 32-bit days.
   */
  wideDays?: boolean;
  /**
   * Whether the columns that are not metrics are read as dimensions (`Aggregate.dimensions`);
   * default true. Without, they are dropped as soon as they show text.
   */
  dimensions?: boolean;
  /**
   * The metric whose per-value figures the dimensions carry: the settings' key metric; default
   * the first metric column that is not a covariate.
   */
  keyMetric?: string;
  /** Whether to answer `Aggregate.userSummary` (the comparison with the next delivery); default false. */
  userSummary?: boolean;
}

/**
 * A dimension column: its distinct values, and for one with at most `DIMENSION_VALUE_LIMIT` of
 * them, per value (in order of first appearance) the users per variant whose first row holds it
 * and the key metric's per-user statistics over them (as in `stats`).
 */
export interface DimensionAggregate {
  name: string;
  /** Distinct values over all rows (an empty cell is one), counted up to 10 000. */
  distinctValues: number;
  /** The metric of `values[].stats`, or null when there is none. */
  metric: string | null;
  /** Users in one variant whose rows hold more than one value of the column. */
  inconsistentUsers: number;
  /** Null when the column has more than `DIMENSION_VALUE_LIMIT` values. */
  values: {
    value: string;
    users: Record<string, number>;
    stats: Record<string, MetricVariantStats>;
  }[] | null;
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
  /**
   * Every column besides the three required ones, in header order: a metric of its detected kind,
   * or a dimension (the engine always answers it; aggregates made otherwise may leave it out).
   */
  columns?: { name: string; kind: "conversion" | "numeric" | "dimension" }[];
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
   * users using their rows up to that date. `rows`: the date's own rows (not cumulative; users
   * seen in two variants included).
   */
  daily: { date: string; rows?: number; variants: Record<string, DailyVariantPoint> }[];
  /**
   * Every column besides the three required ones that is not a metric, in header order (the
   * engine always answers it and `rows`; aggregates made otherwise may leave them out).
   */
  dimensions?: DimensionAggregate[];
  /** With the `userSummary` option: every user's id hash and variant, sorted; else null. */
  userSummary?: UserHashes | null;
}
