/**
 * Turns what the `RowReader` learned and the user records of the `UserTally`s into the
 * `Aggregate`: one walk over each tally's records (users per variant, per-metric stats, and first
 * days counted per day and variant), one over each numeric metric's value logs (daily sums, users
 * seen in two variants skipped), then running totals over the sorted days. The tally holds
 * disjoint sets of users. Metrics the settings cap or give a covariate take the extra walks of
 * `_adjustments.ts`; the others cost nothing more. Dimension columns take one more walk
 * (`_dimensions.ts`), and the user summary for the next delivery's comparison one more
 * (`_user_hashes.ts`), when asked for.
 */
import type {
  Aggregate,
  CovariateMoments,
  DailyVariantPoint,
  MetricVariantStats,
} from "./aggregate_types.ts";
import { covariatePairs } from "../covariates.ts";
import { linearQuantile } from "../stats/quantile.ts";
import {
  addAdjustedMoments,
  addCappedLoggedValues,
  collectUserValues,
  type MomentTotals,
  newMomentTotals,
  valueSource,
} from "./_adjustments.ts";
import { formatDay } from "../../csv/calendar_date.ts";
import {
  addDimensionUsers,
  dimensionAggregates,
  type DimensionTotals,
  dimensionTotals,
} from "./_dimensions.ts";
import { userHashes } from "./_user_hashes.ts";
import type { MetricKind, ReaderFindings } from "./_row_reader.ts";
import {
  dayView,
  EXCLUDED,
  type RecordLayout,
  type TallyState,
  VARIANT_WORD,
} from "./_user_tally.ts";
import { nextRecord } from "./_user_table.ts";
import { DayCells } from "./_day_cells.ts";
import { blockSize, type LogEntries, logValue } from "./_value_log.ts";

/** Per metric: per variant stats, and per (day, variant) counts and sums before running totals. */
interface MetricTotals {
  name: string;
  k: number;
  kind: MetricKind;
  detectedKind: MetricKind;
  users: Float64Array;
  sum: Float64Array;
  squares: Float64Array;
  dailyUsers: Float64Array;
  dailySum: Float64Array;
}

/** What the summary does beyond the plain sums (see `AggregateOptions`). */
export interface SummaryOptions {
  covariates: Readonly<Record<string, string>>;
  winsorize: Readonly<Record<string, number>>;
  keyMetric: string | undefined;
  userSummary: boolean;
}

export function summaryOptions(
  options: {
    covariates?: Readonly<Record<string, string>>;
    winsorize?: Readonly<Record<string, number>>;
    keyMetric?: string;
    userSummary?: boolean;
  },
): SummaryOptions {
  return {
    covariates: options.covariates ?? {},
    winsorize: options.winsorize ?? {},
    keyMetric: options.keyMetric,
    userSummary: options.userSummary ?? false,
  };
}

/** A metric the settings adjust: its cap (Infinity: none) and its covariate (null: none). */
interface AdjustedMetric {
  metric: MetricTotals;
  percentile: number | null;
  cap: number;
  covariate: MetricTotals | null;
  totals: MomentTotals;
}

/** The variants in sort order, and each variant index's place among them. */
interface VariantOrder {
  variants: string[];
  position: Int32Array;
}

/** What the walks over the records and the logs add up (see `summarize`). */
interface Walked {
  userCounts: Float64Array;
  cumulative: Float64Array;
}

/**
 * The aggregate of the tally's records and logs, in steps: the variants' order and the metric
 * columns, the caps of the capped metrics, the walks over the records (users, stats, first days,
 * dimensions, adjusted moments) and over the value logs (daily sums), the user summary, then the
 * running totals and the answer.
 */
