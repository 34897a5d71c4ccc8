/**
 * One delivery attempt of a webhook: the target checked again (a name may resolve elsewhere since
 * the endpoint was saved), the body signed with the attempt's timestamp, one `POST`, and the
 * answer turned into a plain outcome for the sender to record and schedule from. Redirects are
 * never followed; the attempt, resolution and response together, takes at most the timeout; at
 * most 64 KiB of the response body is read, and of its headers only `Retry-After`.
 *
 * An `http` target is connected to the address that was checked, not resolved a second time, so
 * a name cannot answer a public address to the check and a private one to the connection. An
 * `https` target is resolved again by the connection; an address swapped in between would have
 * to present a certificate for the name, which an internal host does not hold.
 *
 * @module
 */
import { ServiceError } from "../errors.ts";
import { readAtMost } from "./read_at_most.ts";
import { sign } from "./signature.ts";
import { checkWebhookUrl, resolveAllowed, type Resolver } from "./targets.ts";
import type { PinnedClients } from "./pinned_clients.ts";

/** The `User-Agent` of every attempt. */
export const USER_AGENT = "abn-webhooks/1.0 (Standard Webhooks)";
/** The most bytes of a response body read; the rest is cancelled. */
export const MAX_RESPONSE_BYTES = 65_536;
/** The longest `Retry-After` honoured, in seconds (10 hours, the default schedule's last step). */
export const MAX_RETRY_AFTER_SECONDS = 36_000;
/** The longest `error` text of an outcome, in characters. */
const MAX_ERROR_CHARS = 500;
/** Characters of the response body quoted in an outcome's error. */
const EXCERPT_CHARS = 200;

/** What an attempt sends: the same id and body on every attempt of a delivery. */
export interface WebhookMessage {
  /** The endpoint's URL. */
  url: string;
  /** The event's id (`webhook-id`). */
  id: string;
  /** The JSON body, exactly as signed and sent. */
  body: string;
  /** The endpoint's secrets: the current one, and the previous during a rotation's overlap. */
  secrets: readonly string[];
}

/**
 * The outcome of one attempt. `error` is the text for the deliveries list (`last_error`):
 * what happened, with the start of the response body when there was one.
 */
export type AttemptOutcome =
  /** Any 2xx. */
  | { kind: "delivered"; status: number }
  /** 410: the endpoint asks to be sent nothing more (the sender disables it). */
  | { kind: "gone"; status: 410; error: string }
  /** 429 or 503: try again, not before `retryAfterSeconds` when the endpoint said so. */
  | { kind: "retry"; status: 429 | 503; retryAfterSeconds?: number; error: string }
  /** Anything else: another status, a redirect, a timeout, a refused target, a network error. */
  | { kind: "failed"; status?: number; error: string };

/** Options of {@linkcode attemptDelivery}. */
export interface AttemptOptions {
  /** The longest the whole attempt may take, in seconds; default 15. */
  timeoutSeconds?: number;
  /** Allow loopback, private and link-local targets; default false. */
  allowPrivate?: boolean;
  /** Resolves the target's host; default `Deno.resolveDns` (A and AAAA). */
  resolve?: Resolver;
  /** The clock, in milliseconds since the epoch; default `Date.now`. */
  now?: () => number;
  /** The `User-Agent` header; default {@linkcode USER_AGENT}. */
  userAgent?: string;
  /** The longest `Retry-After` honoured, in seconds; default 36,000. */
  maxRetryAfterSeconds?: number;
  /** Aborts the attempt (a stopping service); the outcome is then `failed`. */
  signal?: AbortSignal;
  /**
   * Where `http` attempts take their client (kept between attempts); default a client of this
   * attempt's own, closed at its end.
   */
  clients?: PinnedClients;
}

function clip(text: string, max: number): string {
  // deno-lint-ignore no-control-regex
  const clean = text.replace(/[\u0000-\u001f\u007f]+/g, " ").replace(/\s+/g, " ").trim();
  return clean.length > max ? `${clean.slice(0, max - 1)}…` : clean;
}

function failed(error: string, status?: number): AttemptOutcome {
  const text = clip(error, MAX_ERROR_CHARS);
  return status === undefined
    ? { kind: "failed", error: text }
    : { kind: "failed", status, error: text };
}

/**
 * The seconds a `Retry-After` value asks to wait: whole seconds, or an HTTP date (the seconds
 * from `nowMs` until it, at least 0), at most `cap`; undefined when absent or unreadable.
 */
export function retryAfterSeconds(
  value: string | null,
  nowMs: number,
  cap = MAX_RETRY_AFTER_SECONDS,
): number | undefined {
  if (value === null) return undefined;
  const text = value.trim().slice(0, 64);
  if (/^\d+$/.test(text)) return Math.min(Number(text), cap);
  // An HTTP date names its day and month in letters; a bare "1.5" is no date.
  const at = /[A-Za-z]{3}/.test(text) ? Date.parse(text) : NaN;
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(0, Math.ceil((at - nowMs) / 1000)), cap);
}

