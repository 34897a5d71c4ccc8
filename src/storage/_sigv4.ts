/**
 * AWS Signature Version 4 for query-string (presigned) URLs, synchronous, on `src/sha256.ts`. Signs
 * exactly as the SDK's `getSignedUrl` does: the path is signed as sent (S3 does not normalize
 * it), the payload as `UNSIGNED-PAYLOAD`, and the query is sorted and URI-encoded the same way.
 */
import { HmacSha256, hmacSha256, sha256, toHex } from "../sha256.ts";

export interface SigV4Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  /** The token of temporary credentials, sent as `X-Amz-Security-Token`. */
  sessionToken?: string;
}

export interface SigV4PresignerOptions {
  /** The signing region, such as `us-east-1`. */
  region: string;
  /** The signing service; default `"s3"`. */
  service?: string;
}

export interface SigV4Request {
  /** `GET`, `PUT`, … */
  method: string;
  /** `{scheme}://{host}[:{port}]`, without a default port, as the URL will carry it. */
  origin: string;
  /** The path as sent, already URI-encoded (see `uriEncodePath`); signed unchanged. */
  path: string;
  /** Headers the client must send with exactly these values; all signed, with `host`. */
  headers?: Record<string, string>;
  /** Query parameters besides the signature's own; all signed. */
  query?: Record<string, string>;
  /** Lifetime of the URL in seconds: 1 to 604800 (a week). */
  expiresInSeconds: number;
  /** The signing time; default: now. */
  now?: Date;
}

const ALGORITHM = "AWS4-HMAC-SHA256";
const UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD";
const MAX_EXPIRES_SECONDS = 7 * 24 * 60 * 60;

function hexByte(char: string): string {
  return `%${char.charCodeAt(0).toString(16).toUpperCase()}`;
}

/** RFC 3986 encoding: everything but `A-Za-z0-9-_.~` is percent-encoded (UTF-8). */
export function uriEncode(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, hexByte);
}

/** Encodes each `/`-separated segment of an object key, keeping the slashes. */
export function uriEncodePath(key: string): string {
  return key.split("/").map(uriEncode).join("/");
}

/** `20130524T000000Z` */
function amzDate(now: Date): string {
  return now.toISOString().replace(/\.\d{3}Z$/, "Z").replace(/[-:]/g, "");
}

/** A header value as signed: line breaks become spaces, runs of spaces and tabs one space. */
function canonicalValue(value: string): string {
  return value.replace(/[\r\n]/g, " ").replace(/[ \t]+/g, " ").replace(/^ | $/g, "");
}

/** Signs URLs for one set of credentials in one region; the signing key is kept for the day. */
export class SigV4Presigner {
  #credentials: SigV4Credentials;
  #region: string;
  #service: string;
  #keyDate = "";
  #key: Uint8Array = new Uint8Array(0);

  constructor(credentials: SigV4Credentials, options: SigV4PresignerOptions) {
    if (credentials.accessKeyId === "" || credentials.secretAccessKey === "") {
      throw new TypeError("Cannot sign URLs: the access key id and the secret must not be empty");
    }
    this.#credentials = { ...credentials };
    this.#region = options.region;
    this.#service = options.service ?? "s3";
  }

  #signingMac: HmacSha256 | null = null;

  /** The day's signing key, as a ready HMAC (the key changes once a day). */
  #signingKey(shortDate: string): HmacSha256 {
    if (this.#keyDate !== shortDate || this.#signingMac === null) {
      let key = hmacSha256(`AWS4${this.#credentials.secretAccessKey}`, shortDate);
      for (const part of [this.#region, this.#service, "aws4_request"]) {
        key = hmacSha256(key, part);
      }
      this.#key = key;
      this.#signingMac = new HmacSha256(key);
      this.#keyDate = shortDate;
    }
    return this.#signingMac;
  }

  /** The full URL: `{origin}{path}?{query with the X-Amz-* parameters and the signature}`. */
  presign(request: SigV4Request): string {
    const { expiresInSeconds } = request;
    if (
      !Number.isInteger(expiresInSeconds) || expiresInSeconds < 1 ||
      expiresInSeconds > MAX_EXPIRES_SECONDS
    ) {
      throw new RangeError(
        `Cannot sign a URL: expiresInSeconds must be an integer from 1 to ${MAX_EXPIRES_SECONDS}, got ${expiresInSeconds}`,
      );
    }
    const longDate = amzDate(request.now ?? new Date());
    const shortDate = longDate.slice(0, 8);
    const scope = `${shortDate}/${this.#region}/${this.#service}/aws4_request`;

    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers ?? {})) {
      headers[name.toLowerCase()] = canonicalValue(value);
    }
    headers.host = request.origin.slice(request.origin.indexOf("//") + 2);
    const headerNames = Object.keys(headers).sort();
    const signedHeaders = headerNames.join(";");

    const query: Record<string, string> = {
      ...request.query,
      "X-Amz-Algorithm": ALGORITHM,
      "X-Amz-Credential": `${this.#credentials.accessKeyId}/${scope}`,
      "X-Amz-Date": longDate,
      "X-Amz-Expires": String(expiresInSeconds),
      "X-Amz-SignedHeaders": signedHeaders,
    };
    const { sessionToken } = this.#credentials;
    if (sessionToken) query["X-Amz-Security-Token"] = sessionToken;
    const pairs = Object.entries(query)
      .map(([name, value]) => [uriEncode(name), uriEncode(value)])
      .sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
    const canonicalQuery = pairs.map(([name, value]) => `${name}=${value}`).join("&");

    const canonicalRequest = [
      request.method,
      request.path,
      canonicalQuery,
      ...headerNames.map((name) => `${name}:${headers[name]}`),
      "",
      signedHeaders,
      UNSIGNED_PAYLOAD,
    ].join("\n");
    const stringToSign = [
      ALGORITHM,
      longDate,
      scope,
      toHex(sha256(canonicalRequest)),
    ].join("\n");
    const signature = toHex(this.#signingKey(shortDate).digest(stringToSign));

    // The signature joins the other parameters in sorted order, as the SDK writes it.
    const at = pairs.findIndex(([name]) => name > "X-Amz-Signature");
    pairs.splice(at === -1 ? pairs.length : at, 0, ["X-Amz-Signature", signature]);
    return `${request.origin}${request.path}?${
      pairs.map(([name, value]) => `${name}=${value}`).join("&")
    }`;
  }
}
