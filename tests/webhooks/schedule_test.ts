import { assertEquals, assertThrows } from "../_assert.ts";
import { ConfigError, loadConfig } from "../../src/config.ts";
import {
  DEFAULT_RETRY_SCHEDULE,
  nextAttempt,
  parseRetrySchedule,
} from "../../src/webhooks/schedule.ts";

const FIRST = new Date("2026-12-01T02:00:00.000Z");

function at(seconds: number): Date {
  return new Date(FIRST.getTime() + seconds * 1000);
}

Deno.test("parseRetrySchedule reads ascending whole seconds", () => {
  assertEquals(parseRetrySchedule("0,5,300,1800,7200,18000,36000,36000"), [
    ...DEFAULT_RETRY_SCHEDULE,
  ]);
  assertEquals(parseRetrySchedule(" 0 , 1 ,2 "), [0, 1, 2]);
  assertEquals(parseRetrySchedule("60"), [60]);
});

Deno.test("parseRetrySchedule says which entry is wrong", () => {
  assertThrows(() => parseRetrySchedule(""), RangeError, "at least one");
  assertThrows(() => parseRetrySchedule("0,5,x"), SyntaxError, 'entry 3 "x"');
  assertThrows(() => parseRetrySchedule("0,-5"), SyntaxError, 'entry 2 "-5"');
  assertThrows(() => parseRetrySchedule("0,1.5"), SyntaxError, "whole number");
  assertThrows(() => parseRetrySchedule("0,,5"), SyntaxError, 'entry 2 ""');
  assertThrows(
    () => parseRetrySchedule("0,300,5"),
    RangeError,
    "entry 3 (5) is before entry 2 (300)",
  );
  assertThrows(() => parseRetrySchedule("0,2592001"), RangeError, "30 days");
  assertThrows(
    () => parseRetrySchedule(Array(101).fill("1").join(",")),
    RangeError,
    "101 attempts",
  );
});

Deno.test("nextAttempt follows the schedule from the first try and answers null after the last", () => {
  const schedule = DEFAULT_RETRY_SCHEDULE;
  assertEquals(nextAttempt(schedule, 0, FIRST), FIRST);
  assertEquals(nextAttempt(schedule, 1, FIRST), at(5));
  assertEquals(nextAttempt(schedule, 2, FIRST), at(300));
  assertEquals(nextAttempt(schedule, 5, FIRST), at(18000));
  assertEquals(nextAttempt(schedule, 6, FIRST), at(36000));
  assertEquals(nextAttempt(schedule, 7, FIRST), at(36000));
  assertEquals(nextAttempt(schedule, 8, FIRST), null);
  assertEquals(nextAttempt([0], 1, FIRST), null);
  assertThrows(() => nextAttempt(schedule, -1, FIRST), RangeError);
  assertThrows(() => nextAttempt(schedule, 1.5, FIRST), RangeError);
});

Deno.test("nextAttempt waits for a Retry-After later than the schedule, never less", () => {
  const schedule = DEFAULT_RETRY_SCHEDULE;
  // After the second attempt (due at +5 s) the endpoint asked for 120 s: the third stays at +300 s.
  assertEquals(nextAttempt(schedule, 2, FIRST, at(5 + 120)), at(300));
  // After the first it asked for 60 s: the second waits until then instead of +5 s.
  assertEquals(nextAttempt(schedule, 1, FIRST, at(60)), at(60));
  // A Retry-After does not add attempts.
  assertEquals(nextAttempt(schedule, 8, FIRST, at(60)), null);
});

Deno.test("loadConfig reads the webhook variables", () => {
  const defaults = loadConfig({});
  assertEquals(defaults.webhookRetrySchedule, [0, 5, 300, 1800, 7200, 18000, 36000, 36000]);
  assertEquals(defaults.webhookTimeoutSeconds, 15);
  assertEquals(defaults.webhookAllowPrivate, false);
  const set = loadConfig({
    ABN_WEBHOOK_RETRY_SCHEDULE: "0,1,2",
    ABN_WEBHOOK_TIMEOUT_SECONDS: "30",
    ABN_WEBHOOK_ALLOW_PRIVATE: "true",
  });
  assertEquals(set.webhookRetrySchedule, [0, 1, 2]);
  assertEquals(Object.isFrozen(set.webhookRetrySchedule), true);
  assertEquals(set.webhookTimeoutSeconds, 30);
  assertEquals(set.webhookAllowPrivate, true);
});

Deno.test("loadConfig names a bad webhook variable and the accepted form", () => {
  assertThrows(
    () => loadConfig({ ABN_WEBHOOK_RETRY_SCHEDULE: "0,300,5" }),
    ConfigError,
    'Invalid ABN_WEBHOOK_RETRY_SCHEDULE="0,300,5": entry 3 (5) is before entry 2 (300)',
  );
  assertThrows(
    () => loadConfig({ ABN_WEBHOOK_RETRY_SCHEDULE: "soon" }),
    ConfigError,
    "ABN_WEBHOOK_RETRY_SCHEDULE",
  );
  assertThrows(
    () => loadConfig({ ABN_WEBHOOK_TIMEOUT_SECONDS: "0" }),
    ConfigError,
    "ABN_WEBHOOK_TIMEOUT_SECONDS",
  );
  assertThrows(() => loadConfig({ ABN_WEBHOOK_TIMEOUT_SECONDS: "1.5" }), ConfigError, "1 to 300");
  assertThrows(
    () => loadConfig({ ABN_WEBHOOK_ALLOW_PRIVATE: "maybe" }),
    ConfigError,
    "ABN_WEBHOOK_ALLOW_PRIVATE",
  );
});
