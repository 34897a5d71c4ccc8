/**
 * Compares a secret a caller presented with the one expected, in time that depends on neither
 * where they differ nor their lengths: both are hashed to 32 bytes first, and the digests are
 * compared in constant time.
 */
import { createHash, timingSafeEqual } from "node:crypto";

function digest(text: string): Uint8Array {
  return createHash("sha256").update(text, "utf8").digest();
}

/** True when `given` is `expected`. */
export function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}
