/**
 * The service's API as the page uses it: the key lives in sessionStorage and travels only in the
 * `Authorization: Bearer` header, never in a URL.
 */

const KEY_NAME = "abn.api_key";
const BASE = "/api/v1";

/** An API answer other than 2xx, or no answer at all (`status` 0). */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} code
   * @param {string} message
   * @param {string | null} requestId
   */
  constructor(status, code, message, requestId) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.requestId = requestId;
  }
}

/** @returns {string | null} */
export function storedKey() {
  return sessionStorage.getItem(KEY_NAME);
}

/** @param {string} key */
export function storeKey(key) {
  sessionStorage.setItem(KEY_NAME, key);
}

export function forgetKey() {
  sessionStorage.removeItem(KEY_NAME);
}

/** @type {(error: ApiError) => void} */
let onAuthFailure = () => {};

/** @type {string[]} */
let scopes = [];

/**
 * What the signed-in key may do, as the service listed it at sign-in (`GET /keys/`).
 * @param {{ current_key_id?: string, keys?: { key_id: string, scopes?: string[] }[] }} info
 */
export function setKeyScopes(info) {
  const own = info.keys?.find((k) => k.key_id === info.current_key_id);
  scopes = own?.scopes ?? [];
}

/** The signed-in key's scopes. @returns {string[]} */
export function keyScopes() {
  return scopes;
}

/**
 * Whether an answer means the key itself is no longer accepted (revoked, expired, its
 * organization deactivated), as opposed to one request it may not make (`insufficient_scope`).
 * @param {ApiError} error
 */
export function keyRefused(error) {
  return error.status === 401 || (error.status === 403 && error.code === "org_deactivated");
}

/**
 * Called when a signed-in request answers that the key is refused (401: revoked or expired; 403
 * `org_deactivated`); a 403 `insufficient_scope` is the request's own error, not a sign-out.
 * @param {(error: ApiError) => void} handler
 */
export function setAuthFailureHandler(handler) {
  onAuthFailure = handler;
}

/**
 * Calls the API and answers its JSON.
 * @param {string} path below `/api/v1`, e.g. `/datasets/`
 * @param {{ method?: string, body?: unknown, key?: string }} [options]
 *   `key` signs in with that key instead of the stored one (and skips the auth-failure handler)
 * @returns {Promise<any>}
 * @throws {ApiError}
 */
export async function api(path, options = {}) {
  const key = options.key ?? storedKey();
  /** @type {Record<string, string>} */
  const headers = { accept: "application/json" };
  if (key) headers.authorization = `Bearer ${key}`;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  let response;
  try {
    response = await fetch(BASE + path, {
      method: options.method ?? "GET",
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      cache: "no-store",
      credentials: "omit",
    });
  } catch {
    throw new ApiError(
      0,
      "network",
      "The service cannot be reached. Check your connection; the page retries by itself.",
      null,
    );
  }
  const requestId = response.headers.get("x-request-id");
  /** @type {any} */
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (response.ok) return body;
  const error = new ApiError(
    response.status,
    body?.error?.code ?? "http_" + response.status,
    body?.error?.message ?? `The service answered ${response.status}.`,
    body?.error?.request_id ?? requestId,
  );
  if (keyRefused(error) && options.key === undefined) onAuthFailure(error);
  throw error;
}

/**
 * A path segment for an experiment id (ids are `A-Za-z0-9._-`, encoded all the same).
 * @param {string} experimentId
 */
export function datasetPath(experimentId) {
  return `/datasets/${encodeURIComponent(experimentId)}/`;
}

/**
 * Fetches an export with the key in the header (a link could not carry it) and hands it to the
 * browser as a download named as the service names it (`Content-Disposition`).
 * @param {string} path below `/api/v1`, e.g. `/datasets/x/history/?format=csv`
 * @returns {Promise<string>} the file name
 * @throws {ApiError}
 */
export async function download(path) {
  const key = storedKey();
  let response;
  try {
    response = await fetch(BASE + path, {
      headers: key ? { authorization: `Bearer ${key}` } : {},
      cache: "no-store",
      credentials: "omit",
    });
  } catch {
    throw new ApiError(0, "network", "The service cannot be reached.", null);
  }
  if (!response.ok) {
    /** @type {any} */
    let body = null;
    try {
      body = await response.json();
    } catch {
      body = null;
    }
    throw new ApiError(
      response.status,
      body?.error?.code ?? "http_" + response.status,
      body?.error?.message ?? `The service answered ${response.status}.`,
      body?.error?.request_id ?? response.headers.get("x-request-id"),
    );
  }
  const disposition = response.headers.get("content-disposition") ?? "";
  const filename = /filename="([^"]+)"/.exec(disposition)?.[1] ?? "export.csv";
  const url = URL.createObjectURL(await response.blob());
  const link = document.createElement("a");
  link.href = url;
  link.download = filename;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
  return filename;
}
