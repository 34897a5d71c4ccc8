/**
 * Bearer authentication (docs/api.md, "Authentication"): exactly `Authorization: Bearer abn_…`. Missing,
 * malformed, unknown or revoked keys answer 401; a key of a deactivated organization 403.
 * Lookups are remembered for half a second, so admin changes apply within a second.
 */
import type { ControlPlane, KeyOwner } from "../db/control_plane.ts";
import type { LastUsedRecorder } from "../db/api_keys.ts";
import { hashKey, isWellFormedKey } from "../db/api_keys.ts";
import { ApiError } from "./errors.ts";
import { type Scope, SCOPES } from "./context.ts";

export interface Principal {
  orgId: string;
  keyId: string;
  /** What the key may do. */
  scopes: readonly Scope[];
}

/** Throws 403 `insufficient_scope` unless `principal` holds one of `anyOf`. */
export function requireScope(principal: Principal, anyOf: readonly Scope[]): void {
  if (anyOf.some((scope) => principal.scopes.includes(scope))) return;
  const needed = anyOf.map((scope) => `'${scope}'`).join(" or ");
  throw new ApiError(
    "insufficient_scope",
    `This API key lacks the ${needed} scope this request needs; its scopes: ${
      principal.scopes.join(", ") || "none"
    }`,
  );
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
 * query, and an admin change (revoke, deactivate) is still seen within a second. A request that
 * finds an entry older than `REFRESH_AHEAD_MS` starts one refresh in the background, so a hot key
 * is refreshed before it expires; requests that miss while a lookup of the same key is under way
 * wait for that one. With PostgreSQL, 50 requests arriving as an entry expired would otherwise
 * each wait for a query (a p99 several times the median).
 */
interface KeyCache {
  recent: Map<string, { owner: KeyOwner | null; at: number }>;
  pending: Map<string, Promise<KeyOwner | null>>;
}
const caches = new WeakMap<ControlPlane, KeyCache>();
const RECENT_MS = 500;
const REFRESH_AHEAD_MS = 300;

function refresh(db: ControlPlane, cache: KeyCache, hash: string): Promise<KeyOwner | null> {
  const inFlight = cache.pending.get(hash);
  if (inFlight) return inFlight;
  const started = performance.now();
  const query = db.keys.ownerByHash(hash).then((owner) => {
    if (cache.recent.size >= 10_000) cache.recent.clear();
    // Dated from when the query started: what it read is at most that old.
    cache.recent.set(hash, { owner, at: started });
    return owner;
  }).finally(() => cache.pending.delete(hash));
  cache.pending.set(hash, query);
  return query;
}

function lookup(db: ControlPlane, key: string): Promise<KeyOwner | null> {
  let cache = caches.get(db);
  if (!cache) {
    cache = { recent: new Map(), pending: new Map() };
    caches.set(db, cache);
  }
  const hash = hashKey(key);
  const hit = cache.recent.get(hash);
  const age = hit ? performance.now() - hit.at : Infinity;
  if (hit && age < RECENT_MS) {
    // A failed refresh is retried by the next request; once expired, requests wait for one.
    if (age > REFRESH_AHEAD_MS) refresh(db, cache, hash).catch(() => {});
    return Promise.resolve(hit.owner);
  }
  return refresh(db, cache, hash);
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
  return { orgId: owner.orgId, keyId: owner.keyId, scopes: SCOPES };
}
