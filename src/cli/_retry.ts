/**
 * When the upload client tries again: after a 500, 502, 503 or 504, a 429 (waiting what its
 * Retry-After asks), or a network error; never after another 4xx. Exponential backoff with
 * jitter: the n-th retry waits between half and all of min(maxMs, baseMs × 2^(n-1)).
 */
import type { HttpAnswer } from "./_send_file.ts";
import { NetworkError } from "./_send_file.ts";
import { describe, UploadFailed } from "./_answers.ts";

export interface RetryPolicy {
  /** Retries after the first attempt; default 4 (five attempts in all). */
  retries: number;
  /** Delay before the first retry, before jitter; default 1000 ms. */
  baseMs: number;
  /** Longest delay; default 16 × baseMs. */
  maxMs: number;
  /** Uniform in [0, 1); default Math.random. */
  random: () => number;
  /** Default: a timer. */
  sleep: (ms: number) => Promise<void>;
}

export function retryPolicy(overrides: Partial<RetryPolicy> = {}): RetryPolicy {
  const baseMs = overrides.baseMs ?? 1000;
  return {
    retries: overrides.retries ?? 4,
    baseMs,
    maxMs: overrides.maxMs ?? baseMs * 16,
    random: overrides.random ?? Math.random,
    sleep: overrides.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
  };
}

/** The wait before retry number `retry` (1 for the first). */
export function backoffMs(retry: number, policy: RetryPolicy): number {
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** (retry - 1));
  return Math.round(ceiling / 2 + policy.random() * ceiling / 2);
}

const RETRIED_STATUSES = new Set([429, 500, 502, 503, 504]);

export function isRetriedStatus(status: number): boolean {
  return RETRIED_STATUSES.has(status);
}

/** The wait a 429's `Retry-After` (seconds or an HTTP date) asks for, capped at 60 s. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  const ms = /^\d+$/.test(trimmed) ? Number(trimmed) * 1000 : Date.parse(trimmed) - now;
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(60_000, Math.max(0, ms));
}

/**
 * Calls `attempt` until it answers something not worth retrying; network errors and retried
 * statuses wait and try again while the policy allows.
 */
export async function withRetries(
  what: string,
  policy: RetryPolicy,
  log: (line: string) => void,
  attempt: () => Promise<HttpAnswer>,
): Promise<HttpAnswer> {
  for (let retry = 0;; retry++) {
    let answer: HttpAnswer | undefined;
    let reason: string;
    try {
      answer = await attempt();
      if (!isRetriedStatus(answer.status)) return answer;
      reason = describe(answer);
    } catch (error) {
      if (!(error instanceof NetworkError)) throw error;
      reason = `network error: ${error.message}`;
    }
    if (retry >= policy.retries) {
      if (answer) return answer;
      throw new UploadFailed(`${what} gave up after ${retry + 1} attempt(s): ${reason}`);
    }
    const asked = answer?.status === 429
      ? retryAfterMs(answer.headers.get("retry-after"))
      : undefined;
    const wait = asked ?? backoffMs(retry + 1, policy);
    log(
      `${what}: ${reason}; retrying in ${(wait / 1000).toFixed(1)} s (attempt ${retry + 2} of ${
        policy.retries + 1
      })`,
    );
    await policy.sleep(wait);
  }
}
