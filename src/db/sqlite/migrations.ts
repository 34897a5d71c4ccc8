/**
 * The SQLite schema, as numbered migrations applied in order at open, each in its own
 * transaction, keyed by `PRAGMA user_version` (so the admin CLI and the server may open the file
 * at the same time).
 */
import type { DatabaseSync } from "node:sqlite";

export const MIGRATIONS: readonly string[] = [
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
  // 2: the dataset catalog (an index of storage) and the upload grants of two-step deliveries.
  // TEXT compares with SQLite's BINARY collation: byte order, as the list promises.
  `CREATE TABLE datasets (
     org_id TEXT NOT NULL,
     experiment_id TEXT NOT NULL,
     key TEXT NOT NULL,
     size_bytes INTEGER NOT NULL,
     etag TEXT NOT NULL,
     delivered_at TEXT NOT NULL,
     observed_at TEXT NOT NULL,
     analysis_status TEXT NOT NULL,
     PRIMARY KEY (org_id, experiment_id)
   );
   CREATE UNIQUE INDEX datasets_key ON datasets(key);
   CREATE INDEX datasets_pending ON datasets(observed_at) WHERE analysis_status = 'pending';
   CREATE TABLE grants (
     key TEXT PRIMARY KEY,
     org_id TEXT NOT NULL,
     experiment_id TEXT NOT NULL,
     expires_at TEXT NOT NULL
   );
   CREATE INDEX grants_expiry ON grants(expires_at);`,
  // 3: experiment health and history. Which analysis made a result (so a newer one re-runs it);
  // one snapshot per delivered content (SHA-256), numbered per experiment; the summary of each
  // experiment's last analysed delivery (users by id hash, rows per date) as one blob.
  `ALTER TABLE analyses ADD COLUMN analysis_version INTEGER;
   CREATE TABLE history_snapshots (
     org_id TEXT NOT NULL,
     experiment_id TEXT NOT NULL,
     seq INTEGER NOT NULL,
     sha256 TEXT NOT NULL,
     etag TEXT NOT NULL,
     delivered_at TEXT NOT NULL,
     analysed_at TEXT NOT NULL,
     figures TEXT NOT NULL,
     PRIMARY KEY (org_id, experiment_id, seq),
     UNIQUE (org_id, experiment_id, sha256)
   );
   CREATE TABLE delivery_summaries (
     org_id TEXT NOT NULL,
     experiment_id TEXT NOT NULL,
     etag TEXT NOT NULL,
     sha256 TEXT NOT NULL,
     delivered_at TEXT NOT NULL,
     summary BLOB NOT NULL,
     changes TEXT,
     updated_at TEXT NOT NULL,
     PRIMARY KEY (org_id, experiment_id)
   );`,
  // 4: the delivery summaries' blobs in parts of 64 KiB (`summary` stays empty), so that neither
  // SQLite nor the service ever holds one in a single block of 10 MB and more, which the system
  // allocator would keep resident after it was freed. Blobs stored before move to part 0.
  `CREATE TABLE delivery_summary_parts (
     org_id TEXT NOT NULL,
     experiment_id TEXT NOT NULL,
     part INTEGER NOT NULL,
     bytes BLOB NOT NULL,
     PRIMARY KEY (org_id, experiment_id, part)
   );
   INSERT INTO delivery_summary_parts (org_id, experiment_id, part, bytes)
     SELECT org_id, experiment_id, 0, summary FROM delivery_summaries;
   UPDATE delivery_summaries SET summary = x'';`,
  // 5: analysis jobs, as PostgreSQL has them since its migration 2: one analysis queue over this
  // table on both engines (on one host a lease is simply held). Times are ISO-8601 text.
  `CREATE TABLE analysis_jobs (
     org_id TEXT NOT NULL,
     experiment_id TEXT NOT NULL,
     object_key TEXT NOT NULL,
     etag TEXT NOT NULL,
     size_bytes INTEGER NOT NULL,
     delivered_at TEXT NOT NULL,
     validated INTEGER NOT NULL,
     source TEXT NOT NULL,
     generation INTEGER NOT NULL DEFAULT 1,
     attempts INTEGER NOT NULL DEFAULT 0,
     offered_at TEXT NOT NULL,
     lease_owner TEXT,
     lease_until TEXT,
     sha256 TEXT,
     lane TEXT NOT NULL,
     has_dimensions INTEGER,
     PRIMARY KEY (org_id, experiment_id)
   );
   CREATE INDEX analysis_jobs_claim ON analysis_jobs(lane, offered_at, delivered_at DESC);`,
  // 6: scoped keys with names and expiry (keys made before keep every scope), the key that asked
  // for an upload grant, and the audit trail, stored in its reading order (newest first per
  // organization: the primary key) with one index for one action's events: two b-trees an event
  // instead of five with a rowid table and indexes by id, organization, action and age (10.3 µs of
  // CPU an event, batches of 150, against 11.3-12.0 µs; 2026-12-01).
  `ALTER TABLE api_keys ADD COLUMN name TEXT;
   ALTER TABLE api_keys ADD COLUMN scopes TEXT NOT NULL DEFAULT 'upload,read,write,admin';
   ALTER TABLE api_keys ADD COLUMN expires_at TEXT;
   ALTER TABLE grants ADD COLUMN key_id TEXT;
   CREATE TABLE audit_events (
     org_id TEXT NOT NULL,
     at TEXT NOT NULL,
     id TEXT NOT NULL,
     action TEXT NOT NULL,
     key_id TEXT,
     experiment_id TEXT,
     details TEXT NOT NULL,
     PRIMARY KEY (org_id, at, id)
   ) WITHOUT ROWID;
   CREATE INDEX audit_events_action ON audit_events(org_id, action, at, id);`,
  // 7: each organization's storage quota in bytes (NULL: the default, ABN_ORG_QUOTA_BYTES).
  `ALTER TABLE orgs ADD COLUMN quota_bytes INTEGER;`,
  // 8: webhooks. Endpoints per organization (events as ",type,…," or ",*,"; the previous secret
  // signs too until its time), and the outbox: one delivery per event and endpoint, written in
  // the transaction of the change it reports, claimed by the sender along the due index. Each
  // analysis keeps the facts of its experiment's last ready result, which the experiment events
  // compare with (a new delivery's pending row clears the result, not these).
  `CREATE TABLE webhook_endpoints (
     id TEXT PRIMARY KEY,
     org_id TEXT NOT NULL,
     url TEXT NOT NULL,
     description TEXT NOT NULL,
     events TEXT NOT NULL,
     secret TEXT NOT NULL,
     previous_secret TEXT,
     previous_secret_until TEXT,
     enabled INTEGER NOT NULL,
     consecutive_failures INTEGER NOT NULL DEFAULT 0,
     disabled_reason TEXT,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL
   );
   CREATE INDEX webhook_endpoints_org ON webhook_endpoints(org_id, created_at);
   CREATE TABLE webhook_deliveries (
     id TEXT PRIMARY KEY,
     event_id TEXT NOT NULL,
     endpoint_id TEXT NOT NULL,
     org_id TEXT NOT NULL,
     type TEXT NOT NULL,
     body TEXT NOT NULL,
     state TEXT NOT NULL,
     attempts INTEGER NOT NULL DEFAULT 0,
     round_start INTEGER NOT NULL DEFAULT 0,
     scheduled_from TEXT NOT NULL,
     next_attempt_at TEXT,
     last_status INTEGER,
     last_error TEXT,
     lease_owner TEXT,
     lease_until TEXT,
     created_at TEXT NOT NULL,
     finished_at TEXT
   );
   CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at)
     WHERE state = 'pending';
   CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries(endpoint_id, created_at, id);
   ALTER TABLE analyses ADD COLUMN ready_facts TEXT;`,
  // 9: one audit event of an id per organization: whoever records a fact several times or in
  // several places (a two-step delivery, src/audit/two_step_audit.ts) gives it one id.
  `CREATE UNIQUE INDEX audit_events_id ON audit_events(org_id, id);`,
];

function version(db: DatabaseSync): number {
  return (db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version;
}

/** Brings the schema up to date. */
export function migrate(db: DatabaseSync): void {
  let current = version(db);
  while (current < MIGRATIONS.length) {
    db.exec("BEGIN IMMEDIATE");
    try {
      if (version(db) === current) {
        db.exec(MIGRATIONS[current]);
        db.exec(`PRAGMA user_version = ${current + 1}`);
      }
      db.exec("COMMIT");
    } catch (error) {
      db.exec("ROLLBACK");
      throw error;
    }
    current = version(db);
  }
}
