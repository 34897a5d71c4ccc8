/**
 * What an API key may do (docs/api.md, "Scopes"): `upload` (deliver datasets), `read` (every
 * `GET` of the organization's data and keys), `write` (settings, deleting datasets), `admin` (key
 * management and the audit trail). No scope implies another. Keys store their scopes as a comma
 * list in this order.
 *
 * @module
 */

export type Scope = "upload" | "read" | "write" | "admin";

/** Every scope, in the order they are stored and shown. */
export const SCOPES: readonly Scope[] = ["upload", "read", "write", "admin"];

/** True when `value` names a scope. */
export function isScope(value: unknown): value is Scope {
  return typeof value === "string" && (SCOPES as readonly string[]).includes(value);
}

/** The scopes as stored: a comma list in `SCOPES` order, each once. */
export function formatScopes(scopes: readonly Scope[]): string {
  return SCOPES.filter((scope) => scopes.includes(scope)).join(",");
}

const parsed = new Map<string, readonly Scope[]>();

/**
 * The scopes of a stored comma list (unknown names are ignored). Answers the same frozen array
 * for the same text, so a key's scopes cost nothing per request.
 */
export function parseScopes(text: string): readonly Scope[] {
  let scopes = parsed.get(text);
  if (scopes === undefined) {
    scopes = Object.freeze(SCOPES.filter((scope) => text.split(",").includes(scope)));
    if (parsed.size < 64) parsed.set(text, scopes);
  }
  return scopes;
}
