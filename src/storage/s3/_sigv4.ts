/**
 * AWS Signature Version 4 for query-string (presigned) URLs, synchronous, on `src/crypto/sha256.ts`. Signs
 * exactly as the SDK's `getSignedUrl` does: the path is signed as sent (S3 does not normalize
 * it), the payload as `UNSIGNED-PAYLOAD`, and the query is sorted and URI-encoded the same way.
 */
import { HmacSha256, hmacSha256, sha256Hex } from "../../crypto/sha256.ts";

export interface SigV4Credentials {
  accessKeyId: string;
  secretAccessKey: string;
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

interface SignedQuery {
  canonicalQuery: string;
  /** The URL's query before and after `X-Amz-Signature=…`, with their `&`. */
  before: string;
  after: string;
}
const UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD";
const MAX_EXPIRES_SECONDS = 7 * 24 * 60 * 60;

function hexByte(char: string): string {
  return `%${char.charCodeAt(0).toString(16).toUpperCase()}`;
}

/** Text that RFC 3986 encoding leaves as it is. */
const UNRESERVED = /^[A-Za-z0-9\-_.~]*$/;
/** The same, with the slashes of a path. */
const UNRESERVED_PATH = /^[A-Za-z0-9\-_.~/]*$/;

/** RFC 3986 encoding: everything but `A-Za-z0-9-_.~` is percent-encoded (UTF-8). */
export function uriEncode(text: string): string {
  if (UNRESERVED.test(text)) return text;
  return encodeURIComponent(text).replace(/[!'()*]/g, hexByte);
}

/** Encodes each `/`-separated segment of an object key, keeping the slashes. */
export function uriEncodePath(key: string): string {
  if (UNRESERVED_PATH.test(key)) return key;
  return key.split("/").map(uriEncode).join("/");
}

/** The last `amzDate` answered: URLs signed within one second share it. */
let dateSecond = NaN;
let dateText = "";

/** `20130524T000000Z` */
function amzDate(now: Date): string {
  const second = Math.floor(now.getTime() / 1000);
  if (second !== dateSecond) {
    dateText = now.toISOString().replace(/\.\d{3}Z$/, "Z").replace(/[-:]/g, "");
    dateSecond = second;
  }
  return dateText;
}

/** A header value as signed: line breaks become spaces, runs of spaces and tabs one space. */
function canonicalValue(value: string): string {
  if (!/[\r\n\t]| {2}|^ | $/.test(value)) return value;
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

  /** Canonical queries made lately: within one second they differ only by shape. */
  #queries = new Map<string, SignedQuery>();

  /**
   * The canonical query string (sorted, URI-encoded) and the URL's query around the signature,
   * which joins the other parameters in sorted order, as the SDK writes it.
   */
  #query(
    extra: Record<string, string> | undefined,
    scope: string,
    longDate: string,
    expiresInSeconds: number,
    signedHeaders: string,
  ): SignedQuery {
    const extraKey = extra === undefined ? "" : JSON.stringify(extra);
    const cacheKey = `${extraKey}\n${longDate}\n${expiresInSeconds}\n${signedHeaders}`;
    const cached = this.#queries.get(cacheKey);
    if (cached) return cached;
    const query: Record<string, string> = {
      ...extra,
      "X-Amz-Algorithm": ALGORITHM,
      "X-Amz-Credential": `${this.#credentials.accessKeyId}/${scope}`,
      "X-Amz-Date": longDate,
      "X-Amz-Expires": String(expiresInSeconds),
      "X-Amz-SignedHeaders": signedHeaders,
    };
    const pairs = Object.entries(query)
      .map(([name, value]) => `${uriEncode(name)}=${uriEncode(value)}`)
      .sort((a, b) => {
        const x = a.slice(0, a.indexOf("="));
        const y = b.slice(0, b.indexOf("="));
        return x < y ? -1 : x > y ? 1 : 0;
      });
    const at = pairs.findIndex((pair) => pair.slice(0, pair.indexOf("=")) > "X-Amz-Signature");
    const split = at === -1 ? pairs.length : at;
    const head = pairs.slice(0, split).join("&");
    const tail = pairs.slice(split).join("&");
    const signed = {
      canonicalQuery: pairs.join("&"),
      before: head === "" ? "" : `${head}&`,
      after: tail === "" ? "" : `&${tail}`,
    };
    if (this.#queries.size >= 32) this.#queries.clear();
    this.#queries.set(cacheKey, signed);
    return signed;
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

    const { canonicalQuery, before, after } = this.#query(
      request.query,
      scope,
      longDate,
      expiresInSeconds,
      signedHeaders,
    );
    const canonicalRequest = [
      request.method,
      request.path,
      canonicalQuery,
      ...headerNames.map((name) => `${name}:${headers[name]}`),
      "",
      signedHeaders,
      UNSIGNED_PAYLOAD,
    ].join("\n");
    const stringToSign = `${ALGORITHM}\n${longDate}\n${scope}\n${sha256Hex(canonicalRequest)}`;
    const signature = this.#signingKey(shortDate).hex(stringToSign);

    return `${request.origin}${request.path}?${before}X-Amz-Signature=${signature}${after}`;
  }
}
