/**
 * How fast an experiment gathers users, and how long until it reaches its target (docs/api.md,
 * "Comparisons with the control" → days left): the rate is the mean number of new users per date over the last
 * `ACCRUAL_WINDOW` dates of the daily series that are not provisional (all of them if fewer);
 * the days left are ⌈(target − users) / rate⌉, 0 once the target is reached.
 */

/** Dates the rate is averaged over. */
export const ACCRUAL_WINDOW = 7;

/** One date of a cumulative series of users. */
export interface AccrualPoint {
  /** Users seen up to and including this date. */
  cumulativeUsers: number;
  /** A date judged incomplete: its users count, but it is not part of the rate. */
  provisional?: boolean;
}

/**
 * New users per date over the last `window` complete dates (each date's new users being its
 * growth over the date before it in the series), or null when there is no complete date.
 */
export function usersPerDay(
  points: readonly AccrualPoint[],
  window: number = ACCRUAL_WINDOW,
): number | null {
  const added: number[] = [];
  points.forEach((point, i) => {
    if (point.provisional === true) return;
    added.push(point.cumulativeUsers - (i > 0 ? points[i - 1].cumulativeUsers : 0));
  });
  const recent = added.slice(-window);
  if (recent.length === 0) return null;
  return recent.reduce((sum, x) => sum + x, 0) / recent.length;
}

/**
 * Days until `users` reach `target` at `rate` users a day: 0 once reached, null without a target
 * or without a positive rate.
 */
export function daysLeft(target: number | null, users: number, rate: number | null): number | null {
  if (target === null) return null;
  if (users >= target) return 0;
  if (rate === null || !(rate > 0)) return null;
  return Math.ceil((target - users) / rate);
}

/** Dates before the newest one its new users are compared with. */
export const PROVISIONAL_WINDOW = 7;
/** Fewer earlier dates than this: the newest date is not judged. */
export const PROVISIONAL_MIN_DATES = 3;

/**
 * Whether the newest date of a cumulative series looks incomplete (docs/api.md, "Daily series"):
 * in every variant whose new users over the previous `PROVISIONAL_WINDOW` dates (at least
 * `PROVISIONAL_MIN_DATES` of them) have a median above 0, and in at least one, its new users are
 * under half that median. `cumulative[v][d]` is variant v's users up to date d.
 */
export function newestLooksIncomplete(cumulative: readonly (readonly number[])[]): boolean {
  let judged = 0;
  for (const series of cumulative) {
    const last = series.length - 1;
    if (last < PROVISIONAL_MIN_DATES) return false;
    const added = (d: number) => series[d] - (d > 0 ? series[d - 1] : 0);
    const previous: number[] = [];
    for (let d = Math.max(0, last - PROVISIONAL_WINDOW); d < last; d++) previous.push(added(d));
    previous.sort((a, b) => a - b);
    const middle = previous.length >> 1;
    const median = previous.length % 2 === 1
      ? previous[middle]
      : (previous[middle - 1] + previous[middle]) / 2;
    if (!(median > 0)) continue;
    if (added(last) >= median / 2) return false;
    judged++;
  }
  return judged > 0;
}
