import { Buffer } from "node:buffer";
import { Webhook } from "standardwebhooks";
import { assert, assertEquals, assertMatch, assertThrows } from "../_assert.ts";
import {
  MIN_SECRET_BYTES,
  newSecret,
  SECRET_BYTES,
  secretKey,
  sign,
  verify,
} from "../../src/webhooks/signature.ts";

/**
 * The published signing vector of the Standard Webhooks repository
 * (github.com/standard-webhooks/standard-webhooks, `libraries/go/webhook_test.go`,
 * `TestWebhookSign`; the same values are in its JavaScript and Python test suites). The
 * specification text (`spec/standard-webhooks.md`) shows the scheme but no secret, so this vector
 * is the one to check against.
 */
const VECTOR = {
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};

function headers(id: string, timestamp: number, signature: string): Record<string, string> {
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": signature,
  };
}

Deno.test("sign answers the Standard Webhooks published vector", () => {
  const { secret, id, timestamp, body, signature } = VECTOR;
  assertEquals(sign({ id, timestamp, body }, [secret]), signature);
  assertEquals(sign({ id, timestamp, body: new TextEncoder().encode(body) }, [secret]), signature);
});

Deno.test("sign is verified by the standardwebhooks package, with one secret and with two", () => {
  const oldSecret = newSecret();
  const rotated = newSecret();
  const timestamp = Math.floor(Date.now() / 1000);
  const body = JSON.stringify({ type: "webhook.test", data: { note: "naïve — ünïcode ✓" } });
  const id = "evt_0123456789abcdef";
  const both = sign({ id, timestamp, body }, [rotated, oldSecret]);
  const parts = both.split(" ");
  assertEquals(parts.length, 2);
  for (const part of parts) assertMatch(part, /^v1,[A-Za-z0-9+/]{43}=$/);
  // A receiver holding either secret accepts the header carrying both.
  for (const secret of [oldSecret, rotated]) {
    assertEquals(new Webhook(secret).verify(body, headers(id, timestamp, both)), JSON.parse(body));
  }
  const single = sign({ id, timestamp, body }, [rotated]);
  assertEquals(single, parts[0]);
  assertThrows(
    () => new Webhook(oldSecret).verify(body, headers(id, timestamp, single)),
    Error,
    "No matching signature",
  );
  // Any change to the id, the timestamp or one byte of the body breaks it.
  const verifier = new Webhook(rotated);
  assertThrows(() => verifier.verify(body, headers("evt_other", timestamp, single)), Error);
  assertThrows(() => verifier.verify(body, headers(id, timestamp - 1, single)), Error);
  assertThrows(
    () => verifier.verify(body.replace("✓", "x"), headers(id, timestamp, single)),
    Error,
  );
});

Deno.test("newSecret makes whsec_ and the base64 of 32 fresh random bytes", () => {
  const a = newSecret();
  const b = newSecret();
  assertMatch(a, /^whsec_[A-Za-z0-9+/]{43}=$/);
  assert(a !== b);
  assertEquals(secretKey(a).length, SECRET_BYTES);
  assertEquals(new Uint8Array(Buffer.from(a.slice(6), "base64")), secretKey(a));
});

Deno.test("secretKey refuses secrets of another shape without repeating them", () => {
  const short = "whsec_" + Buffer.from(new Uint8Array(MIN_SECRET_BYTES - 1)).toString("base64");
  const error = assertThrows(() => secretKey(short), RangeError, "23 bytes");
  assert(!error.message.includes(short.slice(6)));
  assertEquals(secretKey(VECTOR.secret).length, 24);
  assertThrows(() => secretKey(VECTOR.secret.slice(6)), TypeError, "whsec_");
  assertThrows(() => secretKey("whsec_not base64!!"), TypeError, "not base64");
  assertThrows(() => sign({ id: "e", timestamp: 1, body: "" }, []), RangeError, "no secret");
});

Deno.test("sign refuses ids holding a dot or space and timestamps that are not Unix seconds", () => {
  const { secret, body } = VECTOR;
  assertThrows(() => sign({ id: "evt.1", timestamp: 1, body }, [secret]), TypeError, "evt.1");
  assertThrows(() => sign({ id: "evt 1", timestamp: 1, body }, [secret]), TypeError);
  assertThrows(() => sign({ id: "", timestamp: 1, body }, [secret]), TypeError);
  assertThrows(() => sign({ id: "e", timestamp: 1.5, body }, [secret]), RangeError);
  assertThrows(() => sign({ id: "e", timestamp: -1, body }, [secret]), RangeError);
});

Deno.test("verify accepts the vector within the tolerance and any listed v1 signature", () => {
  const { secret, id, timestamp, body, signature } = VECTOR;
  const content = { id, timestamp, body };
  assertEquals(verify(content, signature, secret, { now: timestamp }), true);
  assertEquals(verify(content, signature, secret, { now: timestamp + 300 }), true);
  assertEquals(verify(content, signature, secret, { now: timestamp + 301 }), false);
  assertEquals(verify(content, signature, secret, { now: timestamp - 301 }), false);
  const listed =
    `v1a,c29tZXRoaW5nIGVsc2U= v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= ${signature}`;
  assertEquals(verify(content, listed, secret, { now: timestamp }), true);
  assertEquals(verify(content, signature.replace("v1,", "v2,"), secret, { now: timestamp }), false);
  assertEquals(
    verify({ ...content, body: body + " " }, signature, secret, { now: timestamp }),
    false,
  );
  assertEquals(verify(content, signature, newSecret(), { now: timestamp }), false);
  assertEquals(verify(content, "v1,", secret, { now: timestamp }), false);
});