export function summarize(
  reader: ReaderFindings,
  layout: RecordLayout,
  tally: TallyState,
  kinds: Readonly<Record<string, MetricKind>>,
  options: SummaryOptions = summaryOptions({}),
): Aggregate {
  const order = variantOrder(reader.variantNames);
  const cells = new DayCells(reader.days, order.position);
  const metrics = metricTotals(reader, kinds, order.variants.length, cells.size);
  const adjusted = adjustedMetrics(metrics, options, order.variants.length);
  const capped = adjusted.filter((entry) => entry.percentile !== null);
  findCaps(tally, layout, capped);
  const keyMetric = keyMetricOf(metrics, options);
  const dimensions = dimensionTotals(reader, layout, order.variants.length);
  const walked = walkAll(
    reader,
    layout,
    tally,
    order,
    cells,
    metrics,
    adjusted,
    dimensions,
    keyMetric,
  );
  // The ids and variants only: the walks change neither.
  const users = options.userSummary ? userHashes(tally, layout, order.position) : null;
  for (const metric of metrics) {
    cells.accumulate(metric.dailyUsers);
    cells.accumulate(metric.dailySum);
  }
  cells.accumulate(walked.cumulative);
  for (const { metric, totals } of capped) {
    // The capped values replace the plain ones in every statistic.
    metric.sum.set(totals.sumY);
    metric.squares.set(totals.sumYSquares);
  }
  return {
    ...aggregateOf(reader, order.variants, cells, metrics, adjusted, walked, tally.excluded),
    dimensions: dimensionAggregates(dimensions, order.variants, keyMetric?.name ?? null),
    userSummary: users,
  };
}

/** The variants sorted (code-unit order), and where each variant index lands among them. */
function variantOrder(names: string[]): VariantOrder {
  const order = names.map((_, v) => v).sort((a, b) => names[a] < names[b] ? -1 : 1);
  const position = new Int32Array(names.length);
  order.forEach((v, p) => position[v] = p);
  return { variants: order.map((v) => names[v]), position };
}

/** The metric columns (numbers in every non-empty cell, and one at least), with empty totals. */
function metricTotals(
  reader: ReaderFindings,
  kinds: Readonly<Record<string, MetricKind>>,
  variants: number,
  cells: number,
): MetricTotals[] {
  return reader.metricNames.flatMap((name, k): MetricTotals[] => {
    if (reader.candidate[k] === 0 || reader.hasValue[k] === 0) return [];
    const detectedKind = reader.binary[k] === 1 ? "conversion" : "numeric";
    const setting = Object.hasOwn(kinds, name) ? kinds[name] : undefined;
    const kind = setting === "conversion" || setting === "numeric" ? setting : detectedKind;
    return [{
      name,
      k,
      kind,
      detectedKind,
      users: new Float64Array(variants),
      sum: new Float64Array(variants),
      squares: new Float64Array(variants),
      dailyUsers: new Float64Array(cells),
      dailySum: new Float64Array(cells),
    }];
  });
}

/** Each capped metric's cap: the pooled quantile of its per-user values. */
function findCaps(tally: TallyState, layout: RecordLayout, capped: AdjustedMetric[]): void {
  if (capped.length === 0) return;
  const values = new Float64Array(tally.users);
  for (const entry of capped) {
    const source = valueSource(layout, entry.metric.k, "numeric", false);
    const n = collectUserValues(tally, layout, source, values, 0);
    if (n > 0) entry.cap = linearQuantile(values.subarray(0, n), entry.percentile!);
  }
}

/** The key metric, as the report picks it: the setting, else the first metric not a covariate. */
function keyMetricOf(metrics: MetricTotals[], options: SummaryOptions): MetricTotals | undefined {
  const covariateNames = new Set(
    covariatePairs(metrics.map((m) => m.name), options.covariates).values(),
  );
  return options.keyMetric !== undefined
    ? metrics.find((m) => m.name === options.keyMetric && !covariateNames.has(m.name))
    : metrics.find((m) => !covariateNames.has(m.name));
}

/**
 * The walks over the records (users, stats and first days; dimensions; adjusted moments) and
 * over each metric's value log (the daily sums: capped, summed, or running maxima).
 */
