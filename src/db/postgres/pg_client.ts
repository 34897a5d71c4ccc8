/**
 * The connection pool of the PostgreSQL driver (`npm:pg`, node-postgres) and what every
 * repository shares: `query` and `transaction` turn failures that pass with time (the server
 * restarting, refusing connections, a fail-over to a read-only standby, a serialization
 * conflict) into `DatabaseUnavailable`, so the HTTP layer answers 503 with `Retry-After` and
 * background work retries later. The pool opens new connections as they are needed, so service
 * resumes as soon as the server answers again.
 *
 * The URL is the driver's: `sslmode=disable|prefer|require|verify-ca|verify-full` (node-postgres
 * 8 verifies the certificate for every mode but `disable`, `no-verify` encrypts without
 * verifying), `sslrootcert=PATH` (a CA file), `sslcert=PATH`, `sslkey=PATH`,
 * `application_name`, `options`; plus `max` (connections, default 10) and `connect_timeout`
 * (seconds, default 5), read here. The password is never logged: messages name the host, the
 * user and the database only.
 */
import type { PgPool, PgPoolClient } from "./_pg.ts";
import { Pool, types } from "./_pg.ts";
import { DatabaseUnavailable } from "../errors.ts";

export type Row = Record<string, unknown>;

/** Something that runs a query: the pool, or a client inside a transaction. */
export interface Queryable {
  query<T extends Row = Row>(
    text: string,
    params?: unknown[],
  ): Promise<{ rows: T[]; rowCount: number | null }>;
}

/** Connection errors and SQLSTATEs that pass with time (or an operator's fix). */
const TRANSIENT_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
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

/** node-postgres's own connection failures carry no code, only these messages. */
const TRANSIENT_MESSAGES =
  /Connection terminated|connection error and is not queryable|timeout exceeded when trying to connect|Client was closed|Connection ended|not queryable/i;

/** True for failures that pass with time: the caller answers 503 or retries later. */
export function isTransient(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string") return TRANSIENT_CODES.has(code) || code.startsWith("08");
  return error instanceof Error && TRANSIENT_MESSAGES.test(error.message);
}

function unavailable(error: unknown): unknown {
  if (!isTransient(error)) return error;
  return new DatabaseUnavailable(
    `PostgreSQL: ${error instanceof Error ? error.message : String(error)}`,
    { cause: error },
  );
}

/** The pool and the error mapping every repository uses. */
export class PgClient implements Queryable {
  readonly pool: PgPool;

  constructor(pool: PgPool) {
    this.pool = pool;
  }

  async query<T extends Row = Row>(
    text: string,
    params: unknown[] = [],
  ): Promise<{ rows: T[]; rowCount: number | null }> {
    try {
      return await this.pool.query<T>(text, params);
    } catch (error) {
      throw unavailable(error);
    }
  }

  /**
   * Runs `fn` on one connection checked out of the pool (connection-level advisory locks,
   * transactions); a connection that failed meanwhile is discarded, not returned to the pool.
   * Failures of `fn` itself are its own; failures to get the connection are mapped.
   */
  async withConnection<T>(fn: (client: Queryable) => Promise<T>): Promise<T> {
    let client: PgPoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw unavailable(error);
    }
    // A checked-out connection that breaks between queries emits `error`: without a listener
    // that would be an uncaught exception.
    let broken: unknown = null;
    const onError = (error: unknown) => broken ??= error;
    client.on("error", onError);
    const mapped: Queryable = {
      query: async <R extends Row = Row>(text: string, params: unknown[] = []) => {
        try {
          return await client.query<R>(text, params);
        } catch (error) {
          if (isTransient(error)) broken ??= error;
          throw unavailable(error);
        }
      },
    };
    try {
      return await fn(mapped);
    } catch (error) {
      broken ??= error;
      throw error;
    } finally {
      client.off("error", onError);
      // Discarded after any failure: it may hold a lock or an open transaction.
      client.release(broken ? true : undefined);
    }
  }

  /** Runs `fn` in a transaction (committed when it resolves, rolled back when it throws). */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.withConnection(async (client) => {
      await client.query("BEGIN");
      const result = await fn(client);
      await client.query("COMMIT");
      return result;
    });
  }

  async end(): Promise<void> {
    await this.pool.end();
  }
}

const TIMESTAMPTZ = 1184;
const INT8 = 20;

/**
 * Values in the dialect's shape (`../dialect.ts`): a `TIMESTAMPTZ` as ISO-8601 text, a `BIGINT`
 * as a number (sizes and counters fit in 53 bits); others as node-postgres reads them.
 */
function typeParser(oid: number, format?: "text" | "binary"): (text: string) => unknown {
  const standard = types.getTypeParser(oid, format);
  if (oid === TIMESTAMPTZ) return (text) => (standard(text) as Date).toISOString();
  if (oid === INT8) return (text) => Number(text);
  return standard;
}

/** Parameters read here rather than by node-postgres. */
const OWN_PARAMS = ["max", "connect_timeout"];

/** Opens a pool for `url` (not connected yet: the first query connects). */
export function createPool(url: string, options: { max?: number } = {}): PgClient {
  const parsed = new URL(url);
  const params = parsed.searchParams;
  const max = Number(params.get("max") ?? options.max ?? 10);
  const connectTimeout = Number(params.get("connect_timeout") ?? 5);
  for (const name of OWN_PARAMS) params.delete(name);
  if (!params.has("application_name")) params.set("application_name", "abn");
  const pool = new Pool({
    connectionString: parsed.toString(),
    types: { getTypeParser: typeParser },
    max: Number.isInteger(max) && max > 0 ? max : 10,
    // Fail fast when the server is away: requests answer 503 instead of hanging.
    connectionTimeoutMillis: (connectTimeout > 0 ? connectTimeout : 5) * 1000,
    idleTimeoutMillis: 300_000,
  });
  // An idle connection that the server closes emits `error` on the pool: it is dropped and
  // replaced by the next query; without a listener it would be an uncaught exception.
  pool.on("error", () => {});
  return new PgClient(pool);
}

/**
 * One line naming why the database cannot be used at start-up (and what to do), without the
 * password.
 */
export function describeOpenFailure(failure: unknown, url: string): string {
  const error = failure instanceof DatabaseUnavailable ? failure.cause : failure;
  const u = new URL(url);
  const where = `PostgreSQL at ${u.hostname}:${u.port || "5432"}`;
  const user = decodeURIComponent(u.username) || "(the default user)";
  const database = decodeURIComponent(u.pathname.slice(1));
  const code = (error as { code?: unknown } | null)?.code;
  const message = (error instanceof Error ? error.message : String(error)).split("\n")[0];
  switch (code) {
    case "ECONNREFUSED":
      return `${where} refused the connection (ABN_DATABASE_URL): is the server running and listening there?`;
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `cannot resolve the database host ${u.hostname} (ABN_DATABASE_URL)`;
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
  }
  if (/timeout/i.test(message)) {
    return `${where} did not answer in time (ABN_DATABASE_URL): check the host, the port and firewalls`;
  }
  return `${where}, database "${database}", user "${user}": ${message}`;
}
