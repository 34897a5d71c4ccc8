/**
 * The PostgreSQL engine of the dialect, over the pool (`pg_client.ts`): `?` placeholders become
 * `$1, $2, …` (each statement's text converted once), blobs travel as `BYTEA`, a write outside a
 * transaction commits on its own (one round trip), and locks are advisory locks in our namespace:
 * a transaction's (`pg_advisory_xact_lock`, released at its end) and a connection's for timer
 * work (`pg_try_advisory_lock` on a connection checked out for the job, released at the end, or
 * with the connection when the instance dies or the server restarts).
 */
import { Buffer } from "node:buffer";
import type { ColumnType, Dialect, Sql, SqlRow, SqlValue, Transaction } from "../dialect.ts";
import type { PgClient, Queryable } from "./pg_client.ts";

/** Lock keys are (namespace, key) pairs; the namespace keeps ours apart from other users'. */
export const LOCK_NAMESPACE = 0x61626e; // "abn"
/** The namespace of the transaction locks of `Transaction.lock` (an experiment's history). */
export const ROW_LOCK_NAMESPACE = 0x61626f;

const TYPES: Record<ColumnType, string> = {
  text: "text",
  integer: "bigint",
  boolean: "boolean",
  time: "timestamptz",
};

/** Statement texts with `$n` placeholders, by their `?` form. */
const converted = new Map<string, string>();

/** `?` → `$1, $2, …` (no statement of ours has a `?` inside a literal). */
function numbered(sql: string): string {
  let text = converted.get(sql);
  if (text === undefined) {
    let n = 0;
    text = sql.replace(/\?/g, () => `$${++n}`);
    converted.set(sql, text);
  }
  return text;
}

function bind(params: readonly SqlValue[]): unknown[] {
  return params.map((p) =>
    p instanceof Uint8Array ? Buffer.from(p.buffer, p.byteOffset, p.byteLength) : p
  );
}

/** `Sql` over something that runs queries (the pool, or one connection in a transaction). */
function statements(db: Queryable): Sql {
  const all = async <T = SqlRow>(sql: string, params: readonly SqlValue[] = []) =>
    (await db.query(numbered(sql), bind(params))).rows as T[];
  return {
    all,
    get: async <T = SqlRow>(sql: string, params: readonly SqlValue[] = []) =>
      (await all<T>(sql, params))[0],
    run: async (sql, params = []) => (await db.query(numbered(sql), bind(params))).rowCount ?? 0,
    returning: all,
  };
}

export class PostgresDialect implements Dialect {
  readonly engine = "postgres";
  readonly singleProcess = false;
  readonly skipLocked = " FOR UPDATE SKIP LOCKED";
  readonly all: Sql["all"];
  readonly get: Sql["get"];
  readonly run: Sql["run"];
  readonly returning: Sql["returning"];
  readonly #db: PgClient;

  constructor(db: PgClient) {
    this.#db = db;
    ({ all: this.all, get: this.get, run: this.run, returning: this.returning } = statements(db));
  }

  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    return this.#db.transaction((client) => {
      const tx: Transaction = {
        ...statements(client),
        lock: async (name) => {
          await client.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [
            ROW_LOCK_NAMESPACE,
            name,
          ]);
        },
      };
      return fn(tx);
    });
  }

  async withLock<T>(name: string, fn: () => Promise<T>): Promise<T | undefined> {
    let running: Promise<T> | undefined;
    try {
      return await this.#db.withConnection(async (client) => {
        const { rows: [{ locked }] } = await client.query<{ locked: boolean }>(
          "SELECT pg_try_advisory_lock($1, hashtext($2)) AS locked",
          [LOCK_NAMESPACE, name],
        );
        if (!locked) return undefined;
        running = fn();
        try {
          return await running;
        } finally {
          await client.query("SELECT pg_advisory_unlock($1, hashtext($2))", [
            LOCK_NAMESPACE,
            name,
          ]);
        }
      });
    } catch (error) {
      // The job's own failure, or the lock's connection broke while it ran: the job finishes
      // all the same (its steps are idempotent) and its own outcome is what counts.
      if (running) return await running;
      throw error;
    }
  }

  rows(alias: string, columns: Readonly<Record<string, ColumnType>>): string {
    const typed = Object.entries(columns).map(([name, type]) => `${name} ${TYPES[type]}`);
    return `json_to_recordset(?::json) AS ${alias}(${typed.join(", ")})`;
  }

  timeIn(seconds: string): string {
    return seconds === "0" ? "now()" : `(now() + (${seconds})::float8 * interval '1 second')`;
  }

  forShare(alias: string): string {
    return ` FOR SHARE OF ${alias}`;
  }

  async reachable(): Promise<boolean> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<boolean>((resolve) => timer = setTimeout(resolve, 2000, false));
    try {
      return await Promise.race([
        this.#db.query("SELECT 1").then(() => true, () => false),
        timeout,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  close(): Promise<void> {
    return this.#db.end();
  }
}
