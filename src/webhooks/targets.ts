/**
 * Where webhooks may be sent. `checkWebhookUrl` is the shape of a URL (when an endpoint is saved);
 * `resolveAllowed` resolves its host and refuses it when any address is not public (when saved,
 * and again before every attempt, so a name that resolves to a private address later is refused
 * then). Refusals are `ServiceError("invalid_webhook_url")`, answered 400.
 *
 * @module
 */
import { ServiceError } from "../errors.ts";
import { ADDRESS_KIND_WORDS, addressKind, isIpAddress } from "./address_kind.ts";

/** The longest webhook URL accepted, in characters. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

function refuse(message: string): ServiceError {
  return new ServiceError("invalid_webhook_url", message);
}

/**
 * `raw` parsed, when it is an `http` or `https` URL with a host and without credentials, of at
 * most 2,048 characters; else a `ServiceError("invalid_webhook_url")`.
 */
export function checkWebhookUrl(raw: unknown): URL {
  if (typeof raw !== "string" || raw.trim() === "") {
    throw refuse('Invalid webhook URL: give "url" as an http:// or https:// URL');
  }
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) {
    throw refuse(
      `Invalid webhook URL: ${raw.length} characters, more than ${MAX_WEBHOOK_URL_LENGTH}`,
    );
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse(`Invalid webhook URL ${JSON.stringify(raw)}: not a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw refuse(
      `Invalid webhook URL: the scheme ${url.protocol.slice(0, -1)} is not http or https`,
    );
  }
  if (url.username !== "" || url.password !== "") {
    // The URL may hold a password: never repeat it.
    throw refuse(
      "Invalid webhook URL: it holds credentials (user:password@); the signature authenticates " +
        "the service, so leave them out",
    );
  }
  if (url.hostname === "") throw refuse(`Invalid webhook URL ${JSON.stringify(raw)}: no host`);
  return url;
}

/** Answers the IPv4 and IPv6 addresses of a host name. */
export type Resolver = (hostname: string, signal?: AbortSignal) => Promise<string[]>;

/** Options of {@linkcode resolveAllowed}. */
export interface ResolveAllowedOptions {
  /** Allow every address, private ones too (`ABN_WEBHOOK_ALLOW_PRIVATE`); default false. */
  allowPrivate?: boolean;
  /** Resolves a host name; default {@linkcode resolveDns}. */
  resolve?: Resolver;
  /** Aborts the resolution. */
  signal?: AbortSignal;
}

/**
 * The A and AAAA records of `hostname` (A first), through `Deno.resolveDns`; rejects when
 * neither type has an answer.
 */
export async function resolveDns(hostname: string, signal?: AbortSignal): Promise<string[]> {
  const answers = await Promise.allSettled([
    Deno.resolveDns(hostname, "A", { signal }),
    Deno.resolveDns(hostname, "AAAA", { signal }),
  ]);
  const addresses = answers.flatMap((a) => a.status === "fulfilled" ? a.value : []);
  if (addresses.length === 0) {
    const failure = answers.find((a) => a.status === "rejected");
    throw failure?.reason ?? new Error(`no address for ${hostname}`);
  }
  return addresses;
}

/** The host of `url` as an address or a name: brackets off, a final dot off. */
function hostOf(url: URL): string {
  const host = url.hostname;
  return host.startsWith("[") ? host.slice(1, -1) : host.replace(/\.$/, "");
}

/**
 * The addresses of `url`'s host (the literal itself for an IP address), when every one of them is
 * public or `allowPrivate` is set; else a `ServiceError("invalid_webhook_url")`. A host that does
 * not resolve is refused too. The message names the kind of address, never the address a name
 * resolved to (it would map the service's own network for whoever asked).
 */
export async function resolveAllowed(
  url: URL,
  options: ResolveAllowedOptions = {},
): Promise<string[]> {
  const host = hostOf(url);
  const literal = isIpAddress(host);
  const allowPrivate = options.allowPrivate ?? false;
  if (!literal && !allowPrivate && /(^|\.)localhost$/i.test(host)) {
    throw refuse(`Refused webhook URL: ${host} is a loopback name`);
  }
  let addresses: string[];
  if (literal) {
    addresses = [host];
  } else {
    options.signal?.throwIfAborted();
    try {
      addresses = await (options.resolve ?? resolveDns)(host, options.signal);
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      throw refuse(`Refused webhook URL: ${host} does not resolve (${errorText(error)})`);
    }
    if (addresses.length === 0) throw refuse(`Refused webhook URL: ${host} has no address`);
  }
  if (allowPrivate) return addresses;
  for (const address of addresses) {
    let kind;
    try {
      kind = addressKind(address);
    } catch {
      throw refuse(`Refused webhook URL: ${host} resolves to something that is not an address`);
    }
    if (kind === "public") continue;
    const where = literal ? `${host} is` : `${host} resolves to`;
    throw refuse(
      `Refused webhook URL: ${where} ${ADDRESS_KIND_WORDS[kind]}; webhooks go only to public ` +
        "addresses unless the service allows private targets (ABN_WEBHOOK_ALLOW_PRIVATE)",
    );
  }
  return addresses;
}

function errorText(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
