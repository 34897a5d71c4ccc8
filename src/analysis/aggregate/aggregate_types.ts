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
}

/** Per-user statistics of one metric in one variant, over the users with a value. */
export interface MetricVariantStats {
  /** Users with a value. */
  users: number;
  sum: number;
  /** Of per-user values. */
  sumSquares: number;
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
  /** Metric → variant → per-user stats (conversion: per-user value = max; numeric: sum). */
  stats: Record<string, Record<string, MetricVariantStats>>;
  /**
   * Sorted by date, cumulative: users first seen up to that date; metricSum/metricUsers over those
   * users using their rows up to that date.
   */
  daily: { date: string; variants: Record<string, DailyVariantPoint> }[];
}