function walkAll(
  reader: ReaderFindings,
  layout: RecordLayout,
  tally: TallyState,
  { variants, position }: VariantOrder,
  cells: DayCells,
  metrics: MetricTotals[],
  adjusted: AdjustedMetric[],
  dimensions: DimensionTotals[],
  keyMetric: MetricTotals | undefined,
): Walked {
  const sourceOf = (m: MetricTotals) => valueSource(layout, m.k, m.kind, reader.binary[m.k] === 1);
  const capOf = (m: MetricTotals) =>
    adjusted.find((e) => e.metric === m && e.percentile !== null)?.cap;
  const walked = {
    userCounts: new Float64Array(variants.length),
    cumulative: new Float64Array(cells.size),
  };
  walkRecords(tally, layout, reader.binary, metrics, cells, walked.userCounts, walked.cumulative);
  const keySource = keyMetric === undefined ? null : sourceOf(keyMetric);
  const keyCap = keyMetric === undefined ? Infinity : capOf(keyMetric) ?? Infinity;
  addDimensionUsers(tally, layout, position, dimensions, keySource, keyCap);
  for (const { metric, covariate, cap, totals, percentile } of adjusted) {
    const covariateWord = covariate === null ? -1 : layout.sumWord[covariate.k];
    const release = percentile !== null;
    addAdjustedMoments(
      tally,
      layout,
      position,
      sourceOf(metric),
      covariateWord,
      cap,
      totals,
      release,
    );
  }
  const i32 = new Int32Array(tally.arena);
  for (const metric of metrics) {
    const log = tally.logs[metric.k]!;
    const cap = capOf(metric); // numeric metrics only
    if (cap !== undefined) {
      addCappedLoggedValues(
        log,
        tally.arena,
        layout.sumWord[metric.k],
        cells,
        metric.dailySum,
        cap,
      );
    } else if (metric.kind === "numeric") {
      addLoggedValues(log, i32, cells, metric.dailySum);
    } else if (reader.binary[metric.k] === 0) {
      addRunningMaxima(log, i32, layout, tally.arena, metric.k, cells, metric.dailySum);
    }
  }
  return walked;
}

/** The aggregate's fields from the totals (the dimensions and the user summary apart). */
function aggregateOf(
  reader: ReaderFindings,
  variants: string[],
  cells: DayCells,
  metrics: MetricTotals[],
  adjusted: AdjustedMetric[],
  { userCounts, cumulative }: Walked,
  excluded: number,
): Omit<Aggregate, "dimensions" | "userSummary"> {
  const byVariant = <T>(value: (p: number) => T): Record<string, T> =>
    Object.fromEntries(variants.map((name, p) => [name, value(p)]));
  const byMetric = <T>(value: (metric: MetricTotals) => T): Record<string, T> =>
    Object.fromEntries(metrics.map((metric) => [metric.name, value(metric)]));
  return {
    rows: reader.rows,
    variants,
    users: byVariant((p) => userCounts[p]),
    excludedUsers: excluded,
    columns: reader.metricNames.map((name, k) => {
      const metric = metrics.find((m) => m.k === k);
      return { name, kind: metric === undefined ? "dimension" : metric.detectedKind };
    }),
    metrics: metrics.map(({ name, kind, detectedKind }) => ({ name, kind, detectedKind })),
    stats: byMetric((metric) =>
      byVariant((p): MetricVariantStats => ({
        users: metric.users[p],
        sum: metric.sum[p],
        sumSquares: metric.squares[p],
      }))
    ),
    covariates: Object.fromEntries(
      adjusted.flatMap(({ metric, covariate, totals }) =>
        covariate === null ? [] : [[metric.name, {
          column: covariate.name,
          moments: byVariant((p): CovariateMoments => ({
            sumX: totals.sumX[p],
            sumXSquares: totals.sumXSquares[p],
            sumXY: totals.sumXY[p],
          })),
        }]]
      ),
    ),
    winsorized: Object.fromEntries(
      adjusted.flatMap(({ metric, percentile, cap }) =>
        percentile === null || cap === Infinity ? [] : [[metric.name, { percentile, cap }]]
      ),
    ),
    daily: cells.days.map((day, r) => ({
      date: formatDay(day),
      rows: reader.dayRows[day - reader.dayBase],
      variants: byVariant((p): DailyVariantPoint => {
        const i = r * variants.length + p;
        return {
          cumulativeUsers: cumulative[i],
          metricUsers: byMetric((metric) => metric.dailyUsers[i]),
          metricSum: byMetric((metric) => metric.dailySum[i]),
        };
      }),
    })),
  };
}

