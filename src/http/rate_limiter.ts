import { ApiError } from "./errors.ts";

const WINDOW_MS = 60_000;
/** Keys followed at once; past it, keys idle for a whole window are forgotten. */
const MAX_KEYS = 100_000;

/** The times of a key's accepted requests within the last window, oldest first, in a ring. */
interface Log {
  times: Float64Array;
  head: number;
  size: number;
}

/**
 * Per-key request limit: at most `perMinute` accepted requests in any 60 seconds. Each key keeps
 * the times of its accepted requests of the last minute (a ring growing up to the limit), so
 * the limit holds exactly, at a window's edge too, and `Retry-After` is the wait until the oldest
 * of them leaves the minute, when the next request is accepted. Per instance: several instances
 * each allow the limit.
 */
export class RateLimiter {
  #limit: number;
  #logs = new Map<string, Log>();

  constructor(perMinute: number) {
    if (!Number.isInteger(perMinute) || perMinute < 1) {
      throw new RangeError("RateLimiter needs a positive whole number of requests per minute");
    }
    this.#limit = perMinute;
  }

  /** Counts one request for `key`; throws 429 with `Retry-After` when over the limit. */
  check(key: string, now = Date.now()): void {
    let log = this.#logs.get(key);
    if (log === undefined) {
      if (this.#logs.size >= MAX_KEYS) this.#forgetIdle(now);
      log = { times: new Float64Array(Math.min(this.#limit, 8)), head: 0, size: 0 };
      this.#logs.set(key, log);
    }
    const capacity = log.times.length;
    while (log.size > 0 && log.times[log.head] <= now - WINDOW_MS) {
      log.head = (log.head + 1) % capacity;
      log.size--;
    }
    if (log.size >= this.#limit) {
      const retry = Math.max(1, Math.ceil((log.times[log.head] + WINDOW_MS - now) / 1000));
      throw new ApiError(
        "rate_limited",
        `Too many requests: at most ${this.#limit} a minute per API key; retry in ${retry} s`,
        { "retry-after": String(retry) },
      );
    }
    if (log.size === capacity) {
      const times = new Float64Array(Math.min(this.#limit, 2 * capacity));
      for (let i = 0; i < log.size; i++) times[i] = log.times[(log.head + i) % capacity];
      log.times = times;
      log.head = 0;
    }
    log.times[(log.head + log.size) % log.times.length] = now;
    log.size++;
  }

  /** Drops the keys without a request in the last window (all of them if none is idle). */
  #forgetIdle(now: number): void {
    for (const [key, log] of this.#logs) {
      const newest = log.times[(log.head + log.size - 1) % log.times.length];
      if (log.size === 0 || newest <= now - WINDOW_MS) this.#logs.delete(key);
    }
    if (this.#logs.size >= MAX_KEYS) this.#logs.clear();
  }
}
