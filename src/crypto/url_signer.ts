/**
 * HMAC-SHA256 signatures for the local driver's upload URLs (over method, key, expiry and the
 * declared length) and for list cursors. The secret comes from the control plane's `secrets`
 * (`url-signing`): a file in the data directory with SQLite, a row shared by every instance with
 * PostgreSQL, so a URL or a page issued by one instance is accepted by another.
 */
import { Buffer } from "node:buffer";
import { timingSafeEqual } from "node:crypto";
import { HmacSha256 } from "./sha256.ts";

export type SignatureCheck = "ok" | "expired" | "invalid";

export class UrlSigner {
  #hmac: HmacSha256;

  constructor(secret: Uint8Array) {
    if (secret.length < 32) throw new RangeError("UrlSigner needs a secret of at least 32 bytes");
    this.#hmac = new HmacSha256(secret);
  }

  #mac(method: string, key: string, expires: number, size: number | undefined): string {
    return this.#hmac.base64Url(`${method}\n${key}\n${expires}\n${size ?? ""}`);
  }

  /** The query string (without `?`) that authorizes `method` on `key` until `expires` (s). */
  sign(method: string, key: string, expires: number, size?: number): string {
    // Built by hand: every part is digits or base64url, so nothing needs escaping.
    const sized = size === undefined ? "" : `&size=${size}`;
    return `expires=${expires}${sized}&signature=${this.#mac(method, key, expires, size)}`;
  }

  /** Checks a signed query; `size` is the declared length bound into the URL, if any. */
  verify(
    method: string,
    key: string,
    params: URLSearchParams,
    now = Date.now() / 1000,
  ): { result: SignatureCheck; size?: number } {
    const expiresText = params.get("expires") ?? "";
    const sizeText = params.get("size");
    const signature = params.get("signature") ?? "";
    if (!/^\d{1,12}$/.test(expiresText) || (sizeText !== null && !/^\d{1,16}$/.test(sizeText))) {
      return { result: "invalid" };
    }
    const expires = Number(expiresText);
    const size = sizeText === null ? undefined : Number(sizeText);
    const expected = Buffer.from(this.#mac(method, key, expires, size));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
      return { result: "invalid" };
    }
    if (now > expires) return { result: "expired", size };
    return { result: "ok", size };
  }
}
