/**
 * The aggregation options an analysis run takes from the experiment's settings and from the
 * previous delivery's per-user summary.
 */
import { datesFitNarrowDays } from "./aggregate/aggregate.ts";
import type { AggregateOptions } from "./aggregate/aggregate_types.ts";
import type { Settings } from "./settings.ts";
import { summaryDates, summaryUserCount } from "./history/delivery_summary.ts";

/** The aggregation options a run takes from the experiment's settings and last delivery. */
export type RunAggregation = Pick<
  AggregateOptions,
  "metricKinds" | "covariates" | "winsorize" | "keyMetric" | "expectedUsers" | "wideDays"
>;

/** What `analyseDelivery` aggregates with: the settings' figures, sized by the last delivery. */
export function runAggregation(settings: Settings, previousSummary?: Uint8Array): RunAggregation {
  return {
    metricKinds: settings.metric_kinds,
    covariates: settings.covariates,
    winsorize: settings.winsorize,
    keyMetric: settings.key_metric,
    // Deliveries of an experiment grow night by night: the last one's users size the tables.
    expectedUsers: previousSummary ? summaryUserCount(previousSummary) : undefined,
    // A date the last delivery held outside 16-bit days is likely there again: read with 32 bits
    // at once, rather than twice.
    wideDays: previousSummary ? !datesFitNarrowDays(summaryDates(previousSummary)) : undefined,
  };
}
