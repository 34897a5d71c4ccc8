/** `admin key …`: create, list, rotate and revoke an organization's API keys, each an audit event. */
import type { ApiKeyInfo, ControlPlane, NewKeyOptions } from "../db/control_plane.ts";
import { auditEventId } from "../audit/audit_log.ts";
import { SCOPES } from "../scopes.ts";
import { MAX_OVERLAP_HOURS, parseKeyName, parseScopeList } from "../routes/key_requests.ts";
import { type AdminCall, UsageError } from "./_admin_args.ts";

/** `key create ORG_ID [--scopes …] [--name …] [--expires-in-days N]` */
export async function keyCreate({ db, need, options, asJson, io }: AdminCall): Promise<number> {
  const orgId = need("ORG_ID");
  if (!(await db.orgs.get(orgId))) {
    io.err(`No organization ${orgId}`);
    return 1;
  }
  const { api_key, info } = await db.keys.create(orgId, keyOptions(options));
  await auditKeyChange(db, "key.created", info, {
    name: info.name,
    prefix: info.prefix,
    scopes: info.scopes,
    expires_at: info.expires_at,
  });
  io.out(asJson ? JSON.stringify(createdJson(api_key, info)) : api_key);
  return 0;
}

/** `key rotate KEY_ID [--overlap-hours N]` */
export async function keyRotate({ db, need, options, asJson, io }: AdminCall): Promise<number> {
  const keyId = need("KEY_ID");
  const overlapHours = numberOption(options, "overlap-hours", 24, MAX_OVERLAP_HOURS);
  const result = await db.keys.rotate(keyId, { overlapSeconds: overlapHours * 3600 });
  if (result.outcome === "not_found") {
    io.err(`No API key ${keyId}`);
    return 1;
  }
  if (result.outcome === "not_active") {
    io.err(`${keyId} is ${result.key.status}: only an active key can be rotated`);
    return 1;
  }
  const { created, old } = result;
  await auditKeyChange(db, "key.rotated", old, {
    new_key_id: created.info.key_id,
    name: old.name,
    scopes: old.scopes,
    overlap_hours: overlapHours,
    old_expires_at: old.expires_at,
    expires_at: created.info.expires_at,
  });
  io.out(
    asJson
      ? JSON.stringify({ ...createdJson(created.api_key, created.info), replaces: old })
      : created.api_key,
  );
  if (!asJson) io.err(`${keyId} keeps working until ${old.expires_at}`);
  return 0;
}

/** `key list ORG_ID` */
export async function keyList({ db, need, asJson, io }: AdminCall): Promise<number> {
  const orgId = need("ORG_ID");
  if (!(await db.orgs.get(orgId))) {
    io.err(`No organization ${orgId}`);
    return 1;
  }
  const keys = await db.keys.list(orgId);
  if (asJson) io.out(JSON.stringify(keys));
  else {
    for (const k of keys) {
      const expiry = k.expires_at === null ? "" : `\texpires ${k.expires_at}`;
      io.out(
        `${k.key_id}\t${k.prefix}…\t${k.status}\t${
          k.scopes.join(",")
        }\tcreated ${k.created_at}\tlast used ${k.last_used_at ?? "never"}${expiry}${
          k.name === null ? "" : `\t${k.name}`
        }`,
      );
    }
  }
  return 0;
}

/** `key revoke KEY_ID`: any key, the last admin key too (with a warning) */
export async function keyRevoke({ db, need, asJson, io }: AdminCall): Promise<number> {
  const keyId = need("KEY_ID");
  // An operator may revoke any key, the organization's last admin key too (warned below).
  const result = await db.keys.revoke(keyId);
  if (result.outcome !== "revoked" && result.outcome !== "unchanged") {
    io.err(`No API key ${keyId}`);
    return 1;
  }
  if (result.outcome === "revoked") {
    await auditKeyChange(db, "key.revoked", result.key, {
      name: result.key.name,
      prefix: result.key.prefix,
    });
  }
  io.out(asJson ? JSON.stringify({ key_id: keyId, revoked: true }) : `${keyId} revoked`);
  const left = (await db.keys.list(result.key.org_id))
    .filter((k) => k.active && k.scopes.includes("admin"));
  if (left.length === 0) {
    io.err(
      `${result.key.org_id} has no active admin key left: keys can only be managed with the admin CLI until one is created (admin key create ${result.key.org_id})`,
    );
  }
  return 0;
}

/** A number option from 0 to `max` (`fallback` when absent); throws `UsageError` otherwise. */
function numberOption(
  options: Map<string, string>,
  name: string,
  fallback: number,
  max: number,
): number {
  const text = options.get(name);
  if (text === undefined) return fallback;
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value) || value < 0 || value > max) {
    throw new UsageError(`--${name} must be a number from 0 to ${max}`);
  }
  return value;
}

/** What `key create` asks for: every scope, no name and no expiry unless given. */
function keyOptions(options: Map<string, string>): NewKeyOptions {
  const scopes = options.get("scopes");
  const days = options.get("expires-in-days");
  let expiresAt: string | null = null;
  if (days !== undefined) {
    const value = numberOption(options, "expires-in-days", 0, 36_500);
    if (value <= 0) throw new UsageError("--expires-in-days must be more than 0");
    expiresAt = new Date(Date.now() + value * 86_400_000).toISOString();
  }
  try {
    return {
      name: parseKeyName(options.get("name")),
      scopes: scopes === undefined
        ? SCOPES
        : parseScopeList(scopes.split(",").map((s) => s.trim())),
      expiresAt,
    };
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function createdJson(apiKey: string, info: ApiKeyInfo) {
  return {
    api_key: apiKey,
    key_id: info.key_id,
    org_id: info.org_id,
    name: info.name,
    scopes: info.scopes,
    expires_at: info.expires_at,
  };
}

/** The audit event of a key change made here (by no key: `key_id` null). */
async function auditKeyChange(
  db: ControlPlane,
  action: "key.created" | "key.revoked" | "key.rotated",
  key: ApiKeyInfo,
  details: Record<string, unknown>,
): Promise<void> {
  const now = Date.now();
  await db.audit.record([{
    id: auditEventId(now),
    org_id: key.org_id,
    at: new Date(now).toISOString(),
    action,
    key_id: null,
    experiment_id: null,
    details: { target_key_id: key.key_id, ...details, via: "admin_cli" },
  }]);
}
