/**
 * Bearer authentication (spec part 5): exactly `Authorization: Bearer abn_…`. Missing,
 * malformed, unknown or revoked keys answer 401; a key of a deactivated organization 403.
 * Every request reads the database, so admin changes apply at once.
 */
import type { Database } from "../db/database.ts";
import type { LastUsedRecorder } from "../db/api_keys.ts";
import { findKeyOwner, isWellFormedKey } from "../db/api_keys.ts";
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

export function authenticate(
  db: Database,
  header: string | null,
  recorder?: LastUsedRecorder,
): Principal {
  const key = bearerKey(header);
  if (!isWellFormedKey(key)) {
    throw new ApiError("unauthorized", "Invalid API key");
  }
  const owner = findKeyOwner(db, key);
  if (!owner || owner.revoked) {
    throw new ApiError("unauthorized", "Invalid API key");
  }
  if (!owner.orgActive) {
    throw new ApiError("org_deactivated", "The organization of this API key is deactivated");
  }
  recorder?.touch(owner.keyId);
  return { orgId: owner.orgId, keyId: owner.keyId };
}
