/**
 * The SQLite file that holds organizations, API keys, settings and analysis results.
 * WAL mode so the admin CLI can write while the server reads; migrations keyed by
 * `PRAGMA user_version`.
 */
import { DatabaseSync } from "node:sqlite";
import type { StatementSync } from "node:sqlite";

const MIGRATIONS: string[] = [
  `CREATE TABLE orgs (
     id TEXT PRIMARY KEY,
     name TEXT NOT NULL,
     active INTEGER NOT NULL DEFAULT 1,
     created_at TEXT NOT NULL
   );
   CREATE TABLE api_keys (
     id TEXT PRIMARY KEY,
     org_id TEXT NOT NULL REFERENCES orgs(id),
     prefix TEXT NOT NULL,
     hash TEXT NOT NULL UNIQUE,
     created_at TEXT NOT NULL,
     last_used_at TEXT,
     revoked_at TEXT
   );
   CREATE INDEX api_keys_org ON api_keys(org_id);
   CREATE TABLE settings (
     org_id TEXT NOT NULL,
     experiment_id TEXT NOT NULL,
     json TEXT NOT NULL,
     updated_at TEXT NOT NULL,
     PRIMARY KEY (org_id, experiment_id)
   );
   CREATE TABLE analyses (
     org_id TEXT NOT NULL,
     experiment_id TEXT NOT NULL,
     etag TEXT NOT NULL,
     size_bytes INTEGER NOT NULL,
     status TEXT NOT NULL,
     error TEXT,
     rows INTEGER,
     result TEXT,
     delivered_at TEXT NOT NULL,
     started_at TEXT,
     finished_at TEXT,
     PRIMARY KEY (org_id, experiment_id)
   );`,
];

export type Database = DatabaseSync;

/** Opens (creating if needed) the database file and brings its schema up to date. */
export function openDatabase(path: string): DatabaseSync {
  const db = new DatabaseSync(path);
  db.exec("PRAGMA busy_timeout = 5000");
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  db.exec("PRAGMA foreign_keys = ON");
  migrate(db);
  return db;
}

function migrate(db: DatabaseSync): void {
  const row = db.prepare("PRAGMA user_version").get() as { user_version: number };
  let version = row.user_version;
  while (version < MIGRATIONS.length) {
    db.exec("BEGIN IMMEDIATE");
    try {
      const current = (db.prepare("PRAGMA user_version").get() as { user_version: number })
        .user_version;
      if (current === version) {
        db.exec(MIGRATIONS[version]);
        db.exec(`PRAGMA user_version = ${version + 1}`);
      }
      db.exec("COMMIT");
    } catch (error) {
      db.exec("ROLLBACK");
      throw error;
    }
    version = (db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version;
  }
}

/** Answers true when the database answers a trivial query. */
export function databaseReachable(db: DatabaseSync): boolean {
  try {
    stmt(db, "SELECT 1").get();
    return true;
  } catch {
    return false;
  }
}

/** Current time as an ISO-8601 string, the format every timestamp column uses. */
export function nowIso(): string {
  return new Date().toISOString();
}

const statements = new WeakMap<DatabaseSync, Map<string, StatementSync>>();

/** A prepared statement, prepared once per database handle and reused (hot paths parse no SQL). */
export function stmt(db: DatabaseSync, sql: string): StatementSync {
  let cache = statements.get(db);
  if (!cache) {
    cache = new Map();
    statements.set(db, cache);
  }
  let statement = cache.get(sql);
  if (!statement) {
    statement = db.prepare(sql);
    cache.set(sql, statement);
  }
  return statement;
}

/**
 * SQLite failures that pass with time or an operator's fix (another connection holds the lock
 * past the busy timeout, a read-only or full disk), as opposed to programming errors. The HTTP
 * layer answers them 503 with Retry-After; background writers skip and retry later.
 */
const UNAVAILABLE =
  /database is locked|database table is locked|readonly database|disk I\/O error|database or disk is full|unable to open database file/;

export function isDatabaseUnavailable(error: unknown): boolean {
  return error instanceof Error && (error as { code?: string }).code === "ERR_SQLITE_ERROR" &&
    UNAVAILABLE.test(error.message);
}
