/**
 * When a webhook delivery is attempted: `ABN_WEBHOOK_RETRY_SCHEDULE` lists, for each attempt, the
 * seconds after the first try at which it falls due (default `0,5,300,1800,7200,18000,36000,36000`:
 * eight attempts over ten hours). A delivery whose attempts ran out is `failed`.
 *
 * @module
 */

/** The default schedule, seconds after the first try. */
export const DEFAULT_RETRY_SCHEDULE: readonly number[] = Object.freeze([
  0,
  5,
  300,
  1800,
  7200,
  18000,
  36000,
  36000,
]);
/** The most attempts a schedule may list. */
export const MAX_ATTEMPTS = 100;
/** The latest an attempt may fall due, in seconds after the first try (30 days). */
export const MAX_OFFSET_SECONDS = 2_592_000;

/**
 * Parses a schedule: comma-separated whole seconds, each at least the one before it (the default
 * ends with two equal entries: the last attempt follows the one before at once), at least one, at
 * most 100, none beyond 30 days. Throws a `SyntaxError` or `RangeError` saying what is wrong (the
 * configuration names the variable).
 */
export function parseRetrySchedule(text: string): number[] {
  const parts = text.split(",").map((part) => part.trim());
  if (parts.length === 1 && parts[0] === "") {
    throw new RangeError("expected at least one number of seconds");
  }
  const schedule: number[] = [];
  for (const [i, part] of parts.entries()) {
    if (!/^\d+$/.test(part)) {
      throw new SyntaxError(
        `entry ${i + 1} ${JSON.stringify(part)} is not a whole number of seconds`,
      );
    }
    const seconds = Number(part);
    if (seconds > MAX_OFFSET_SECONDS) {
      throw new RangeError(`entry ${i + 1} (${seconds}) is beyond ${MAX_OFFSET_SECONDS} (30 days)`);
    }
    if (i > 0 && seconds < schedule[i - 1]) {
      throw new RangeError(
        `entry ${i + 1} (${seconds}) is before entry ${i} (${
          schedule[i - 1]
        }): list seconds after the first try, in ascending order`,
      );
    }
    schedule.push(seconds);
  }
  if (schedule.length > MAX_ATTEMPTS) {
    throw new RangeError(`${schedule.length} attempts, more than ${MAX_ATTEMPTS}`);
  }
  return schedule;
}

/**
 * When the next attempt of a delivery falls due, after `attemptsMade` attempts of it (0: the first
 * try), or null when the schedule has no more: the delivery has `failed`. The schedule counts from
 * `firstTryAt` (with its first entry 0, the default, the first try is then). `retryAfter`, the
 * earliest time the endpoint asked to be tried again (`Retry-After` of a 429 or 503), moves the
 * attempt later, never earlier. A time in the past means now (a service that was stopped catches
 * up, one attempt at a time).
 */
export function nextAttempt(
  schedule: readonly number[],
  attemptsMade: number,
  firstTryAt: Date,
  retryAfter?: Date,
): Date | null {
  if (!Number.isSafeInteger(attemptsMade) || attemptsMade < 0) {
    throw new RangeError(`Cannot schedule a delivery after ${attemptsMade} attempts`);
  }
  if (attemptsMade >= schedule.length) return null;
  const due = firstTryAt.getTime() + schedule[attemptsMade] * 1000;
  return new Date(Math.max(due, retryAfter?.getTime() ?? -Infinity));
}
