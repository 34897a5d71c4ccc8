/**
 * The bodies of the key endpoints, checked field by field: a refusal is 400
 * `invalid_key_request` naming the field (an unparsable body is `invalid_json` before this).
 */
import { ApiError } from "../http/errors.ts";
import { isScope, type Scope, SCOPES } from "../scopes.ts";

/** What `POST /keys/` asks for. */
export interface KeyRequest {
  name: string | null;
  scopes: Scope[];
  expiresAt: string | null;
}

/** The longest key name, in characters. */
export const MAX_KEY_NAME = 100;
/** The longest rotation overlap, in hours (a week). */
export const MAX_OVERLAP_HOURS = 168;

/** ISO-8601 date and time with a zone (`Z` or `±hh:mm`). */
const ISO_TIME =
  /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d)(?::(\d\d)(?:\.\d{1,9})?)?(?:Z|[+-](\d\d):(\d\d))$/;

/** The time of an ISO-8601 text naming a real calendar date and clock time, or NaN. */
function isoTime(text: string): number {
  const m = ISO_TIME.exec(text);
  if (!m) return NaN;
  const parts = m.slice(1).map((part) => Number(part ?? 0));
  const [year, month, day, hour, minute, second, zoneHours, zoneMinutes] = parts;
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  const real = month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth && hour <= 23 &&
    minute <= 59 && second <= 59 && zoneHours <= 23 && zoneMinutes <= 59;
  return real ? Date.parse(text) : NaN;
}

function refuse(message: string): ApiError {
  return new ApiError("invalid_key_request", message);
}

function noOtherFields(body: Record<string, unknown>, known: readonly string[]): void {
  const unknown = Object.keys(body).filter((field) => !known.includes(field));
  if (unknown.length > 0) {
    throw refuse(`Unknown field ${unknown.join(", ")}: the body takes ${known.join(", ")}`);
  }
}

/** A key's name: trimmed, at most `MAX_KEY_NAME` characters, no control characters. */
export function parseKeyName(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string") throw refuse("name must be a string");
  const name = value.trim();
  // deno-lint-ignore no-control-regex
  if (name.length > MAX_KEY_NAME || /[\u0000-\u001f\u007f]/.test(name)) {
    throw refuse(`name must be at most ${MAX_KEY_NAME} characters, without control characters`);
  }
  return name === "" ? null : name;
}

/** A non-empty list of known scopes, each once, in `SCOPES` order. */
export function parseScopeList(value: unknown): Scope[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw refuse(`scopes must be a non-empty list of ${SCOPES.join(", ")}`);
  }
  const unknown = value.filter((scope) => !isScope(scope));
  if (unknown.length > 0) {
    throw refuse(
      `Unknown scope ${unknown.map((s) => JSON.stringify(s)).join(", ")}: scopes are ${
        SCOPES.join(", ")
      }`,
    );
  }
  return SCOPES.filter((scope) => value.includes(scope));
}

/** An expiry in the future, as ISO-8601 UTC, or null (never). */
export function parseExpiry(value: unknown, now = Date.now()): string | null {
  if (value === undefined || value === null) return null;
  const time = typeof value === "string" ? isoTime(value) : NaN;
  if (!Number.isFinite(time)) {
    throw refuse("expires_at must be an ISO-8601 time with a zone, e.g. 2027-01-31T00:00:00Z");
  }
  if (time <= now) throw refuse(`expires_at ${value} is not in the future`);
  return new Date(time).toISOString();
}

/** The body of `POST /keys/`: `{"name"?, "scopes": [...], "expires_at"?}`. */
export function parseKeyRequest(body: Record<string, unknown>): KeyRequest {
  noOtherFields(body, ["name", "scopes", "expires_at"]);
  return {
    name: parseKeyName(body.name),
    scopes: parseScopeList(body.scopes),
    expiresAt: parseExpiry(body.expires_at),
  };
}

/** The body of `POST /keys/{key_id}/rotate/`: `{"overlap_hours"?: 24}`, 0 to 168. */
export function parseRotateRequest(body: Record<string, unknown>): { overlapHours: number } {
  noOtherFields(body, ["overlap_hours"]);
  const value = body.overlap_hours ?? 24;
  if (
    typeof value !== "number" || !Number.isFinite(value) || value < 0 ||
    value > MAX_OVERLAP_HOURS
  ) {
    throw refuse(`overlap_hours must be a number of hours from 0 to ${MAX_OVERLAP_HOURS}`);
  }
  return { overlapHours: value };
}