/** Settles like `promise`, or rejects with the signal's reason when it aborts first. */
function unlessAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

function describeFailure(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? error.cause.message : "";
  return cause !== "" && !error.message.includes(cause)
    ? `${error.message}: ${cause}`
    : error.message;
}

/** `address` as the host of a connection: IPv6 in brackets. */
function hostOfAddress(address: string): string {
  return address.includes(":") ? `[${address}]` : address;
}

function answered(response: Response, excerpt: string): string {
  const status = `${response.status}${
    response.statusText ? ` ${clip(response.statusText, 60)}` : ""
  }`;
  return `The endpoint answered ${status}${excerpt ? `: ${excerpt}` : ""}`;
}

function outcomeOf(
  response: Response,
  excerpt: string,
  nowMs: number,
  cap: number,
): AttemptOutcome {
  const status = response.status;
  if (status >= 200 && status < 300) return { kind: "delivered", status };
  if (response.type === "opaqueredirect" || (status >= 300 && status < 400)) {
    return failed(
      `The endpoint answered ${status}, a redirect; redirects are not followed: give the URL it ` +
        "redirects to",
      status || undefined,
    );
  }
  if (status === 410) {
    return { kind: "gone", status, error: clip(answered(response, excerpt), MAX_ERROR_CHARS) };
  }
  if (status === 429 || status === 503) {
    const wait = retryAfterSeconds(response.headers.get("retry-after"), nowMs, cap);
    const error = clip(answered(response, excerpt), MAX_ERROR_CHARS);
    return wait === undefined
      ? { kind: "retry", status, error }
      : { kind: "retry", status, retryAfterSeconds: wait, error };
  }
  return failed(answered(response, excerpt), status);
}

/**
 * Makes one attempt of `message`: never throws, answers the outcome. The `webhook-timestamp` is
 * the attempt's own time; a 2xx whose body is slow is delivered (its body is read only until the
 * timeout).
 */
export async function attemptDelivery(
  message: WebhookMessage,
  options: AttemptOptions = {},
): Promise<AttemptOutcome> {
  const now = options.now ?? Date.now;
  const timeoutSeconds = options.timeoutSeconds ?? 15;
  const deadline = new AbortController();
  const timer = setTimeout(
    () => deadline.abort(new DOMException("timed out", "TimeoutError")),
    timeoutSeconds * 1000,
  );
  const signal = options.signal
    ? AbortSignal.any([deadline.signal, options.signal])
    : deadline.signal;
  const stopped = () =>
    deadline.signal.aborted
      ? failed(`Timed out after ${timeoutSeconds} s`)
      : failed("Cancelled: the service is stopping");
  let client: Deno.HttpClient | undefined;
  let pinned: [string, number] | undefined;
  try {
    const url = checkWebhookUrl(message.url);
    const addresses = await unlessAborted(
      resolveAllowed(url, { allowPrivate: options.allowPrivate, resolve: options.resolve, signal }),
      signal,
    );
    const timestamp = Math.floor(now() / 1000);
    const signature = sign({ id: message.id, timestamp, body: message.body }, message.secrets);
    if (url.protocol === "http:") {
      const hostname = hostOfAddress(addresses[0]);
      const port = Number(url.port || 80);
      if (options.clients) {
        pinned = [hostname, port];
        client = options.clients.take(hostname, port);
      } else {
        client = Deno.createHttpClient({ proxy: { transport: "tcp", hostname, port } });
      }
    }
    const response = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "user-agent": options.userAgent ?? USER_AGENT,
        "webhook-id": message.id,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": signature,
      },
      body: message.body,
      redirect: "manual",
      signal,
      client,
    });
    const { bytes } = await readAtMost(response.body, MAX_RESPONSE_BYTES);
    const excerpt = clip(
      new TextDecoder().decode(bytes.subarray(0, EXCERPT_CHARS * 4)),
      EXCERPT_CHARS,
    );
    return outcomeOf(
      response,
      excerpt,
      now(),
      options.maxRetryAfterSeconds ?? MAX_RETRY_AFTER_SECONDS,
    );
  } catch (error) {
    if (signal.aborted) return stopped();
    if (error instanceof ServiceError) return failed(error.message);
    // A secret or an id that cannot sign is the service's own fault, not the endpoint's.
    if (error instanceof Error && /^Cannot (sign|use) the webhook/.test(error.message)) {
      return failed(error.message);
    }
    return failed(`Network error: ${describeFailure(error)}`);
  } finally {
    clearTimeout(timer);
    if (pinned) options.clients!.release(...pinned);
    else client?.close();
  }
}
