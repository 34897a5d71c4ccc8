import { ApiError } from "./errors.ts";

/**
 * Per-key request limit over a sliding one-minute window approximated by two fixed windows.
 * Per instance: several instances each allow the limit.
 */
export class RateLimiter {
  #limit: number;
  #windows = new Map<string, { start: number; current: number; previous: number }>();

  constructor(perMinute: number) {
    if (!Number.isInteger(perMinute) || perMinute < 1) {
      throw new RangeError("RateLimiter needs a positive whole number of requests per minute");
    }
    this.#limit = perMinute;
  }

  /** Counts one request for `key`; throws 429 with `Retry-After` when over the limit. */
  check(key: string, now = Date.now()): void {
    const windowStart = Math.floor(now / 60_000) * 60_000;
    let w = this.#windows.get(key);
    if (!w || windowStart - w.start >= 120_000) {
      w = { start: windowStart, current: 0, previous: 0 };
      this.#windows.set(key, w);
    } else if (windowStart !== w.start) {
      w.previous = w.current;
      w.current = 0;
      w.start = windowStart;
    }
    const elapsed = (now - windowStart) / 60_000;
    const estimate = w.previous * (1 - elapsed) + w.current;
    if (estimate + 1 > this.#limit) {
      const retry = Math.max(1, Math.ceil((windowStart + 60_000 - now) / 1000));
      throw new ApiError(
        "rate_limited",
        `Too many requests: at most ${this.#limit} a minute per API key; retry in ${retry} s`,
        { "retry-after": String(retry) },
      );
    }
    w.current++;
    if (this.#windows.size > 100_000) this.#windows.clear();
  }
}
