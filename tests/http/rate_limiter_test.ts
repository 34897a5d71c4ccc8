/**
 * The per-key limit holds over any 60 seconds, at a window's edge too, and `Retry-After` is the
 * wait until the next request is accepted. Times are given, not read from the clock.
 */
import assert from "node:assert/strict";
import { ApiError } from "../../src/http/errors.ts";
import { RateLimiter } from "../../src/http/rate_limiter.ts";

/** Accepted (null) or the `Retry-After` of the 429, in seconds. */
function attempt(limiter: RateLimiter, key: string, at: number): number | null {
  try {
    limiter.check(key, at);
    return null;
  } catch (error) {
    assert.ok(error instanceof ApiError && error.code === "rate_limited", String(error));
    return Number(error.headers["retry-after"]);
  }
}

Deno.test("RateLimiter allows at most the limit in any 60 s, across a minute's edge", () => {
  const limiter = new RateLimiter(3);
  const s = (seconds: number) => 1_800_000_000_000 + seconds * 1000; // a whole minute at 0
  // Three just before a minute ends, then tries in the next minute.
  assert.deepEqual([59, 59.5, 59.9].map((t) => attempt(limiter, "k", s(t))), [null, null, null]);
  assert.equal(attempt(limiter, "k", s(61)), 58); // the oldest (59) leaves at 119
  assert.equal(attempt(limiter, "k", s(80)), 39);
  assert.equal(attempt(limiter, "k", s(118.5)), 1);
  assert.equal(attempt(limiter, "k", s(119)), null); // exactly when Retry-After said
  assert.equal(attempt(limiter, "k", s(119.2)), 1); // 59.5 leaves at 119.5
  assert.equal(attempt(limiter, "k", s(119.5)), null);
  // Another key has a limit of its own.
  assert.deepEqual([0, 1, 2, 3].map((t) => attempt(limiter, "other", s(t))), [
    null,
    null,
    null,
    57,
  ]);
});

Deno.test("RateLimiter counts refused requests against nothing and keeps large limits exact", () => {
  const limiter = new RateLimiter(1000);
  const t0 = 1_800_000_000_000;
  // 1,000 over 50 s (the ring grows from 8 to the limit on the way), then refusals for 10 s.
  for (let i = 0; i < 1000; i++) assert.equal(attempt(limiter, "k", t0 + i * 50), null, `#${i}`);
  for (let i = 0; i < 10; i++) assert.notEqual(attempt(limiter, "k", t0 + 50_000 + i * 1000), null);
  // From 60 s on, one request leaves the minute every 50 ms: as many are accepted again.
  assert.equal(attempt(limiter, "k", t0 + 60_000), null);
  assert.equal(attempt(limiter, "k", t0 + 60_010), 1);
  assert.equal(attempt(limiter, "k", t0 + 60_050), null);
});
