/**
 * `UploadSlots`: the service's cap (503) and each organization's share of it (429 with a
 * `Retry-After` read from how its bodies arrive).
 */
import { assertEquals, assertMatch, assertThrows } from "../_assert.ts";
import { ServiceError } from "../../src/errors.ts";
import { type SlotBody, UploadSlots } from "../../src/upload/slots.ts";

const req = () => new Request("http://x/", { method: "POST", body: "a,b\n" });
const chunked = (): SlotBody => ({ declaredBytes: null, received: { bytes: 0 } });

Deno.test("UploadSlots refuses an organization's upload past its share with 429, not the others'", () => {
  const slots = new UploadSlots({ max: 10, maxPerOrg: 2 });
  const a1 = slots.take(req(), "org_a", chunked());
  slots.take(req(), "org_a", chunked());
  const error = assertThrows(() => slots.take(req(), "org_a", chunked()), ServiceError);
  assertEquals(error.code, "too_many_uploads");
  assertMatch(error.message, /already sends 2 uploads at once/);
  assertEquals(typeof error.retryAfterSeconds, "number");
  // Another organization still gets its slots, and the refused upload took none.
  slots.take(req(), "org_b", chunked());
  assertEquals(slots.inUse, 3);
  // A released slot is the organization's again; releasing twice frees it once.
  a1();
  a1();
  assertEquals(slots.inUse, 2);
  slots.take(req(), "org_a", chunked());
  assertThrows(() => slots.take(req(), "org_a", chunked()), ServiceError, "already sends 2");
});

Deno.test("UploadSlots answers 503 past the service's cap, whatever the organization's share", () => {
  const slots = new UploadSlots({ max: 2, maxPerOrg: 2 });
  slots.take(req(), "org_a", chunked());
  slots.take(req(), "org_b", chunked());
  const error = assertThrows(() => slots.take(req(), "org_c", chunked()), ServiceError);
  assertEquals(error.code, "service_unavailable");
  // No share: an organization may take every slot.
  const unshared = new UploadSlots({ max: 0 });
  for (let i = 0; i < 100; i++) unshared.take(req(), "org_a", chunked());
  assertEquals(unshared.inUse, 100);
});

Deno.test("UploadSlots estimates Retry-After from the organization's fastest-ending body, 1-60 s", async () => {
  const slots = new UploadSlots({ max: 0, maxPerOrg: 2 });
  const slow = { declaredBytes: 1_000_000, received: { bytes: 0 } };
  const fast = { declaredBytes: 1_000_000, received: { bytes: 0 } };
  slots.take(req(), "org_a", slow);
  slots.take(req(), "org_a", fast);
  const retry = () => assertThrows(() => slots.take(req(), "org_a", chunked()), ServiceError);
  // Nothing has arrived yet: no estimate, a few seconds.
  assertEquals(retry().retryAfterSeconds, 5);
  await new Promise((resolve) => setTimeout(resolve, 200));
  // After ~0.2 s: 1 % of the slow body (~20 s to go), half of the fast one (~0.2 s to go).
  slow.received.bytes = 10_000;
  const seconds = retry().retryAfterSeconds!;
  assertEquals(seconds >= 19 && seconds < 60, true, String(seconds));
  fast.received.bytes = 500_000;
  assertEquals(retry().retryAfterSeconds, 1);
  // A body that crawls: at most a minute.
  fast.received.bytes = 1;
  slow.received.bytes = 1;
  assertEquals(retry().retryAfterSeconds, 60);
});
