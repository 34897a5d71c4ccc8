import { assertEquals } from "./_assert.ts";
import { createHmac } from "node:crypto";
import { HmacSha256, hmacSha256 } from "../src/hmac.ts";

Deno.test("hmacSha256 matches RFC 4231 test case 2", () => {
  // RFC 4231 §4.3: key "Jefe", data "what do ya want for nothing?".
  assertEquals(
    hmacSha256("Jefe", "what do ya want for nothing?").toString("hex"),
    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
  );
});

Deno.test("HmacSha256 equals createHmac for keys shorter and longer than a block", () => {
  for (const length of [0, 1, 32, 63, 64, 65, 200]) {
    const key = new Uint8Array(length).map((_, i) => (i * 7 + 3) & 0xff);
    const mac = new HmacSha256(key);
    for (
      const message of [
        "",
        "a",
        "PUT\norg/x/experiments/y/latest.csv\n1700000000\n",
        "é".repeat(100),
      ]
    ) {
      assertEquals(
        mac.digest(message).toString("hex"),
        createHmac("sha256", key).update(message).digest("hex"),
      );
    }
  }
});
