/** API keys on PostgreSQL (the same statements as the SQLite driver's). */
import type { ApiKeyInfo, KeyRepo } from "../control_plane.ts";
import { nowIso } from "../control_plane.ts";
import { generateKey, hashKey, KEY_PREFIX } from "../api_keys.ts";
import { newId } from "../ids.ts";
import type { PgClient } from "./pg_client.ts";
import { iso, isoOrNull } from "./_rows.ts";

interface KeyRow {
  [column: string]: unknown;
  id: string;
  org_id: string;
  prefix: string;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

function toKeyInfo(row: KeyRow): ApiKeyInfo {
  return {
    key_id: row.id,
    org_id: row.org_id,
    prefix: row.prefix,
    created_at: iso(row.created_at),
    last_used_at: isoOrNull(row.last_used_at),
    revoked_at: isoOrNull(row.revoked_at),
    active: row.revoked_at === null,
  };
}

export function postgresKeys(db: PgClient): KeyRepo {
  return {
    create: async (orgId) => {
      const apiKey = generateKey();
      const info: ApiKeyInfo = {
        key_id: newId("key"),
        org_id: orgId,
        prefix: apiKey.slice(0, KEY_PREFIX.length + 6),
        created_at: nowIso(),
        last_used_at: null,
        revoked_at: null,
        active: true,
      };
      await db.query(
        "INSERT INTO api_keys (id, org_id, prefix, hash, created_at) VALUES ($1, $2, $3, $4, $5)",
        [info.key_id, orgId, info.prefix, hashKey(apiKey), info.created_at],
      );
      return { api_key: apiKey, info };
    },
    list: async (orgId) =>
      (await db.query<KeyRow>(
        `SELECT id, org_id, prefix, created_at, last_used_at, revoked_at FROM api_keys
         WHERE org_id = $1 ORDER BY created_at, id`,
        [orgId],
      )).rows.map(toKeyInfo),
    revoke: async (keyId) =>
      ((await db.query(
        "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2",
        [nowIso(), keyId],
      )).rowCount ?? 0) > 0,
    ownerByHash: async (hash) => {
      const { rows } = await db.query<
        { key_id: string; org_id: string; revoked: boolean; active: boolean }
      >(
        `SELECT k.id AS key_id, k.org_id, k.revoked_at IS NOT NULL AS revoked, o.active
         FROM api_keys k JOIN orgs o ON o.id = k.org_id WHERE k.hash = $1`,
        [hash],
      );
      const row = rows[0];
      if (!row) return null;
      return { keyId: row.key_id, orgId: row.org_id, orgActive: row.active, revoked: row.revoked };
    },
    touch: async (lastUsed) => {
      if (lastUsed.size === 0) return;
      await db.query(
        `UPDATE api_keys k SET last_used_at = v.at
         FROM unnest($1::text[], $2::timestamptz[]) AS v(id, at) WHERE k.id = v.id`,
        [[...lastUsed.keys()], [...lastUsed.values()]],
      );
    },
  };
}
