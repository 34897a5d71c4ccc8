/**
 * The summary's walk for dimension health: for every dimension column (a column besides the three
 * required ones that is not a metric) with at most `DIMENSION_VALUE_LIMIT` distinct values, per
 * value and variant the users whose first row holds that value, and the key metric's per-user
 * statistics over those of them with a value (capped as the metric is). Users seen in two
 * variants are left out; users whose rows hold more than one value are counted. One walk over
 * the user records per tally, for all dimensions at once.
 */
import type { DimensionAggregate, MetricVariantStats } from "./aggregate_types.ts";
import type { ValueSource } from "./_adjustments.ts";
import type { ReaderFindings } from "./_row_reader.ts";
import {
  dayView,
  DIM_INCONSISTENT,
  DIM_VALUE_MASK,
  EXCLUDED,
  type RecordLayout,
  type TallyState,
  VARIANT_WORD,
} from "./_user_tally.ts";
import { nextRecord } from "./_user_table.ts";
import { DISTINCT_COUNT_LIMIT } from "./_value_dictionary.ts";

/** One dimension column being summed: per (value, variant) cell, value-major. */
export interface DimensionTotals {
  name: string;
  /** Distinct values counted (at most `DISTINCT_COUNT_LIMIT`). */
  distinct: number;
  /** The values, or null when there are too many to report. */
  values: string[] | null;
  /** The word and bit shift of the column's dimension byte in the records. */
  word: number;
  shift: number;
  users: Float64Array;
  metricUsers: Float64Array;
  metricSum: Float64Array;
  metricSquares: Float64Array;
  inconsistent: number;
}

/** The dimension columns of the reader's findings, with empty totals for `variants` variants. */
export function dimensionTotals(
  reader: ReaderFindings,
  layout: RecordLayout,
  variants: number,
): DimensionTotals[] {
  if (reader.dictionaries.length === 0) return [];
  return reader.metricNames.flatMap((name, k) => {
    if (reader.candidate[k] === 1 && reader.hasValue[k] === 1) return []; // a metric
    const dictionary = reader.dictionaries[k];
    const values = dictionary.many ? null : dictionary.values();
    const cells = values === null ? 0 : values.length * variants;
    return [{
      name,
      distinct: Math.min(dictionary.size, DISTINCT_COUNT_LIMIT),
      values,
      word: layout.dimWord[k],
      shift: layout.dimShift[k],
      users: new Float64Array(cells),
      metricUsers: new Float64Array(cells),
      metricSum: new Float64Array(cells),
      metricSquares: new Float64Array(cells),
      inconsistent: 0,
    }];
  });
}

/**
 * Adds the users of `tally` to the totals of the dimensions that report values: `position` maps
 * variant indexes to columns; `source` is the key metric (null: none), its values capped at `cap`.
 */
export function addDimensionUsers(
  tally: TallyState,
  layout: RecordLayout,
  position: Int32Array,
  totals: DimensionTotals[],
  source: ValueSource | null,
  cap: number,
): void {
  const walked = totals.filter((t) => t.values !== null);
  if (walked.length === 0) return;
  const variants = position.length;
  const i32 = new Int32Array(tally.arena);
  const f64 = new Float64Array(tally.arena);
  const days = dayView(layout, tally.arena);
  const { words, dayScale } = layout;
  for (let record = 0; record < tally.top; record = nextRecord(i32, words, record)) {
    const w = 2 * record;
    const d = dayScale * record;
    const v = i32[w + VARIANT_WORD];
    if (v === EXCLUDED) continue;
    const p = position[v];
    let y = NaN;
    if (source !== null && days[d + source.firstValueAt] !== 0) {
      y = source.ones === 1
        ? (days[d + source.firstOneAt] === 0 ? 0 : 1)
        : f64[(w + source.valueWord) >> 1];
      if (y > cap) y = cap;
    }
    for (let d = 0; d < walked.length; d++) {
      const t = walked[d];
      const byte = i32[w + t.word] >>> t.shift;
      const value = (byte & DIM_VALUE_MASK) - 1;
      if (value < 0) continue;
      if ((byte & DIM_INCONSISTENT) !== 0) t.inconsistent++;
      const cell = value * variants + p;
      t.users[cell]++;
      if (y === y) {
        t.metricUsers[cell]++;
        t.metricSum[cell] += y;
        t.metricSquares[cell] += y * y;
      }
    }
  }
}

/** The totals as the aggregate carries them, variants by name in `variants` order. */
export function dimensionAggregates(
  totals: DimensionTotals[],
  variants: string[],
  metric: string | null,
): DimensionAggregate[] {
  return totals.map((t) => ({
    name: t.name,
    distinctValues: t.distinct,
    metric,
    inconsistentUsers: t.inconsistent,
    values: t.values === null ? null : t.values.map((value, i) => ({
      value,
      users: Object.fromEntries(
        variants.map((name, p) => [name, t.users[i * variants.length + p]]),
      ),
      stats: Object.fromEntries(variants.map((name, p): [string, MetricVariantStats] => {
        const cell = i * variants.length + p;
        return [name, {
          users: t.metricUsers[cell],
          sum: t.metricSum[cell],
          sumSquares: t.metricSquares[cell],
        }];
      })),
    })),
  }));
}
