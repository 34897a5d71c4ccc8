/**
 * The summary's extra walks for the metrics the settings adjust, done only for those (a file
 * analysed without `winsorize` or a covariate never comes here):
 *
 * - capping: every per-user value of the metric goes into one array whose pooled quantile is the
 *   cap (`collectUserValues`); the daily sums then add each user's running total capped
 *   (`addCappedLoggedValues`);
 * - both: a walk over the user records sums, per variant, y = the user's (capped) value and, for a
 *   metric with a covariate, x = the (capped) sum of the user's covariate cells, x² and xy
 *   (`addAdjustedMoments`).
 *
 * For a capped metric the walk reads each user's sum for the last time and sets it to 0, so that
 * the daily pass can keep the user's running total there instead of in a map of its own.
 */
import type { DayCells } from "./_day_cells.ts";
import {
  dayView,
  EXCLUDED,
  type RecordLayout,
  type TallyState,
  VARIANT_WORD,
} from "./_user_tally.ts";
import { nextRecord } from "./_user_table.ts";
import { blockSize, type LogEntries, logValue } from "./_value_log.ts";

/** Where a metric's per-user value is in a user record, and how it is read. */
export interface ValueSource {
  /** Day field (see `RecordLayout`) whose non-zero marks a user with a value. */
  firstValueAt: number;
  /** 1: a 0/1 conversion, read as "has a first day with a 1" from `firstOneAt`. */
  ones: number;
  firstOneAt: number;
  /** Otherwise the double at this (even) word: the sum, or the maximum. */
  valueWord: number;
}

/** The source of metric column k's value, as the summary reads it. */
export function valueSource(
  layout: RecordLayout,
  k: number,
  kind: "conversion" | "numeric",
  binary: boolean,
): ValueSource {
  return {
    firstValueAt: layout.firstValueAt[k],
    ones: kind === "conversion" && binary ? 1 : 0,
    firstOneAt: layout.firstOneAt[k],
    valueWord: kind === "numeric" ? layout.sumWord[k] : layout.maxWord[k],
  };
}

/** Per variant sums of y, y², and of the covariate x, x², xy, over the users with a value. */
export interface MomentTotals {
  users: Float64Array;
  sumY: Float64Array;
  sumYSquares: Float64Array;
  sumX: Float64Array;
  sumXSquares: Float64Array;
  sumXY: Float64Array;
}

export function newMomentTotals(variants: number): MomentTotals {
  return {
    users: new Float64Array(variants),
    sumY: new Float64Array(variants),
    sumYSquares: new Float64Array(variants),
    sumX: new Float64Array(variants),
    sumXSquares: new Float64Array(variants),
    sumXY: new Float64Array(variants),
  };
}

/**
 * Writes the per-user values of `source` in `tally` (users in one variant only) into `out` from
 * `at`, and answers where the next one goes.
 */
export function collectUserValues(
  tally: TallyState,
  layout: RecordLayout,
  source: ValueSource,
  out: Float64Array,
  at: number,
): number {
  const i32 = new Int32Array(tally.arena);
  const f64 = new Float64Array(tally.arena);
  const days = dayView(layout, tally.arena);
  const { words, dayScale } = layout;
  for (let record = 0; record < tally.top; record = nextRecord(i32, words, record)) {
    const w = 2 * record;
    const d = dayScale * record;
    if (i32[w + VARIANT_WORD] === EXCLUDED || days[d + source.firstValueAt] === 0) continue;
    out[at++] = source.ones === 1
      ? (days[d + source.firstOneAt] === 0 ? 0 : 1)
      : f64[(w + source.valueWord) >> 1];
  }
  return at;
}

/**
 * Adds, per variant (`position` maps variant indexes to columns), the moments of the users of
 * `tally` with a value of `source`: y capped at `cap`, and x = the sum word `covariateWord` (−1:
 * no covariate) capped the same. With `release`, sets each y read to 0 (for
 * `addCappedLoggedValues`).
 */
export function addAdjustedMoments(
  tally: TallyState,
  layout: RecordLayout,
  position: Int32Array,
  source: ValueSource,
  covariateWord: number,
  cap: number,
  totals: MomentTotals,
  release: boolean,
): void {
  const i32 = new Int32Array(tally.arena);
  const f64 = new Float64Array(tally.arena);
  const days = dayView(layout, tally.arena);
  const { words, dayScale } = layout;
  for (let record = 0; record < tally.top; record = nextRecord(i32, words, record)) {
    const w = 2 * record;
    const d = dayScale * record;
    const variant = i32[w + VARIANT_WORD];
    if (variant === EXCLUDED || days[d + source.firstValueAt] === 0) continue;
    let y = source.ones === 1
      ? (days[d + source.firstOneAt] === 0 ? 0 : 1)
      : f64[(w + source.valueWord) >> 1];
    if (release) f64[(w + source.valueWord) >> 1] = 0;
    if (y > cap) y = cap;
    const p = position[variant];
    totals.users[p]++;
    totals.sumY[p] += y;
    totals.sumYSquares[p] += y * y;
    if (covariateWord < 0) continue;
    let x = f64[(w + covariateWord) >> 1];
    if (x > cap) x = cap;
    totals.sumX[p] += x;
    totals.sumXSquares[p] += x * x;
    totals.sumXY[p] += x * y;
  }
}

/**
 * Adds each user's logged values of a capped numeric metric to the (day, variant) cells as the
 * growth of min(running total, cap): day by day, so that a user's value up to each date is capped
 * as the final one is. Within a day the order does not matter (the growths telescope). The
 * running totals are kept in the metric's sum word (`sumWord`) of each user record, which
 * `addAdjustedMoments` released (set to 0).
 */
export function addCappedLoggedValues(
  log: LogEntries,
  arena: ArrayBuffer,
  sumWord: number,
  cells: DayCells,
  table: Float64Array,
  cap: number,
): void {
  const i32 = new Int32Array(arena);
  const f64 = new Float64Array(arena);
  // Entries in day order by a counting sort on the day's rank.
  const days = cells.days.length;
  const start = new Int32Array(days + 1);
  for (let b = 0; b < log.keys.length; b++) {
    const keys = log.keys[b];
    for (let i = 0; i < blockSize(log, b); i++) start[cells.rankOf(keys[2 * i + 1]) + 1]++;
  }
  for (let r = 0; r < days; r++) start[r + 1] += start[r];
  const records = new Int32Array(start[days]);
  const values = new Float64Array(start[days]);
  const dayOf = new Int32Array(start[days]);
  for (let b = 0; b < log.keys.length; b++) {
    const keys = log.keys[b];
    for (let i = 0; i < blockSize(log, b); i++) {
      const at = start[cells.rankOf(keys[2 * i + 1])]++;
      records[at] = keys[2 * i];
      dayOf[at] = keys[2 * i + 1];
      values[at] = logValue(log, b, i);
    }
  }
  for (let at = 0; at < records.length; at++) {
    const record = records[at];
    const variant = i32[2 * record + VARIANT_WORD];
    if (variant === EXCLUDED) continue;
    const running = (2 * record + sumWord) >> 1;
    const before = f64[running];
    const after = before + values[at];
    f64[running] = after;
    const growth = Math.min(after, cap) - Math.min(before, cap);
    if (growth !== 0) table[cells.of(dayOf[at], variant)] += growth;
  }
}
