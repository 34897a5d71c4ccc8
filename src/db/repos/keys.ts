/**
 * API keys: only a key's SHA-256 is stored (`../api_keys.ts` makes and checks keys); the key is
 * shown once, at creation. Each key has a name (optional), its scopes and an expiry (optional);
 * its status is `revoked` once revoked, `expired` from its expiry on, `active` otherwise.
 *
 * Revoking and rotating are each one transaction holding the organization's key lock. Revoking
 * can keep an organization's last active admin key (the API's guard; the admin CLI may revoke
 * any key): two revocations at once cannot both pass that check.
 */
import type { Dialect, Sql, Transaction } from "../dialect.ts";
import { rowsParam, timeOrNull } from "../dialect.ts";
import { nowIso } from "../errors.ts";
import { generateKey, hashKey, KEY_PREFIX } from "../api_keys.ts";
import { newId } from "../ids.ts";
import { formatScopes, parseScopes, type Scope, SCOPES } from "../../scopes.ts";

export type KeyStatus = "active" | "revoked" | "expired";

export interface ApiKeyInfo {
  key_id: string;
  org_id: string;
  /** A label for people, or null. */
  name: string | null;
  /** The key's first characters (`abn_` + 6), to tell keys apart. */
  prefix: string;
  scopes: readonly Scope[];
  status: KeyStatus;
  created_at: string;
  /** When the key stops working, or null: never. */
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
  /** `status === "active"`. */
  active: boolean;
}

/** The organization behind a key hash, as authentication needs it. */
export interface KeyOwner {
  keyId: string;
  orgId: string;
  orgActive: boolean;
  revoked: boolean;
  scopes: readonly Scope[];
  /** When the key stops working (ISO), or null. */
  expiresAt: string | null;
}

/** Options of `KeyRepo.create`. */
export interface NewKeyOptions {
  /** A label for people; default none. */
  name?: string | null;
  /** What the key may do; default every scope. */
  scopes?: readonly Scope[];
  /** When the key stops working (ISO-8601); default never. */
  expiresAt?: string | null;
}

/** A new key: the key itself, shown once, and what is stored of it. */
export interface CreatedKey {
  api_key: string;
  info: ApiKeyInfo;
}

/** Options of `KeyRepo.revoke`. */
export interface RevokeOptions {
  /** Only a key of this organization: another's is `not_found`. */
  orgId?: string;
  /** Refuses (`last_admin_key`) to revoke the organization's last active admin key. */
  keepLastAdmin?: boolean;
}

export type RevokeResult =
  | { outcome: "revoked"; key: ApiKeyInfo }
  /** It was revoked before (when it was stays). */
  | { outcome: "unchanged"; key: ApiKeyInfo }
  | { outcome: "not_found" }
  | { outcome: "last_admin_key" };

/** Options of `KeyRepo.rotate`. */
export interface RotateOptions {
  /** Only a key of this organization: another's is `not_found`. */
  orgId?: string;
  /** How long the old key keeps working, in seconds (0: it stops at once). */
  overlapSeconds: number;
}

export type RotateResult =
  | { outcome: "rotated"; created: CreatedKey; old: ApiKeyInfo }
  /** The key is revoked or expired. */
  | { outcome: "not_active"; key: ApiKeyInfo }
  | { outcome: "not_found" };

export interface KeyRepo {
  /** Stores the hash of a new key and answers the key, shown once. */
  create(orgId: string, options?: NewKeyOptions): Promise<CreatedKey>;
  /** The organization's keys, oldest first. */
  list(orgId: string): Promise<ApiKeyInfo[]>;
  get(keyId: string): Promise<ApiKeyInfo | null>;
  revoke(keyId: string, options?: RevokeOptions): Promise<RevokeResult>;
  /**
   * A new key with the old one's name and scopes (and, when the old one had an expiry, the same
   * lifetime from now); the old key's expiry becomes now + the overlap (never later than it was).
   */
  rotate(keyId: string, options: RotateOptions): Promise<RotateResult>;
  ownerByHash(hash: string): Promise<KeyOwner | null>;
  /** Records when keys were last used (ISO times), in one write. */
  touch(lastUsed: ReadonlyMap<string, string>): Promise<void>;
}

interface Row {
  [column: string]: unknown;
  id: string;
  org_id: string;
  name: string | null;
  prefix: string;
  scopes: string;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
}

const COLUMNS =
  "id, org_id, name, prefix, scopes, created_at, expires_at, last_used_at, revoked_at";

/** A stored key's status at `now` (ms). */
export function keyStatus(
  key: { revoked_at: string | null; expires_at: string | null },
  now = Date.now(),
): KeyStatus {
  if (key.revoked_at !== null) return "revoked";
  if (key.expires_at !== null && Date.parse(key.expires_at) <= now) return "expired";
  return "active";
}

function toKeyInfo(row: Row, now = Date.now()): ApiKeyInfo {
  const expiresAt = timeOrNull(row.expires_at);
  const revokedAt = timeOrNull(row.revoked_at);
  const status = keyStatus({ revoked_at: revokedAt, expires_at: expiresAt }, now);
  return {
    key_id: row.id,
    org_id: row.org_id,
    name: row.name ?? null,
    prefix: row.prefix,
    scopes: parseScopes(row.scopes),
    status,
    created_at: row.created_at,
    expires_at: expiresAt,
    last_used_at: timeOrNull(row.last_used_at),
    revoked_at: revokedAt,
    active: status === "active",
  };
}

