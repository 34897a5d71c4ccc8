/**
 * API keys: `abn_` + 32 base62 characters + a 6-character base62 CRC-32 checksum of what
 * precedes it (as GitHub tokens do), so a mistyped key is refused before any database work.
 * Only the SHA-256 of a key is stored; the key itself is shown once.
 */
import { sha256Hex } from "../crypto/sha256.ts";
import type { Database } from "./database.ts";
import { nowIso, stmt } from "./database.ts";
import { newId, randomBase62, toBase62 } from "./ids.ts";

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

export interface ApiKeyInfo {
  key_id: string;
  org_id: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  active: boolean;
}

interface KeyRow {
  id: string;
  org_id: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

function toInfo(row: KeyRow): ApiKeyInfo {
  return {
    key_id: row.id,
    org_id: row.org_id,
    prefix: row.prefix,
    created_at: row.created_at,
    last_used_at: row.last_used_at,
    revoked_at: row.revoked_at,
    active: row.revoked_at === null,
  };
}

/** Creates a key for an organization; answers the full key (shown once) and its info. */
export function createKey(db: Database, orgId: string): { api_key: string; info: ApiKeyInfo } {
  const apiKey = generateKey();
  const row: KeyRow = {
    id: newId("key"),
    org_id: orgId,
    prefix: apiKey.slice(0, KEY_PREFIX.length + 6),
    created_at: nowIso(),
    last_used_at: null,
    revoked_at: null,
  };
  stmt(db, "INSERT INTO api_keys (id, org_id, prefix, hash, created_at) VALUES (?, ?, ?, ?, ?)")
    .run(row.id, row.org_id, row.prefix, hashKey(apiKey), row.created_at);
  return { api_key: apiKey, info: toInfo(row) };
}

export function listKeys(db: Database, orgId: string): ApiKeyInfo[] {
  const rows = stmt(
    db,
    "SELECT id, org_id, prefix, created_at, last_used_at, revoked_at FROM api_keys WHERE org_id = ? ORDER BY created_at, id",
  ).all(orgId) as unknown as KeyRow[];
  return rows.map(toInfo);
}

/** Revokes a key; answers false when no such key exists. */
export function revokeKey(db: Database, keyId: string): boolean {
  const result = stmt(db, "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?")
    .run(nowIso(), keyId);
  return Number(result.changes) > 0;
}

export interface KeyOwner {
  keyId: string;
  orgId: string;
  orgActive: boolean;
  revoked: boolean;
}

/** Looks a key up. */
export function findKeyOwner(db: Database, key: string): KeyOwner | null {
  return findKeyOwnerByHash(db, hashKey(key));
}

/** Looks a key up by its SHA-256 (hex). */
export function findKeyOwnerByHash(db: Database, hash: string): KeyOwner | null {
  const row = stmt(
    db,
    `SELECT k.id AS key_id, k.org_id, k.revoked_at, o.active
       FROM api_keys k JOIN orgs o ON o.id = k.org_id WHERE k.hash = ?`,
  ).get(hash) as
    | { key_id: string; org_id: string; revoked_at: string | null; active: number }
    | undefined;
  if (!row) return null;
  return {
    keyId: row.key_id,
    orgId: row.org_id,
    orgActive: row.active === 1,
    revoked: row.revoked_at !== null,
  };
}

/** Records a key's use, at most once a minute per key so the request path stays read-mostly. */
export class LastUsedRecorder {
  #written = new Map<string, number>();
  #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  touch(keyId: string, now = Date.now()): void {
    const last = this.#written.get(keyId);
    if (last !== undefined && now - last < 60_000) return;
    this.#written.set(keyId, now);
    try {
      stmt(this.#db, "UPDATE api_keys SET last_used_at = ? WHERE id = ?")
        .run(new Date(now).toISOString(), keyId);
    } catch {
      // A busy or read-only database must not fail the request, nor stall every request of the
      // key on the busy timeout: the timestamp stays, so the next minute retries.
    }
  }
}
