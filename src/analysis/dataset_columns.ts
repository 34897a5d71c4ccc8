/**
 * The dataset's columns as the analysis read them (`dataset.columns` of the analysis JSON,
 * docs/api.md): every column besides `user_id`, `variant` and `date`, in header order, each a
 * metric of the kind its values show (all 0/1: `conversion`, other numbers: `numeric`, whatever
 * the settings' `metric_kinds` make of it) or a `dimension` (a column with any other text, or
 * none at all). With the variants, they are what settings naming the data are checked against
 * (`checkSettingsAgainstData`), and what the UI offers to choose from.
 */
import type { Aggregate } from "./aggregate/aggregate_types.ts";

/** How the analysis read a column (see the module). */
export type ColumnKind = "conversion" | "numeric" | "dimension";

/** One entry of `dataset.columns`. */
export interface DatasetColumn {
  name: string;
  kind: ColumnKind;
}

/** What settings naming the data are checked against: the variants and the columns. */
export interface DatasetFacts {
  /** The variants, in sort order. */
  variants: readonly string[];
  columns: readonly DatasetColumn[];
}

/**
 * The columns of `aggregate`: as the aggregation listed them, else (an aggregate made otherwise)
 * its metrics, then its dimensions.
 */
export function datasetColumns(aggregate: Aggregate): DatasetColumn[] {
  if (aggregate.columns !== undefined) return aggregate.columns;
  return [
    ...aggregate.metrics.map((m): DatasetColumn => ({ name: m.name, kind: m.detectedKind })),
    ...(aggregate.dimensions ?? []).map((d): DatasetColumn => ({
      name: d.name,
      kind: "dimension",
    })),
  ];
}

/** The metric columns of `facts`: name and detected kind. */
export function metricColumns(
  facts: DatasetFacts,
): { name: string; kind: "conversion" | "numeric" }[] {
  return facts.columns.flatMap((c) =>
    c.kind === "dimension" ? [] : [{ name: c.name, kind: c.kind }]
  );
}
