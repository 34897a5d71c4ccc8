const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** `length` characters of base62 drawn from `crypto.getRandomValues` without modulo bias. */
export function randomBase62(length: number): string {
  let out = "";
  const bytes = new Uint8Array(length * 2);
  while (out.length < length) {
    crypto.getRandomValues(bytes);
    for (const b of bytes) {
      if (b < 248 && out.length < length) out += ALPHABET[b % 62];
    }
  }
  return out;
}

/** A new identifier with a readable prefix, e.g. `org_4fK2…`. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBase62(16)}`;
}

/** Encodes a non-negative integer in base62, left-padded to `width`. */
export function toBase62(value: number, width: number): string {
  let out = "";
  let n = value;
  while (n > 0) {
    out = ALPHABET[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out.padStart(width, "0");
}

/** Checks an organization name: 1 to 200 characters once trimmed. */
export function orgName(name: string): string {
  const trimmed = name.trim();
  if (trimmed === "" || trimmed.length > 200) {
    throw new RangeError("Cannot create organization: the name must be 1 to 200 characters");
  }
  return trimmed;
}
