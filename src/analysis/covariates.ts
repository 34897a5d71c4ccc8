/**
 * Which column is the CUPED covariate of which metric (docs/api.md, "Comparisons with the control" → CUPED): a metric
 * column `<metric>_pre` is the covariate of `<metric>`, unless the settings' `covariates` name
 * another column for it. A covariate is not a metric of its own (so it has no covariate either).
 * The aggregation and the report both ask this, so that they agree.
 */

/** The suffix that makes a column the covariate of the column named without it. */
export const COVARIATE_SUFFIX = "_pre";

/**
 * Metric → covariate column among `columns` (the dataset's metric columns, in header order).
 * `explicit` (the settings' `covariates`) wins for the metrics it names; entries naming a column
 * the data does not have are left out here (the settings check refuses them).
 */
export function covariatePairs(
  columns: readonly string[],
  explicit: Readonly<Record<string, string>> = {},
): Map<string, string> {
  const known = new Set(columns);
  const pairs = new Map<string, string>();
  for (const metric of columns) {
    const column = Object.hasOwn(explicit, metric)
      ? explicit[metric]
      : `${metric}${COVARIATE_SUFFIX}`;
    if (column !== metric && known.has(column)) pairs.set(metric, column);
  }
  const covariates = new Set(pairs.values());
  for (const metric of [...pairs.keys()]) if (covariates.has(metric)) pairs.delete(metric);
  return pairs;
}
