/**
 * The connection pool of the PostgreSQL driver (`npm:postgres`, postgres.js) and what every
 * repository shares: `run` turns failures that pass with time (the server restarting, refusing
 * connections, a fail-over to a read-only standby, a serialization conflict) into
 * `DatabaseUnavailable`, so the HTTP layer answers 503 with `Retry-After` and background work
 * retries later; postgres.js reconnects by itself once the server is back.
 *
 * The URL is the driver's (`sslmode=disable|prefer|require|verify-full`, `sslrootcert=system`,
 * `max`, `connect_timeout`, `idle_timeout`, and any server setting such as `statement_timeout`),
 * plus `sslrootcert=PATH` (a CA file: the server's certificate is verified against it),
 * `sslcert=PATH` and `sslkey=PATH` (a client certificate), which are read here. The password is
 * never logged: messages name the host, the user and the database only.
 */
import postgres from "postgres";
import { DatabaseUnavailable } from "../control_plane.ts";

export type Sql = postgres.Sql;
export type TxSql = postgres.TransactionSql;

/** Lock keys are (namespace, key) pairs; the namespace keeps ours apart from other users'. */
export const LOCK_NAMESPACE = 0x61626e; // "abn"

/** Connection errors and SQLSTATEs that pass with time (or an operator's fix). */
const TRANSIENT = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "CONNECTION_CLOSED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
  "57P01", // admin_shutdown: the server is stopping
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now: the server is starting
  "53000", // insufficient_resources
  "53100", // disk_full
  "53200", // out_of_memory
  "53300", // too_many_connections
  "40001", // serialization_failure
  "40P01", // deadlock_detected
  "55P03", // lock_not_available
  "25006", // read_only_sql_transaction: a fail-over left us on a standby
  "57014", // query_canceled (statement_timeout)
]);

/** True for failures that pass with time: the caller answers 503 or retries later. */
export function isTransient(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && (TRANSIENT.has(code) || code.startsWith("08"));
}

/** The pool and the error mapping every repository uses. */
export class PgClient {
  readonly sql: Sql;

  constructor(sql: Sql) {
    this.sql = sql;
  }

  /** Runs `work`; a transient failure becomes `DatabaseUnavailable`. */
  async run<T>(work: (sql: Sql) => Promise<T>): Promise<T> {
    try {
      return await work(this.sql);
    } catch (error) {
      if (isTransient(error)) {
        throw new DatabaseUnavailable(
          `PostgreSQL: ${error instanceof Error ? error.message : String(error)}`,
          { cause: error },
        );
      }
      throw error;
    }
  }
}

/** Parameters read here rather than by postgres.js (it would send them to the server). */
const FILE_PARAMS = ["sslrootcert", "sslcert", "sslkey"] as const;

/** Opens a pool for `url` (not connected yet: the first query connects). */
export function createPool(url: string, options: { max?: number } = {}): Sql {
  const parsed = new URL(url);
  const params = parsed.searchParams;
  const files: Partial<Record<typeof FILE_PARAMS[number], string>> = {};
  for (const name of FILE_PARAMS) {
    const value = params.get(name);
    if (value !== null && !(name === "sslrootcert" && value === "system")) {
      files[name] = Deno.readTextFileSync(value);
      params.delete(name);
    }
  }
  let ssl: postgres.Options<Record<string, never>>["ssl"] = undefined;
  if (files.sslrootcert || files.sslcert || files.sslkey) {
    const mode = params.get("sslmode") ?? "verify-full";
    params.delete("sslmode");
    ssl = {
      // As libpq: a root certificate means the server's certificate is verified against it.
      rejectUnauthorized: files.sslrootcert !== undefined || mode.startsWith("verify"),
      ...(files.sslrootcert ? { ca: files.sslrootcert } : {}),
      ...(files.sslcert ? { cert: files.sslcert } : {}),
      ...(files.sslkey ? { key: files.sslkey } : {}),
    };
  }
  const given = (name: string) => params.has(name);
  return postgres(parsed.toString(), {
    ...(ssl ? { ssl } : {}),
    ...(given("max") ? {} : { max: options.max ?? 10 }),
    // Fail fast when the server is away (requests answer 503 instead of hanging).
    ...(given("connect_timeout") ? {} : { connect_timeout: 5 }),
    ...(given("idle_timeout") ? {} : { idle_timeout: 300 }),
    onnotice: () => {},
    connection: { application_name: params.get("application_name") ?? "abn" },
  });
}

/**
 * One line naming why the database cannot be used at start-up (and what to do), without the
 * password.
 */
export function describeOpenFailure(error: unknown, url: string): string {
  const u = new URL(url);
  const where = `PostgreSQL at ${u.hostname}:${u.port || "5432"}`;
  const user = decodeURIComponent(u.username) || "(the default user)";
  const database = decodeURIComponent(u.pathname.slice(1));
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  switch (code) {
    case "ECONNREFUSED":
      return `${where} refused the connection (ABN_DATABASE_URL): is the server running and listening there?`;
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `cannot resolve the database host ${u.hostname} (ABN_DATABASE_URL)`;
    case "CONNECT_TIMEOUT":
    case "ETIMEDOUT":
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return `${where} did not answer (ABN_DATABASE_URL): check the host, the port and firewalls`;
    case "28P01":
      return `${where} refused the password of user "${user}" (ABN_DATABASE_URL)`;
    case "28000":
      return `${where} does not let user "${user}" connect (ABN_DATABASE_URL; pg_hba.conf): ${message}`;
    case "3D000":
      return `${where} has no database "${database}" (ABN_DATABASE_URL): create it first (CREATE DATABASE)`;
    case "42501":
      return `user "${user}" lacks a permission in database "${database}": ${message}; grant it, or let the schema's owner run \`main.ts admin db migrate\` first`;
    default:
      return `${where}, database "${database}", user "${user}": ${message}`;
  }
}
