/**
 * HMAC-SHA256 (RFC 2104) on top of `createHash`: several times faster than `createHmac` under
 * Deno's node:crypto for the short messages we sign on hot paths (upload URLs, SigV4).
 */
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";

const BLOCK = 64;

export class HmacSha256 {
  #inner: Buffer;
  #outer: Buffer;

  constructor(key: Uint8Array | string) {
    let k: Uint8Array = typeof key === "string" ? Buffer.from(key, "utf8") : Buffer.from(key);
    if (k.length > BLOCK) k = createHash("sha256").update(k).digest();
    const inner = Buffer.alloc(BLOCK, 0x36);
    const outer = Buffer.alloc(BLOCK, 0x5c);
    for (let i = 0; i < k.length; i++) {
      inner[i] ^= k[i];
      outer[i] ^= k[i];
    }
    this.#inner = inner;
    this.#outer = outer;
  }

  /** The MAC of `message` as raw bytes. */
  digest(message: string | Uint8Array): Buffer {
    const inner = createHash("sha256").update(this.#inner).update(message).digest();
    return createHash("sha256").update(this.#outer).update(inner).digest();
  }
}

/** One-shot HMAC-SHA256. */
export function hmacSha256(key: Uint8Array | string, message: string | Uint8Array): Buffer {
  return new HmacSha256(key).digest(message);
}
