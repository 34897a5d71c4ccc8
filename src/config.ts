/**
 * Configuration: every `ABN_*` variable is read once, validated, and frozen. A bad value stops
 * start-up with one line naming the variable and the accepted form.
 */
import { DEFAULT_RETRY_SCHEDULE, parseRetrySchedule } from "./webhooks/schedule.ts";

export interface Config {
  host: string;
  port: number;
  publicUrl: string;
  dataDir: string;
  dbPath: string;
  storage: "local" | "s3";
  s3: {
    endpoint?: string;
    publicEndpoint?: string;
    region: string;
    bucket: string;
    accessKeyId?: string;
    secretAccessKey?: string;
    forcePathStyle: boolean;
    createBucket: boolean;
  };
  maxUploadBytes: number;
  presignTtlSeconds: number;
  cleanupIntervalSeconds: number;
  scanIntervalSeconds: number;
  /** How often a full listing of storage repairs the dataset catalog (also at start-up). */
  reconcileIntervalSeconds: number;
  bodyIdleTimeoutSeconds: number;
  /** An upload body averaging less than this after its first minute is abandoned; 0: never. */
  bodyMinBytesPerSecond: number;
  /** Upload bodies streaming at once; one more answers 503. 0: no cap. */
  maxConcurrentUploads: number;
  /** Upload bodies one organization streams at once; one more answers 429. 0: no cap. */
  maxConcurrentUploadsPerOrg: number;
  /** The storage quota of an organization without one of its own, in bytes; absent: none. */
  orgQuotaBytes?: number;
  rateLimitPerMinute: number;
  tlsCert?: string;
  tlsKey?: string;
  storageEventsToken?: string;
  /**
   * `postgres://…`: PostgreSQL holds the control plane, shared by every instance; unset: the
   * SQLite file at `dbPath`. Holds a password: never log it (see `redactDatabaseUrl`).
   */
  databaseUrl?: string;
  /** With PostgreSQL: how long an instance's claim on an analysis job lasts without renewal. */
  analysisLeaseSeconds: number;
  /** Snapshots kept per experiment in its history; the oldest beyond are dropped. */
  historyMaxSnapshots: number;
  /** Days the audit trail keeps an event; the clean-up deletes older ones. */
  auditRetentionDays: number;
  /** Webhook attempts, seconds after the first try (`src/webhooks/schedule.ts`). */
  webhookRetrySchedule: readonly number[];
  /** The longest a webhook attempt may take, resolution and response included. */
  webhookTimeoutSeconds: number;
  /** Webhooks may go to loopback, private and link-local addresses (tests, on-prem installs). */
  webhookAllowPrivate: boolean;
}

/** A configuration value that cannot be used; the message names the variable. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

type Env = Record<string, string | undefined>;

function text(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === "" ? undefined : value;
}

/** The shortest storage events token accepted (a guessable one would open the route). */
export const MIN_TOKEN_LENGTH = 24;

/** A secret of at least `minLength` characters; the message never repeats it. */
function secret(env: Env, name: string, minLength: number): string | undefined {
  const raw = text(env, name);
  if (raw !== undefined && raw.length < minLength) {
    throw new ConfigError(
      `Invalid ${name}: a token of ${raw.length} characters is too easy to guess; use at least ${minLength} (e.g. openssl rand -hex 24)`,
    );
  }
  return raw;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = text(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(
      `Invalid ${name}=${JSON.stringify(raw)}: expected a whole number from ${min} to ${max}`,
    );
  }
  return Number(raw);
}

/** As `integer`, without a default: absent when the variable is unset. */
function optionalInteger(env: Env, name: string, min: number, max: number): number | undefined {
  return text(env, name) === undefined ? undefined : integer(env, name, min, min, max);
}

/** The values a true-or-false variable may take, in any case. */
const TRUE_WORDS: readonly string[] = ["1", "true", "yes", "on"];
const FALSE_WORDS: readonly string[] = ["0", "false", "no", "off"];

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = text(env, name)?.toLowerCase();
  if (raw === undefined) return fallback;
  if (TRUE_WORDS.includes(raw)) return true;
  if (FALSE_WORDS.includes(raw)) return false;
  throw new ConfigError(`Invalid ${name}=${JSON.stringify(raw)}: expected true or false`);
}

