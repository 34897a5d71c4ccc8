/**
 * Turns what the `RowReader` learned and the per-user state of a `UserTally` into the `Aggregate`:
 * one walk over the user records (users per variant, per-metric stats, and first days counted per
 * day and variant), one over each numeric metric's value log (daily sums, users seen in two
 * variants skipped), then running totals over the sorted days.
 */
import type { Aggregate, DailyVariantPoint, MetricVariantStats } from "./aggregate_types.ts";
import { DAY_LIMIT, formatDay } from "./_csv_cells.ts";
import type { MetricKind, ReaderFindings } from "./_row_reader.ts";
import { EXCLUDED, type UserTally, VARIANT_WORD } from "./_user_tally.ts";
import type { ValueLog } from "./_value_log.ts";

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

export function summarize(
  reader: ReaderFindings,
  tally: UserTally,
  kinds: Readonly<Record<string, MetricKind>>,
): Aggregate {
  const variantCount = reader.variantNames.length;
  const order = reader.variantNames.map((_, v) => v).sort((a, b) =>
    reader.variantNames[a] < reader.variantNames[b] ? -1 : 1
  );
  const variants = order.map((v) => reader.variantNames[v]);
  const position = new Int32Array(variantCount);
  order.forEach((v, p) => position[v] = p);

  const days = reader.days.slice().sort((a, b) => a - b);
  const dayCount = days.length;
  const firstDay = days[0] ?? 0;
  const dayRank = new Int32Array(dayCount === 0 ? 0 : days[dayCount - 1] - firstDay + 1);
  days.forEach((day, r) => dayRank[day - firstDay] = r);
  /** Row of a stored (`DAY_LIMIT - day`) first day in the per-(day, variant) tables. */
  const slot = (stored: number) => dayRank[DAY_LIMIT - stored - firstDay] * variantCount;

  const cells = dayCount * variantCount;
  const metrics: MetricTotals[] = [];
  reader.metricNames.forEach((name, k) => {
    if (reader.candidate[k] === 0 || reader.hasValue[k] === 0) return;
    const detectedKind = reader.binary[k] === 1 ? "conversion" : "numeric";
    const setting = Object.hasOwn(kinds, name) ? kinds[name] : undefined;
    const kind = setting === "conversion" || setting === "numeric" ? setting : detectedKind;
    metrics.push({
      name,
      k,
      kind,
      detectedKind,
      users: new Float64Array(variantCount),
      sum: new Float64Array(variantCount),
      squares: new Float64Array(variantCount),
      dailyUsers: new Float64Array(cells),
      dailySum: new Float64Array(cells),
    });
  });

  const users = tally.users;
  const i32 = users.i32;
  const f64 = users.f64;
  const userCounts = new Float64Array(variantCount);
  const cumulative = new Float64Array(cells);
  for (let record = 0; record < users.top; record = users.next(record)) {
    const w = 2 * record;
    const variant = i32[w + VARIANT_WORD];
    if (variant === EXCLUDED) continue;
    const p = position[variant];
    userCounts[p]++;
    cumulative[slot(i32[w + tally.firstDayWord]) + p]++;
    for (const metric of metrics) {
      const k = metric.k;
      const firstValue = i32[w + tally.firstValueWord[k]];
      if (firstValue === 0) continue;
      const firstOne = i32[w + tally.firstOneWord[k]];
      const binary = reader.binary[k] === 1;
      const value = metric.kind === "numeric"
        ? f64[(w + tally.sumWord[k]) >> 1]
        : binary
        ? (firstOne === 0 ? 0 : 1)
        : f64[(w + tally.maxWord[k]) >> 1];
      metric.users[p]++;
      metric.sum[p] += value;
      metric.squares[p] += value * value;
      metric.dailyUsers[slot(firstValue) + p]++;
      if (metric.kind === "conversion" && binary && firstOne !== 0) {
        metric.dailySum[slot(firstOne) + p]++;
      }
    }
  }

  for (const metric of metrics) {
    const log = tally.logs[metric.k]!;
    if (metric.kind === "numeric") {
      addLoggedValues(log, i32, position, dayRank, firstDay, variantCount, metric.dailySum);
    } else if (reader.binary[metric.k] === 0) {
      const zeroWord = tally.firstZeroWord[metric.k];
      addRunningMaxima(
        log,
        i32,
        zeroWord,
        position,
        dayRank,
        firstDay,
        variantCount,
        metric.dailySum,
      );
    }
    for (const table of [metric.dailyUsers, metric.dailySum]) runningTotals(table, variantCount);
  }
  runningTotals(cumulative, variantCount);

  const byVariant = <T>(value: (p: number) => T): Record<string, T> =>
    Object.fromEntries(variants.map((name, p) => [name, value(p)]));
  const byMetric = <T>(value: (metric: MetricTotals) => T): Record<string, T> =>
    Object.fromEntries(metrics.map((metric) => [metric.name, value(metric)]));
  return {
    rows: reader.rows,
    variants,
    users: byVariant((p) => userCounts[p]),
    excludedUsers: tally.excluded,
    metrics: metrics.map(({ name, kind, detectedKind }) => ({ name, kind, detectedKind })),
    stats: byMetric((metric) =>
      byVariant((p): MetricVariantStats => ({
        users: metric.users[p],
        sum: metric.sum[p],
        sumSquares: metric.squares[p],
      }))
    ),
    daily: days.map((day, r) => ({
      date: formatDay(day),
      variants: byVariant((p): DailyVariantPoint => {
        const i = r * variantCount + p;
        return {
          cumulativeUsers: cumulative[i],
          metricUsers: byMetric((metric) => metric.dailyUsers[i]),
          metricSum: byMetric((metric) => metric.dailySum[i]),
        };
      }),
    })),
  };
}

