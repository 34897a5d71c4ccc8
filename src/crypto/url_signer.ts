/**
 * HMAC-SHA256 signatures for the local driver's upload URLs (over method, key, expiry, the
 * declared length and the API key that asked for the URL, when given) and for list cursors. The secret comes from the control plane's `secrets`
 * (`url-signing`): a file in the data directory with SQLite, a row shared by every instance with
 * PostgreSQL, so a URL or a page issued by one instance is accepted by another.
 */
import { Buffer } from "node:buffer";
import { timingSafeEqual } from "node:crypto";
import { HmacSha256 } from "./sha256.ts";

export type SignatureCheck = "ok" | "expired" | "invalid";

/** An API key id (`key_` + 16 base62 characters), as an upload URL may carry. */
const KEY_ID = /^key_[0-9A-Za-z]{16}$/;

export class UrlSigner {
  #hmac: HmacSha256;

  constructor(secret: Uint8Array) {
    if (secret.length < 32) throw new RangeError("UrlSigner needs a secret of at least 32 bytes");
    this.#hmac = new HmacSha256(secret);
  }

  #mac(method: string, key: string, expires: number, size?: number, keyId?: string): string {
    // Without a key id the text is what URLs signed before key ids were bound: they still pass.
    const granted = keyId === undefined ? "" : `\n${keyId}`;
    return this.#hmac.base64Url(`${method}\n${key}\n${expires}\n${size ?? ""}${granted}`);
  }

  /**
   * The query string (without `?`) that authorizes `method` on `key` until `expires` (s);
   * `keyId` (an API key id) names who asked for it, bound into the signature.
   */
  sign(method: string, key: string, expires: number, size?: number, keyId?: string): string {
    if (keyId !== undefined && !KEY_ID.test(keyId)) {
      throw new TypeError(`Cannot sign for key id ${JSON.stringify(keyId)}: not a key id`);
    }
    // Built by hand: every part is digits, base64url or a key id, so nothing needs escaping.
    const sized = size === undefined ? "" : `&size=${size}`;
    const granted = keyId === undefined ? "" : `&key_id=${keyId}`;
    const mac = this.#mac(method, key, expires, size, keyId);
    return `expires=${expires}${sized}${granted}&signature=${mac}`;
  }

  /** Checks a signed query; `size` is the declared length bound into the URL, if any. */
  verify(
    method: string,
    key: string,
    params: URLSearchParams,
    now = Date.now() / 1000,
  ): { result: SignatureCheck; size?: number; keyId?: string } {
    const expiresText = params.get("expires") ?? "";
    const sizeText = params.get("size");
    const keyId = params.get("key_id") ?? undefined;
    const signature = params.get("signature") ?? "";
    if (
      !/^\d{1,12}$/.test(expiresText) || (sizeText !== null && !/^\d{1,16}$/.test(sizeText)) ||
      (keyId !== undefined && !KEY_ID.test(keyId))
    ) {
      return { result: "invalid" };
    }
    const expires = Number(expiresText);
    const size = sizeText === null ? undefined : Number(sizeText);
    const expected = Buffer.from(this.#mac(method, key, expires, size, keyId));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
      return { result: "invalid" };
    }
    const granted = keyId === undefined ? {} : { keyId };
    if (now > expires) return { result: "expired", size, ...granted };
    return { result: "ok", size, ...granted };
  }
}
