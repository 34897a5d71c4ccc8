/**
 * API keys: only a key's SHA-256 is stored (`../api_keys.ts` makes and checks keys); the key is
 * shown once, at creation.
 */
import type { Dialect } from "../dialect.ts";
import { rowsParam, timeOrNull } from "../dialect.ts";
import { nowIso } from "../errors.ts";
import { generateKey, hashKey, KEY_PREFIX } from "../api_keys.ts";
import { newId } from "../ids.ts";

export interface ApiKeyInfo {
  key_id: string;
  org_id: string;
  /** The key's first characters (`abn_` + 6), to tell keys apart. */
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  active: boolean;
}

/** The organization behind a key hash, as authentication needs it. */
export interface KeyOwner {
  keyId: string;
  orgId: string;
  orgActive: boolean;
  revoked: boolean;
}

export interface KeyRepo {
  /** Stores the hash of a new key and answers the key, shown once. */
  create(orgId: string): Promise<{ api_key: string; info: ApiKeyInfo }>;
  list(orgId: string): Promise<ApiKeyInfo[]>;
  /** False when there is no such key. */
  revoke(keyId: string): Promise<boolean>;
  ownerByHash(hash: string): Promise<KeyOwner | null>;
  /** Records when keys were last used (ISO times), in one write. */
  touch(lastUsed: ReadonlyMap<string, string>): Promise<void>;
}

interface Row {
  [column: string]: unknown;
  id: string;
  org_id: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

function toKeyInfo(row: Row): ApiKeyInfo {
  return {
    key_id: row.id,
    org_id: row.org_id,
    prefix: row.prefix,
    created_at: row.created_at,
    last_used_at: timeOrNull(row.last_used_at),
    revoked_at: timeOrNull(row.revoked_at),
    active: row.revoked_at === null,
  };
}

export function keyRepo(db: Dialect): KeyRepo {
  return {
    create: async (orgId) => {
      const apiKey = generateKey();
      const row: Row = {
        id: newId("key"),
        org_id: orgId,
        prefix: apiKey.slice(0, KEY_PREFIX.length + 6),
        created_at: nowIso(),
        last_used_at: null,
        revoked_at: null,
      };
      await db.run(
        "INSERT INTO api_keys (id, org_id, prefix, hash, created_at) VALUES (?, ?, ?, ?, ?)",
        [row.id, row.org_id, row.prefix, hashKey(apiKey), row.created_at],
      );
      return { api_key: apiKey, info: toKeyInfo(row) };
    },
    list: async (orgId) =>
      (await db.all<Row>(
        `SELECT id, org_id, prefix, created_at, last_used_at, revoked_at FROM api_keys
         WHERE org_id = ? ORDER BY created_at, id`,
        [orgId],
      )).map(toKeyInfo),
    revoke: async (keyId) =>
      await db.run("UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?", [
        nowIso(),
        keyId,
      ]) > 0,
    ownerByHash: async (hash) => {
      const row = await db.get<
        { key_id: string; org_id: string; revoked: unknown; active: unknown }
      >(
        `SELECT k.id AS key_id, k.org_id, k.revoked_at IS NOT NULL AS revoked, o.active
         FROM api_keys k JOIN orgs o ON o.id = k.org_id WHERE k.hash = ?`,
        [hash],
      );
      if (!row) return null;
      return {
        keyId: row.key_id,
        orgId: row.org_id,
        orgActive: Boolean(row.active),
        revoked: Boolean(row.revoked),
      };
    },
    touch: async (lastUsed) => {
      if (lastUsed.size === 0) return;
      await db.run(
        `UPDATE api_keys SET last_used_at = u.at
         FROM ${db.rows("u", { id: "text", at: "time" })} WHERE api_keys.id = u.id`,
        [rowsParam([...lastUsed].map(([id, at]) => ({ id, at })))],
      );
    },
  };
}