/**
 * The metrics the options cap (numeric ones) or give a covariate (see `covariatePairs`); names the
 * data lacks, and conversion metrics to cap, are left out (the settings check refuses them).
 */
function adjustedMetrics(
  metrics: MetricTotals[],
  options: SummaryOptions,
  variants: number,
): AdjustedMetric[] {
  const pairs = covariatePairs(metrics.map((m) => m.name), options.covariates);
  const byName = new Map(metrics.map((m) => [m.name, m]));
  const covariates = new Set(pairs.values());
  return metrics.flatMap((metric) => {
    if (covariates.has(metric.name)) return [];
    const setting = Object.hasOwn(options.winsorize, metric.name)
      ? options.winsorize[metric.name]
      : undefined;
    const percentile = metric.kind === "numeric" && typeof setting === "number" ? setting : null;
    const column = pairs.get(metric.name);
    const covariate = column === undefined ? null : byName.get(column) ?? null;
    if (percentile === null && covariate === null) return [];
    return [{ metric, percentile, cap: Infinity, covariate, totals: newMomentTotals(variants) }];
  });
}

/**
 * Counts each user of `tally` (not seen in two variants) in its variant and on its first day, and
 * per metric adds its value to the variant's stats and counts it on its first day with a value
 * (for a 0/1 conversion metric, also in the sum on its first day with a 1). One loop over flat
 * arrays: it runs once, over a million records and more.
 */
function walkRecords(
  tally: TallyState,
  layout: RecordLayout,
  binary: Uint8Array,
  metrics: MetricTotals[],
  cells: DayCells,
  userCounts: Float64Array,
  cumulative: Float64Array,
): void {
  const count = metrics.length;
  const variants = cells.variantCount;
  const size = cells.size;
  // Per metric: where its first days and value are, and how the value is read.
  const firstValueAt = Int32Array.from(metrics, (m) => layout.firstValueAt[m.k]);
  const firstOneAt = Int32Array.from(metrics, (m) => layout.firstOneAt[m.k]);
  const ones = Uint8Array.from(
    metrics,
    (m) => m.kind === "conversion" && binary[m.k] === 1 ? 1 : 0,
  );
  const valueWord = Int32Array.from(
    metrics,
    (m) => m.kind === "numeric" ? layout.sumWord[m.k] : layout.maxWord[m.k],
  );
  const statUsers = new Float64Array(count * variants);
  const statSum = new Float64Array(count * variants);
  const statSquares = new Float64Array(count * variants);
  const dailyUsers = new Float64Array(count * size);
  const dailySum = new Float64Array(count * size);
  const position = cells.position;
  const { rank, base } = cells.storedRanks(layout.dayLimit);
  const { words, dayScale, firstDayAt } = layout;
  const i32 = new Int32Array(tally.arena);
  const f64 = new Float64Array(tally.arena);
  const days = dayView(layout, tally.arena);
  for (let record = 0; record < tally.top; record = nextRecord(i32, words, record)) {
    const w = 2 * record;
    const d = dayScale * record;
    const variant = i32[w + VARIANT_WORD];
    if (variant === EXCLUDED) continue;
    const p = position[variant];
    userCounts[p]++;
    cumulative[rank[base - days[d + firstDayAt]] * variants + p]++;
    for (let j = 0; j < count; j++) {
      const firstValue = days[d + firstValueAt[j]];
      if (firstValue === 0) continue;
      let value: number;
      if (ones[j] === 1) {
        const firstOne = days[d + firstOneAt[j]];
        value = firstOne === 0 ? 0 : 1;
        if (firstOne !== 0) dailySum[j * size + rank[base - firstOne] * variants + p]++;
      } else {
        value = f64[(w + valueWord[j]) >> 1];
      }
      const s = j * variants + p;
      statUsers[s]++;
      statSum[s] += value;
      statSquares[s] += value * value;
      dailyUsers[j * size + rank[base - firstValue] * variants + p]++;
    }
  }
  metrics.forEach((metric, j) => {
    for (let p = 0; p < variants; p++) {
      metric.users[p] += statUsers[j * variants + p];
      metric.sum[p] += statSum[j * variants + p];
      metric.squares[p] += statSquares[j * variants + p];
    }
    for (let i = 0; i < size; i++) {
      metric.dailyUsers[i] += dailyUsers[j * size + i];
      metric.dailySum[i] += dailySum[j * size + i];
    }
  });
}

