/**
 * The few node-postgres (`npm:pg`) calls the driver makes, typed here: its `@types/pg` package
 * depends on a current `@types/node`, which would replace the Node types Deno ships for the
 * whole program. As the S3 store depends on a narrow view of its SDK, so does this driver.
 */
import pg from "pg";

export interface QueryResult<T> {
  rows: T[];
  rowCount: number | null;
}

export interface PgQueryable {
  query<T>(text: string, params?: unknown[]): Promise<QueryResult<T>>;
}

/** A connection checked out of the pool. */
export interface PgPoolClient extends PgQueryable {
  on(event: "error", listener: (error: Error) => void): void;
  off(event: "error", listener: (error: Error) => void): void;
  /** Back to the pool; `true` (or an error) discards the connection instead. */
  release(destroy?: boolean | Error): void;
}

export interface PgPool extends PgQueryable {
  connect(): Promise<PgPoolClient>;
  on(event: "error", listener: (error: Error) => void): void;
  end(): Promise<void>;
}

/** One connection of its own (tests, one-off statements). */
export interface PgConnection extends PgQueryable {
  connect(): Promise<void>;
  end(): Promise<void>;
}

/** Reads a column's text (or binary) form into a value. */
export interface PgTypes {
  getTypeParser(oid: number, format?: "text" | "binary"): (text: string) => unknown;
}

export interface PgPoolConfig {
  connectionString: string;
  /** How column values are read; default node-postgres's parsers. */
  types?: PgTypes;
  max?: number;
  connectionTimeoutMillis?: number;
  idleTimeoutMillis?: number;
}

const driver = pg as unknown as {
  types: PgTypes;
  Pool: new (config: PgPoolConfig) => PgPool;
  Client: new (config: { connectionString: string }) => PgConnection;
};

export const Pool = driver.Pool;
export const Client = driver.Client;
/** node-postgres's own parsers. */
export const types = driver.types;
