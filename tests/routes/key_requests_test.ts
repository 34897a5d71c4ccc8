import { assertEquals, assertThrows } from "../_assert.ts";
import { ApiError } from "../../src/http/errors.ts";
import {
  parseExpiry,
  parseKeyName,
  parseKeyRequest,
  parseRotateRequest,
  parseScopeList,
} from "../../src/routes/key_requests.ts";

const NOW = Date.UTC(2026, 11, 1);

Deno.test("parseExpiry answers UTC for a future time with any zone, and refuses the rest", () => {
  assertEquals(parseExpiry("2027-01-31T00:00:00Z", NOW), "2027-01-31T00:00:00.000Z");
  assertEquals(parseExpiry("2027-01-31T02:30+02:00", NOW), "2027-01-31T00:30:00.000Z");
  assertEquals(parseExpiry("2027-01-31T00:00:00.123456Z", NOW), "2027-01-31T00:00:00.123Z");
  assertEquals(parseExpiry("2028-02-29T00:00:00Z", NOW), "2028-02-29T00:00:00.000Z");
  assertEquals(parseExpiry(undefined, NOW), null);
  assertEquals(parseExpiry(null, NOW), null);
  for (
    const bad of [
      "2027-02-29T00:00:00Z", // not a leap year
      "2027-02-30T00:00:00Z",
      "2027-13-01T00:00:00Z",
      "2027-01-01T24:00:00Z",
      "2027-01-01T00:60:00Z",
      "2027-01-01T00:00:00", // no zone
      "2027-01-01",
      "next week",
      1798761600000,
      "2026-11-30T23:59:59Z", // past
      "2026-12-01T00:00:00Z", // now
    ]
  ) {
    assertThrows(() => parseExpiry(bad, NOW), ApiError, "expires_at");
  }
});

Deno.test("parseScopeList keeps each known scope once, in the stored order", () => {
  assertEquals(parseScopeList(["admin", "read", "admin"]), ["read", "admin"]);
  assertThrows(() => parseScopeList([]), ApiError, "non-empty");
  assertThrows(() => parseScopeList(["Read"]), ApiError, '"Read"');
  assertThrows(() => parseScopeList("read"), ApiError, "scopes");
});

Deno.test("parseKeyName trims, treats empty as none, and refuses long or control characters", () => {
  assertEquals(parseKeyName("  nightly  "), "nightly");
  assertEquals(parseKeyName("   "), null);
  assertEquals(parseKeyName(undefined), null);
  assertEquals(parseKeyName("x".repeat(100)), "x".repeat(100));
  assertThrows(() => parseKeyName("x".repeat(101)), ApiError, "100");
  assertThrows(() => parseKeyName("a\nb"), ApiError, "control");
});

Deno.test("parseKeyRequest and parseRotateRequest refuse unknown fields with invalid_key_request", () => {
  const error = assertThrows(() => parseKeyRequest({ scopes: ["read"], role: "x" }), ApiError);
  assertEquals([error.code, error.status], ["invalid_key_request", 400]);
  assertEquals(parseRotateRequest({}), { overlapHours: 24 });
  assertEquals(parseRotateRequest({ overlap_hours: null }), { overlapHours: 24 });
  assertEquals(parseRotateRequest({ overlap_hours: 0.5 }), { overlapHours: 0.5 });
  assertEquals(parseRotateRequest({ overlap_hours: 168 }), { overlapHours: 168 });
  for (const overlap of [168.01, -0.1, "1", Infinity]) {
    assertThrows(() => parseRotateRequest({ overlap_hours: overlap }), ApiError, "overlap_hours");
  }
});
