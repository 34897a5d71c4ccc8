/**
 * Bearer authentication (docs/api.md, "Authentication"): exactly `Authorization: Bearer abn_…`. Missing,
 * malformed, unknown or revoked keys answer 401; a key of a deactivated organization 403.
 * Lookups are remembered for half a second, so admin changes apply within a second.
 */
import type { ControlPlane, KeyOwner } from "../db/control_plane.ts";
import type { LastUsedRecorder } from "../db/api_keys.ts";
import { hashKey, isWellFormedKey } from "../db/api_keys.ts";
import { ApiError } from "./errors.ts";

export interface Principal {
  orgId: string;
  keyId: string;
}

const BEARER = /^Bearer (\S+)$/;

/** The key of an `Authorization` header, or throws 401. */
export function bearerKey(header: string | null): string {
  if (header === null || header === "") {
    throw new ApiError(
      "unauthorized",
      "Missing Authorization header: send 'Authorization: Bearer <API_KEY>'",
    );
  }
  const match = BEARER.exec(header);
  if (!match) {
    throw new ApiError(
      "unauthorized",
      "Malformed Authorization header: expected 'Bearer ' followed by the API key",
    );
  }
  return match[1];
}

/**
 * Key lookups answered in the last half second, by key hash: a hot key costs one hash, not a
 * query, and an admin change (revoke, deactivate) is still seen within a second.
 */
const recent = new WeakMap<ControlPlane, Map<string, { owner: KeyOwner | null; at: number }>>();
const RECENT_MS = 500;

async function lookup(db: ControlPlane, key: string): Promise<KeyOwner | null> {
  let cache = recent.get(db);
  if (!cache) {
    cache = new Map();
    recent.set(db, cache);
  }
  const hash = hashKey(key);
  const hit = cache.get(hash);
  if (hit && performance.now() - hit.at < RECENT_MS) return hit.owner;
  const owner = await db.keys.ownerByHash(hash);
  if (cache.size >= 10_000) cache.clear();
  cache.set(hash, { owner, at: performance.now() });
  return owner;
}

export async function authenticate(
  db: ControlPlane,
  header: string | null,
  recorder?: LastUsedRecorder,
): Promise<Principal> {
  const key = bearerKey(header);
  if (!isWellFormedKey(key)) {
    throw new ApiError("unauthorized", "Invalid API key");
  }
  const owner = await lookup(db, key);
  if (!owner || owner.revoked) {
    throw new ApiError("unauthorized", "Invalid API key");
  }
  if (!owner.orgActive) {
    throw new ApiError("org_deactivated", "The organization of this API key is deactivated");
  }
  recorder?.touch(owner.keyId);
  return { orgId: owner.orgId, keyId: owner.keyId };
}
