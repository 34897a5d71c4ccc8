/** Assertions for tests, on top of node:assert/strict (JSR's @std/assert is not reachable). */
import assert from "node:assert/strict";

export function assertEquals<T>(actual: T, expected: T, message?: string): void {
  assert.deepStrictEqual(actual, expected, message);
}

export function assert_(condition: unknown, message?: string): asserts condition {
  assert.ok(condition, message);
}
export { assert_ as assert };

export function assertMatch(text: string, pattern: RegExp, message?: string): void {
  assert.match(text, pattern, message);
}

export function assertThrows<E extends Error>(
  fn: () => unknown,
  type: abstract new (...args: never[]) => E,
  includes?: string,
): E {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof type, `expected ${type.name}, got ${String(error)}`);
    if (includes) assert.ok(error.message.includes(includes), error.message);
    return error;
  }
  throw new assert.AssertionError({ message: `expected ${type.name} to be thrown` });
}

export async function assertRejects<E extends Error>(
  fn: () => Promise<unknown>,
  type: abstract new (...args: never[]) => E,
  includes?: string,
): Promise<E> {
  try {
    await fn();
  } catch (error) {
    assert.ok(error instanceof type, `expected ${type.name}, got ${String(error)}`);
    if (includes) assert.ok(error.message.includes(includes), error.message);
    return error;
  }
  throw new assert.AssertionError({ message: `expected ${type.name} to be thrown` });
}

/** Reads a JSON error body and checks its shape; answers it. */
export async function assertApiError(
  response: Response,
  status: number,
  code: string,
): Promise<{ code: string; message: string; request_id: string }> {
  const text = await response.text();
  assert.equal(response.status, status, `status ${response.status}: ${text}`);
  assert.match(response.headers.get("content-type") ?? "", /application\/json/);
  const body = JSON.parse(text);
  assert.equal(body.error?.code, code, text);
  assert.equal(typeof body.error.message, "string");
  assert.ok(body.error.message.length > 0);
  assert.equal(body.error.request_id, response.headers.get("x-request-id"));
  return body.error;
}

/**
 * Calls `probe` until it answers `expected` or `ms` pass; answers the elapsed milliseconds.
 * For effects that the service promises within a bound (admin changes: one second).
 */
export async function eventually<T>(
  probe: () => Promise<T>,
  expected: T,
  ms = 1000,
): Promise<number> {
  const started = Date.now();
  let last: T;
  do {
    last = await probe();
    if (last === expected) return Date.now() - started;
    await new Promise((r) => setTimeout(r, 25));
  } while (Date.now() - started <= ms);
  throw new assert.AssertionError({
    message: `expected ${String(expected)} within ${ms} ms, still ${String(last)}`,
  });
}