/** Inserts a new key (inside `sql`'s transaction or on its own). */
async function insertKey(
  sql: Sql,
  orgId: string,
  options: NewKeyOptions,
): Promise<CreatedKey> {
  const apiKey = generateKey();
  const row: Row = {
    id: newId("key"),
    org_id: orgId,
    name: options.name ?? null,
    prefix: apiKey.slice(0, KEY_PREFIX.length + 6),
    scopes: formatScopes(options.scopes ?? SCOPES),
    created_at: nowIso(),
    expires_at: options.expiresAt ? new Date(options.expiresAt).toISOString() : null,
    last_used_at: null,
    revoked_at: null,
  };
  await sql.run(
    `INSERT INTO api_keys (id, org_id, name, prefix, hash, scopes, created_at, expires_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      row.id,
      row.org_id,
      row.name,
      row.prefix,
      hashKey(apiKey),
      row.scopes,
      row.created_at,
      row.expires_at,
    ],
  );
  return { api_key: apiKey, info: toKeyInfo(row) };
}

/**
 * The key `keyId` (of `orgId` when given), read inside a transaction that then holds its
 * organization's key lock: changes to one organization's keys take turns across instances.
 */
async function lockKey(tx: Transaction, keyId: string, orgId?: string): Promise<Row | undefined> {
  const read = () => tx.get<Row>(`SELECT ${COLUMNS} FROM api_keys WHERE id = ?`, [keyId]);
  const row = await read();
  if (!row || (orgId !== undefined && row.org_id !== orgId)) return undefined;
  await tx.lock(`api_keys:${row.org_id}`);
  return await read();
}

/** True when the organization keeps an active admin key besides `keyId`. */
async function otherAdminKey(tx: Transaction, orgId: string, keyId: string): Promise<boolean> {
  const row = await tx.get(
    `SELECT 1 AS one FROM api_keys WHERE org_id = ? AND id <> ? AND revoked_at IS NULL
       AND (expires_at IS NULL OR expires_at > ?) AND (',' || scopes || ',') LIKE '%,admin,%'
     LIMIT 1`,
    [orgId, keyId, nowIso()],
  );
  return row !== undefined;
}

export function keyRepo(db: Dialect): KeyRepo {
  return {
    create: (orgId, options = {}) => insertKey(db, orgId, options),
    list: async (orgId) => {
      const now = Date.now();
      return (await db.all<Row>(
        `SELECT ${COLUMNS} FROM api_keys WHERE org_id = ? ORDER BY created_at, id`,
        [orgId],
      )).map((row) => toKeyInfo(row, now));
    },
    get: async (keyId) => {
      const row = await db.get<Row>(`SELECT ${COLUMNS} FROM api_keys WHERE id = ?`, [keyId]);
      return row ? toKeyInfo(row) : null;
    },
    revoke: (keyId, options = {}) =>
      db.transaction(async (tx): Promise<RevokeResult> => {
        const found = await lockKey(tx, keyId, options.orgId);
        if (!found) return { outcome: "not_found" };
        const key = toKeyInfo(found);
        if (key.revoked_at !== null) return { outcome: "unchanged", key };
        if (options.keepLastAdmin && key.active && key.scopes.includes("admin")) {
          if (!(await otherAdminKey(tx, key.org_id, key.key_id))) {
            return { outcome: "last_admin_key" };
          }
        }
        const at = nowIso();
        await tx.run("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", [
          at,
          keyId,
        ]);
        return { outcome: "revoked", key: toKeyInfo({ ...found, revoked_at: at }) };
      }),
    rotate: (keyId, { orgId, overlapSeconds }) =>
      db.transaction(async (tx): Promise<RotateResult> => {
        const found = await lockKey(tx, keyId, orgId);
        if (!found) return { outcome: "not_found" };
        const old = toKeyInfo(found);
        if (!old.active) return { outcome: "not_active", key: old };
        const now = Date.now();
        const lifetime = old.expires_at === null
          ? null
          : Date.parse(old.expires_at) - Date.parse(old.created_at);
        const created = await insertKey(tx, old.org_id, {
          name: old.name,
          scopes: old.scopes,
          expiresAt: lifetime === null ? null : new Date(now + lifetime).toISOString(),
        });
        const overlapEnd = now + overlapSeconds * 1000;
        const expiresAt = new Date(
          old.expires_at === null ? overlapEnd : Math.min(overlapEnd, Date.parse(old.expires_at)),
        ).toISOString();
        await tx.run("UPDATE api_keys SET expires_at = ? WHERE id = ?", [expiresAt, keyId]);
        return {
          outcome: "rotated",
          created,
          old: toKeyInfo({ ...found, expires_at: expiresAt }, now),
        };
      }),
    ownerByHash: async (hash) => {
      const row = await db.get<
        {
          key_id: string;
          org_id: string;
          revoked: unknown;
          active: unknown;
          scopes: string;
          expires_at: string | null;
        }
      >(
        `SELECT k.id AS key_id, k.org_id, k.revoked_at IS NOT NULL AS revoked, o.active,
           k.scopes, k.expires_at
         FROM api_keys k JOIN orgs o ON o.id = k.org_id WHERE k.hash = ?`,
        [hash],
      );
      if (!row) return null;
      return {
        keyId: row.key_id,
        orgId: row.org_id,
        orgActive: Boolean(row.active),
        revoked: Boolean(row.revoked),
        scopes: parseScopes(row.scopes),
        expiresAt: timeOrNull(row.expires_at),
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
