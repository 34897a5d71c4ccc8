/**
 * API keys: `abn_` + 32 base62 characters + a 6-character base62 CRC-32 checksum of what
 * precedes it (as GitHub tokens do), so a mistyped key is refused before any database work.
 * Only the SHA-256 of a key is stored; the key itself is shown once.
 */
import { sha256Hex } from "../crypto/sha256.ts";
import type { ControlPlane } from "./control_plane.ts";
import { randomBase62, toBase62 } from "./ids.ts";

export const KEY_PREFIX = "abn_";
const SECRET_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
const KEY_PATTERN = /^abn_[0-9A-Za-z]{38}$/;

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32(text: string): number {
  let crc = 0xffffffff;
  for (let i = 0; i < text.length; i++) {
    crc = CRC_TABLE[(crc ^ text.charCodeAt(i)) & 0xff] ^ (crc >>> 8);
  }
  return (crc ^ 0xffffffff) >>> 0;
}

function checksum(body: string): string {
  return toBase62(crc32(body), CHECKSUM_LENGTH);
}

/** Answers true when `key` has the shape of an API key and its checksum matches. */
export function isWellFormedKey(key: string): boolean {
  if (!KEY_PATTERN.test(key)) return false;
  const body = key.slice(0, key.length - CHECKSUM_LENGTH);
  return timingSafeEqualText(checksum(body), key.slice(key.length - CHECKSUM_LENGTH));
}

/** Compares two strings in time independent of where they differ. */
export function timingSafeEqualText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** Generates a new key (not stored). */
export function generateKey(): string {
  const body = KEY_PREFIX + randomBase62(SECRET_LENGTH);
  return body + checksum(body);
}

/** SHA-256 of a key, hex: the only form in which keys are stored. */
export function hashKey(key: string): string {
  return sha256Hex(key);
}

/**
 * Records when keys were last used, at most once a minute per key, written in one batch a second
 * later: authentication never waits on the database for it, and a busy database only delays it.
 */
export class LastUsedRecorder {
  readonly #db: ControlPlane;
  readonly #written = new Map<string, number>();
  #pending = new Map<string, string>();
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(db: ControlPlane) {
    this.#db = db;
  }

  touch(keyId: string, now = Date.now()): void {
    const last = this.#written.get(keyId);
    if (last !== undefined && now - last < 60_000) return;
    this.#written.set(keyId, now);
    this.#pending.set(keyId, new Date(now).toISOString());
    if (this.#timer === undefined) {
      this.#timer = setTimeout(() => this.flush(), 1000);
      Deno.unrefTimer(this.#timer as unknown as number);
    }
  }

  /** Writes what is pending now; a failed write is retried by the key's next use after a minute. */
  async flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#pending.size === 0) return;
    const batch = this.#pending;
    this.#pending = new Map();
    try {
      await this.#db.keys.touch(batch);
    } catch {
      for (const keyId of batch.keys()) this.#written.delete(keyId);
    }
  }
}
