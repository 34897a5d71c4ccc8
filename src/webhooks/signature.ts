/**
 * Webhook signatures as Standard Webhooks 1.0 defines them: a secret is `whsec_` and the base64 of
 * random bytes; the signature of a message is `v1,` and the base64 of HMAC-SHA256 over
 * `id + "." + timestamp + "." + body`, keyed with the secret's decoded bytes. During a secret's
 * rotation both secrets sign, and the `webhook-signature` header lists both, space-separated.
 *
 * ```ts
 * const secret = newSecret();
 * const header = sign({ id: "evt_1", timestamp: 1767225600, body: '{"type":"webhook.test"}' }, [
 *   secret,
 * ]);
 * ```
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { createHmac, timingSafeEqual } from "node:crypto";

/** The prefix of every signing secret. */
export const SECRET_PREFIX = "whsec_";
/** Random bytes in a secret this service makes. */
export const SECRET_BYTES = 32;
/** The fewest bytes a secret may decode to (Standard Webhooks: 24). */
export const MIN_SECRET_BYTES = 24;
/** A signature older or newer than this is refused by `verify` (seconds). */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** What is signed: the event's id, the attempt's Unix seconds and the exact body bytes sent. */
export interface SignedContent {
  /** The `webhook-id`: the event's id, the same on every attempt; no `.` or white space. */
  id: string;
  /** The `webhook-timestamp`: Unix seconds of the attempt. */
  timestamp: number;
  /** The request body, exactly as sent (a string is signed as UTF-8). */
  body: string | Uint8Array;
}

const BASE64 =
  /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2,3})?$/;

/** A new secret: `whsec_` and the base64 of 32 random bytes. */
export function newSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(SECRET_BYTES));
  return SECRET_PREFIX + Buffer.from(bytes).toString("base64");
}

/**
 * The HMAC key of `secret`: its base64 part decoded. Throws a `TypeError` for a value that is not
 * `whsec_` and base64, a `RangeError` below 24 bytes; neither message repeats the secret.
 */
export function secretKey(secret: string): Uint8Array {
  if (!secret.startsWith(SECRET_PREFIX)) {
    throw new TypeError(`Cannot use the webhook secret: it does not start with ${SECRET_PREFIX}`);
  }
  const encoded = secret.slice(SECRET_PREFIX.length);
  if (!BASE64.test(encoded)) {
    throw new TypeError(
      `Cannot use the webhook secret: the part after ${SECRET_PREFIX} is not base64`,
    );
  }
  const key = new Uint8Array(Buffer.from(encoded, "base64"));
  if (key.length < MIN_SECRET_BYTES) {
    throw new RangeError(
      `Cannot use the webhook secret: it holds ${key.length} bytes, fewer than ${MIN_SECRET_BYTES}`,
    );
  }
  return key;
}

function checkContent(content: SignedContent): void {
  if (content.id === "" || /[.\s]/.test(content.id)) {
    throw new TypeError(
      `Cannot sign the webhook: its id ${
        JSON.stringify(content.id)
      } is empty or holds "." or a space`,
    );
  }
  if (!Number.isSafeInteger(content.timestamp) || content.timestamp < 0) {
    throw new RangeError(
      `Cannot sign the webhook: timestamp ${content.timestamp} is not whole Unix seconds`,
    );
  }
}

function mac(key: Uint8Array, content: SignedContent): Buffer {
  return createHmac("sha256", key)
    .update(`${content.id}.${content.timestamp}.`, "utf8")
    .update(content.body)
    .digest();
}

/**
 * The `webhook-signature` header value: `v1,<base64 MAC>` for each secret, in the order given,
 * separated by one space (two during a rotation's overlap: the new secret and the old).
 */
export function sign(content: SignedContent, secrets: readonly string[]): string {
  if (secrets.length === 0) throw new RangeError("Cannot sign the webhook: no secret");
  checkContent(content);
  return secrets.map((secret) => `v1,${mac(secretKey(secret), content).toString("base64")}`)
    .join(" ");
}

/** Options of {@linkcode verify}. */
export interface VerifyOptions {
  /** The receiver's clock, Unix seconds; default now. */
  now?: number;
  /** How far the timestamp may be from `now`, in seconds; default 300. */
  toleranceSeconds?: number;
}

/**
 * Whether `signature` (a `webhook-signature` header) holds a `v1` signature of `content` by
 * `secret`, and the timestamp is within the tolerance of now. For tests and the receiver example:
 * the service itself only signs.
 */
export function verify(
  content: SignedContent,
  signature: string,
  secret: string,
  options: VerifyOptions = {},
): boolean {
  const now = options.now ?? Math.floor(Date.now() / 1000);
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (Math.abs(now - content.timestamp) > tolerance) return false;
  try {
    checkContent(content);
  } catch {
    return false;
  }
  const expected = mac(secretKey(secret), content);
  let found = false;
  for (const entry of signature.split(" ")) {
    const [version, encoded] = entry.split(",", 2);
    if (version !== "v1" || encoded === undefined || !BASE64.test(encoded)) continue;
    const given = Buffer.from(encoded, "base64");
    // Every entry is compared, so the time taken does not say which one matched.
    if (given.length === expected.length && timingSafeEqual(given, expected)) found = true;
  }
  return found;
}