function url(env: Env, name: string): string | undefined {
  const raw = text(env, name);
  if (raw === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`Invalid ${name}=${JSON.stringify(raw)}: expected an http(s) URL`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new ConfigError(`Invalid ${name}=${JSON.stringify(raw)}: expected an http(s) URL`);
  }
  if (raw.includes("?") || raw.includes("#")) {
    throw new ConfigError(
      `Invalid ${name}=${JSON.stringify(raw)}: expected a base URL without a query or fragment`,
    );
  }
  return raw.replace(/\/+$/, "");
}

/**
 * The database URL with its password replaced by `***`, for messages and logs: the user
 * information's password (everything between the user's `:` and the last `@`, so a password
 * holding `@` or `/` is hidden whole) and a `password=` query parameter.
 */
export function redactDatabaseUrl(raw: string): string {
  const query = raw.replace(/([?&]password=)[^&#]*/gi, "$1***");
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(query);
  if (!scheme) return query;
  const rest = query.slice(scheme[0].length);
  const at = rest.lastIndexOf("@");
  const colon = rest.indexOf(":");
  if (at < 0 || colon < 0 || colon > at) return query;
  return `${scheme[0]}${rest.slice(0, colon)}:***${rest.slice(at)}`;
}

function databaseUrl(env: Env): string | undefined {
  const raw = text(env, "ABN_DATABASE_URL");
  if (raw === undefined) return undefined;
  let parsed: URL | undefined;
  try {
    parsed = new URL(raw);
  } catch { /* reported below */ }
  if (!parsed || (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:")) {
    // The value may hold a password: never repeat it.
    throw new ConfigError(
      "Invalid ABN_DATABASE_URL: expected postgres://user:password@host:port/database",
    );
  }
  if (parsed.hostname === "" || parsed.pathname.length <= 1) {
    throw new ConfigError(
      `Invalid ABN_DATABASE_URL=${
        JSON.stringify(redactDatabaseUrl(raw))
      }: name the host and the database, postgres://user:password@host:port/database`,
    );
  }
  return raw;
}

function retrySchedule(env: Env, name: string): readonly number[] {
  const raw = text(env, name);
  if (raw === undefined) return DEFAULT_RETRY_SCHEDULE;
  try {
    return Object.freeze(parseRetrySchedule(raw));
  } catch (error) {
    throw new ConfigError(
      `Invalid ${name}=${JSON.stringify(raw)}: ${(error as Error).message}; expected ascending ` +
        "seconds after the first try, e.g. 0,5,300,1800",
    );
  }
}

/** Reads and validates the configuration from environment variables. */
export function loadConfig(env: Env): Readonly<Config> {
  const host = text(env, "ABN_HOST") ?? "127.0.0.1";
  const port = integer(env, "ABN_PORT", 8080, 0, 65535);
  const dataDir = text(env, "ABN_DATA_DIR") ?? "./data";
  const storage = text(env, "ABN_STORAGE") ?? "local";
  if (storage !== "local" && storage !== "s3") {
    throw new ConfigError(`Invalid ABN_STORAGE=${JSON.stringify(storage)}: expected local or s3`);
  }
  const publicHost = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  const tlsCert = text(env, "ABN_TLS_CERT");
  const tlsKey = text(env, "ABN_TLS_KEY");
  if ((tlsCert === undefined) !== (tlsKey === undefined)) {
    throw new ConfigError("Invalid ABN_TLS_CERT/ABN_TLS_KEY: set both PEM files or neither");
  }
  const scheme = tlsCert ? "https" : "http";
  const hostPart = publicHost.includes(":") ? `[${publicHost}]` : publicHost;
  const givenUrl = url(env, "ABN_PUBLIC_URL");
  if (givenUrl === undefined && port === 0) {
    throw new ConfigError(
      "Invalid ABN_PORT=0: a port chosen by the system needs ABN_PUBLIC_URL, which upload URLs " +
        "are built from",
    );
  }
  const publicUrl = givenUrl ?? `${scheme}://${hostPart}:${port}`;
  if (givenUrl !== undefined && /\/api\/v1(\/|$)/i.test(new URL(givenUrl).pathname)) {
    throw new ConfigError(
      `Invalid ABN_PUBLIC_URL=${JSON.stringify(publicUrl)}: give the base URL without /api/v1`,
    );
  }

  const endpoint = url(env, "ABN_S3_ENDPOINT");
  const bucket = text(env, "ABN_S3_BUCKET") ?? "";
  if (storage === "s3" && bucket === "") {
    throw new ConfigError("Missing ABN_S3_BUCKET: required when ABN_STORAGE=s3");
  }
  if (bucket !== "" && !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
    throw new ConfigError(
      `Invalid ABN_S3_BUCKET=${
        JSON.stringify(bucket)
      }: expected an S3 bucket name (3-63 of a-z 0-9 . -)`,
    );
  }
  const accessKeyId = text(env, "ABN_S3_ACCESS_KEY_ID");
  const secretAccessKey = text(env, "ABN_S3_SECRET_ACCESS_KEY");
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) {
    throw new ConfigError(
      "Invalid ABN_S3_ACCESS_KEY_ID/ABN_S3_SECRET_ACCESS_KEY: set both or neither",
    );
  }

  const cleanupIntervalSeconds = integer(env, "ABN_CLEANUP_INTERVAL_SECONDS", 600, 1, 3600);
  return Object.freeze({
    host,
    port,
    publicUrl,
    dataDir,
    dbPath: text(env, "ABN_DB_PATH") ?? `${dataDir}/abn.sqlite`,
    storage,
    s3: Object.freeze({
      endpoint,
      publicEndpoint: url(env, "ABN_S3_PUBLIC_ENDPOINT") ?? endpoint,
      region: text(env, "ABN_S3_REGION") ?? "us-east-1",
      bucket,
      accessKeyId,
      secretAccessKey,
      forcePathStyle: boolean(env, "ABN_S3_FORCE_PATH_STYLE", endpoint !== undefined),
      createBucket: boolean(env, "ABN_S3_CREATE_BUCKET", false),
    }),
    maxUploadBytes: integer(env, "ABN_MAX_UPLOAD_BYTES", 209_715_200, 1, 5 * 2 ** 40),
    presignTtlSeconds: integer(env, "ABN_PRESIGN_TTL_SECONDS", 900, 1, 604_800),
    cleanupIntervalSeconds,
    scanIntervalSeconds: integer(env, "ABN_SCAN_INTERVAL_SECONDS", 15, 1, 3600),
    reconcileIntervalSeconds: integer(env, "ABN_RECONCILE_INTERVAL_SECONDS", 3600, 1, 604_800),
    bodyIdleTimeoutSeconds: integer(env, "ABN_BODY_IDLE_TIMEOUT_SECONDS", 30, 1, 3600),
    bodyMinBytesPerSecond: integer(env, "ABN_BODY_MIN_BYTES_PER_SECOND", 1024, 0, 1 << 30),
    maxConcurrentUploads: integer(env, "ABN_MAX_CONCURRENT_UPLOADS", 64, 0, 100_000),
    maxConcurrentUploadsPerOrg: integer(env, "ABN_MAX_CONCURRENT_UPLOADS_PER_ORG", 8, 0, 100_000),
    orgQuotaBytes: optionalInteger(env, "ABN_ORG_QUOTA_BYTES", 0, Number.MAX_SAFE_INTEGER),
    rateLimitPerMinute: integer(env, "ABN_RATE_LIMIT_PER_MINUTE", 0, 0, 1_000_000),
    tlsCert,
    tlsKey,
    storageEventsToken: secret(env, "ABN_STORAGE_EVENTS_TOKEN", MIN_TOKEN_LENGTH),
    databaseUrl: databaseUrl(env),
    analysisLeaseSeconds: integer(env, "ABN_ANALYSIS_LEASE_SECONDS", 60, 1, 3600),
    historyMaxSnapshots: integer(env, "ABN_HISTORY_MAX_SNAPSHOTS", 1000, 1, 1_000_000),
    auditRetentionDays: integer(env, "ABN_AUDIT_RETENTION_DAYS", 365, 1, 36_500),
    webhookRetrySchedule: retrySchedule(env, "ABN_WEBHOOK_RETRY_SCHEDULE"),
    webhookTimeoutSeconds: integer(env, "ABN_WEBHOOK_TIMEOUT_SECONDS", 15, 1, 300),
    webhookAllowPrivate: boolean(env, "ABN_WEBHOOK_ALLOW_PRIVATE", false),
  });
}
