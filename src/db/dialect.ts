/**
 * What the repositories (`repos/`) need of a database, so that each is written once: statements
 * with `?` placeholders, reads and writes, transactions, locks, and the few SQL fragments where
 * SQLite and PostgreSQL differ. Two engines implement it: `sqlite/` (one file, writes
 * group-committed) and `postgres/` (a pool shared by every instance).
 *
 * Values cross it in one shape on both engines: timestamps are ISO-8601 text (`…T…Z`, ms),
 * integers are numbers, booleans read back as `true`/`false` or `1`/`0` (read them with
 * `Boolean`), blobs are `Uint8Array`s. Identifiers that lists are ordered by compare in byte
 * order on both (SQLite's BINARY collation; `COLLATE "C"` in PostgreSQL's schema).
 *
 * Upserts are written as both engines take them: `INSERT … ON CONFLICT (…) DO UPDATE SET x =
 * excluded.x WHERE …`; an `INSERT … SELECT` that upserts has a `WHERE` of its own (`WHERE true`),
 * which SQLite's parser needs.
 */

/** A value a statement takes. */
export type SqlValue = string | number | boolean | null | Uint8Array;

export type SqlRow = Record<string, unknown>;

/** Runs statements: outside a transaction (the engine itself), or inside one. */
export interface Sql {
  /** The rows a read answers. */
  all<T = SqlRow>(sql: string, params?: readonly SqlValue[]): Promise<T[]>;
  /** The first row a read answers, if any. */
  get<T = SqlRow>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined>;
  /**
   * Runs a write and answers how many rows it changed. Outside a transaction it commits on its
   * own: at once on PostgreSQL, in the next group commit on SQLite.
   */
  run(sql: string, params?: readonly SqlValue[]): Promise<number>;
  /** Runs a write with `RETURNING` and answers the rows, committed as `run` is. */
  returning<T = SqlRow>(sql: string, params?: readonly SqlValue[]): Promise<T[]>;
}

/** Statements inside one transaction. */
export interface Transaction extends Sql {
  /**
   * Holds the lock `name` until the transaction ends, so writers of one thing (an experiment's
   * history) take turns across instances. SQLite's write transaction holds the whole file.
   */
  lock(name: string): Promise<void>;
}

/** The type of a column of `rows` (see `Dialect.rows`). */
export type ColumnType = "text" | "integer" | "boolean" | "time";

export interface Dialect extends Sql {
  readonly engine: "sqlite" | "postgres";
  /** True when one process owns the database (SQLite): what it holds, no other instance does. */
  readonly singleProcess: boolean;
  /**
   * Runs `fn`'s statements in one transaction: committed when it resolves, rolled back when it
   * throws. On SQLite it joins the next group commit.
   */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
  /**
   * Runs `fn` while this instance holds the lock `name` on its connection (another instance
   * holding it: undefined, without running `fn`). SQLite: one process owns the file, the lock is
   * always held.
   */
  withLock<T>(name: string, fn: () => Promise<T>): Promise<T | undefined>;
  /**
   * A table source (for `FROM`) with the rows of one parameter, `alias(columns…)`: the parameter
   * is `rowsParam(objects)`. Many rows go in one statement on both engines.
   */
  rows(alias: string, columns: Readonly<Record<string, ColumnType>>): string;
  /**
   * The time `seconds` (an SQL expression, e.g. `?`) from now, as the database's clock tells,
   * in the engine's time type. `timeIn("0")` is now.
   */
  timeIn(seconds: string): string;
  /** ` FOR SHARE OF alias` where rows can be locked for reading (PostgreSQL), else nothing. */
  forShare(alias: string): string;
  /** ` FOR UPDATE SKIP LOCKED` where rows can be locked (PostgreSQL), else nothing. */
  readonly skipLocked: string;
  /** True when the database answers a trivial query (within two seconds). */
  reachable(): Promise<boolean>;
  close(): Promise<void>;
}

/** The parameter `Dialect.rows` reads: objects with the columns named there. */
export function rowsParam(rows: readonly Record<string, SqlValue | undefined>[]): string {
  return JSON.stringify(rows);
}

/** A stored timestamp (ISO text on both engines) as the interface's ISO text, or null. */
export function timeOrNull(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

/** A stored integer (a number, or the text PostgreSQL answers a `BIGINT` in) as a number. */
export function int(value: unknown): number {
  return Number(value);
}

/** As `int`, for a nullable column. */
export function intOrNull(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value);
}
