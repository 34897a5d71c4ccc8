/**
 * The plain-TypeScript SHA-256 and HMAC against published test vectors (FIPS 180-4 examples,
 * RFC 4231) and against `node:crypto` on every message length around the block boundaries.
 */
import { assertEquals } from "../_assert.ts";
import { Buffer } from "node:buffer";
import { createHash, createHmac } from "node:crypto";
import {
  HmacSha256,
  hmacSha256,
  sha256,
  sha256Hex,
  toBase64Url,
  toHex,
} from "../../src/crypto/sha256.ts";

const hex = (bytes: Uint8Array) => toHex(bytes);

Deno.test("sha256 matches the FIPS 180-4 example digests", () => {
  // NIST CSRC "SHA-256" examples (one block, two blocks) and the empty message.
  assertEquals(
    hex(sha256("abc")),
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
  assertEquals(
    hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
  );
  assertEquals(
    hex(sha256("")),
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  );
});

Deno.test("sha256 equals node:crypto for every length from 0 to 300 bytes and for UTF-8 text", () => {
  const data = new Uint8Array(300).map((_, i) => (i * 131 + 17) & 0xff);
  for (let length = 0; length <= 300; length++) {
    const message = data.subarray(0, length);
    const expected = createHash("sha256").update(message).digest("hex");
    assertEquals(hex(sha256(message)), expected);
    assertEquals(sha256Hex(message), expected);
  }
  const text = "é€𝄞 experiment ".repeat(40);
  assertEquals(hex(sha256(text)), createHash("sha256").update(text).digest("hex"));
});

Deno.test("hmacSha256 matches RFC 4231 test cases 1, 2 and 6", () => {
  // §4.2: key 20 × 0x0b, data "Hi There".
  assertEquals(
    hex(hmacSha256(new Uint8Array(20).fill(0x0b), "Hi There")),
    "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
  );
  // §4.3: key "Jefe", data "what do ya want for nothing?".
  assertEquals(
    hex(hmacSha256("Jefe", "what do ya want for nothing?")),
    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
  );
  // §4.7: a 131-byte key (hashed first), a 54-byte message.
  assertEquals(
    hex(
      hmacSha256(
        new Uint8Array(131).fill(0xaa),
        "Test Using Larger Than Block-Size Key - Hash Key First",
      ),
    ),
    "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
  );
});

Deno.test("HmacSha256 equals createHmac for keys and messages around the block size", () => {
  for (const keyLength of [0, 1, 32, 63, 64, 65, 200]) {
    const key = new Uint8Array(keyLength).map((_, i) => (i * 7 + 3) & 0xff);
    const mac = new HmacSha256(key);
    for (const length of [0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 250]) {
      const message = "m".repeat(length);
      const digest = createHmac("sha256", key).update(message).digest();
      assertEquals(hex(mac.digest(message)), digest.toString("hex"));
      assertEquals(mac.hex(message), digest.toString("hex"));
      assertEquals(mac.base64Url(message), digest.toString("base64url"));
    }
    const text = "PUT\norg/x/experiments/é/latest.csv\n1700000000\n";
    assertEquals(hex(mac.digest(text)), createHmac("sha256", key).update(text).digest("hex"));
  }
});

Deno.test("toBase64Url equals Buffer's base64url for every remainder", () => {
  for (let length = 0; length <= 40; length++) {
    const bytes = new Uint8Array(length).map((_, i) => (i * 97 + 251) & 0xff);
    assertEquals(toBase64Url(bytes), Buffer.from(bytes).toString("base64url"));
  }
});