/** Adds each logged value of a user in one variant to its (day, variant) cell. */
function addLoggedValues(
  log: ValueLog,
  i32: Int32Array,
  position: Int32Array,
  dayRank: Int32Array,
  firstDay: number,
  variantCount: number,
  table: Float64Array,
): void {
  for (let b = 0; b < log.keys.length; b++) {
    const keys = log.keys[b];
    const values = log.values[b];
    const size = log.blockSize(b);
    for (let i = 0; i < size; i++) {
      const variant = i32[2 * keys[2 * i] + VARIANT_WORD];
      if (variant === EXCLUDED) continue;
      table[dayRank[keys[2 * i + 1] - firstDay] * variantCount + position[variant]] += values[i];
    }
  }
}

/**
 * For a column read as conversion whose values are not all 0/1: a user's value up to a day is the
 * maximum of their values up to it, so each rise of the running maximum is added on its day. The
 * rises come from the logged non-zero values, sorted by user and day, and the user's first 0.
 */
function addRunningMaxima(
  log: ValueLog,
  i32: Int32Array,
  zeroWord: number,
  position: Int32Array,
  dayRank: Int32Array,
  firstDay: number,
  variantCount: number,
  table: Float64Array,
): void {
  const records: number[] = [];
  const days: number[] = [];
  const values: number[] = [];
  for (let b = 0; b < log.keys.length; b++) {
    for (let i = 0; i < log.blockSize(b); i++) {
      const record = log.keys[b][2 * i];
      if (i32[2 * record + VARIANT_WORD] === EXCLUDED) continue;
      records.push(record);
      days.push(log.keys[b][2 * i + 1]);
      values.push(log.values[b][i]);
    }
  }
  const order = records.map((_, i) => i).sort((a, b) =>
    records[a] - records[b] || days[a] - days[b]
  );
  let i = 0;
  while (i < order.length) {
    const record = records[order[i]];
    const p = position[i32[2 * record + VARIANT_WORD]];
    const zero = i32[2 * record + zeroWord];
    let zeroDay = zero === 0 ? Infinity : DAY_LIMIT - zero;
    let max = -Infinity;
    const rise = (day: number, value: number) => {
      if (value <= max) return;
      table[dayRank[day - firstDay] * variantCount + p] += max === -Infinity ? value : value - max;
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

/** Turns per-(day, variant) counts into running totals over days. */
function runningTotals(table: Float64Array, variantCount: number): void {
  for (let i = variantCount; i < table.length; i++) table[i] += table[i - variantCount];
}