/** Adds each logged value of a user in one variant to its (day, variant) cell. */
function addLoggedValues(
  log: LogEntries,
  i32: Int32Array,
  cells: DayCells,
  table: Float64Array,
): void {
  for (let b = 0; b < log.keys.length; b++) {
    const keys = log.keys[b];
    const values = log.values[b];
    const ones = values.length === 0; // a block of 1s (see `ValueLog`)
    const size = blockSize(log, b);
    for (let i = 0; i < size; i++) {
      const variant = i32[2 * keys[2 * i] + VARIANT_WORD];
      if (variant !== EXCLUDED) table[cells.of(keys[2 * i + 1], variant)] += ones ? 1 : values[i];
    }
  }
}

/**
 * For a column read as conversion whose values are not all 0/1: a user's value up to a day is the
 * maximum of their values up to it, so each rise of the running maximum is added on its day. The
 * rises come from the logged non-zero values, sorted by user and day, and the user's first 0
 * (column `k`'s first-zero day field).
 */
function addRunningMaxima(
  log: LogEntries,
  i32: Int32Array,
  layout: RecordLayout,
  arena: ArrayBuffer,
  k: number,
  cells: DayCells,
  table: Float64Array,
): void {
  const dayFields = dayView(layout, arena);
  const zeroAt = layout.firstZeroAt[k];
  const records: number[] = [];
  const days: number[] = [];
  const values: number[] = [];
  for (let b = 0; b < log.keys.length; b++) {
    for (let i = 0; i < blockSize(log, b); i++) {
      const record = log.keys[b][2 * i];
      if (i32[2 * record + VARIANT_WORD] === EXCLUDED) continue;
      records.push(record);
      days.push(log.keys[b][2 * i + 1]);
      values.push(logValue(log, b, i));
    }
  }
  const order = records.map((_, i) => i).sort((a, b) =>
    records[a] - records[b] || days[a] - days[b]
  );
  let i = 0;
  while (i < order.length) {
    const record = records[order[i]];
    const variant = i32[2 * record + VARIANT_WORD];
    const zero = dayFields[layout.dayScale * record + zeroAt];
    let zeroDay = zero === 0 ? Infinity : layout.dayLimit - zero;
    let max = -Infinity;
    const rise = (day: number, value: number) => {
      if (value <= max) return;
      table[cells.of(day, variant)] += max === -Infinity ? value : value - max;
      max = value;
    };
    for (; i < order.length && records[order[i]] === record; i++) {
      const day = days[order[i]];
      if (zeroDay <= day) {
        rise(zeroDay, 0);
        zeroDay = Infinity;
      }
      rise(day, values[order[i]]);
    }
    if (zeroDay !== Infinity) rise(zeroDay, 0);
  }
}
