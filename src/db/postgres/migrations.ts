/**
 * The PostgreSQL schema, as numbered migrations: the same tables and columns as SQLite's
 * (`../sqlite/migrations.ts`), in PostgreSQL's types (`TIMESTAMPTZ`, `BOOLEAN`, `BIGINT`,
 * `BYTEA`), plus the signing secrets several instances share.
 * Identifiers that lists are ordered by are `COLLATE "C"` (byte order, as SQLite compares).
 *
 * Pending migrations are applied at start-up or by `main.ts admin db migrate`, all in one
 * transaction under an advisory lock, so instances starting together apply each once and a
 * failure leaves the schema as it was. An up-to-date schema takes no lock and runs no DDL, so the
 * service may run as a role without CREATE once the owner migrated.
 */
import type { PgClient, Queryable } from "./pg_client.ts";
import { LOCK_NAMESPACE } from "./postgres_dialect.ts";

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "control plane: organizations, keys, settings, analyses",
    sql: `
      CREATE TABLE orgs (
        id TEXT COLLATE "C" PRIMARY KEY,
        name TEXT NOT NULL,
        active BOOLEAN NOT NULL DEFAULT true,
        created_at TIMESTAMPTZ NOT NULL
      );
      CREATE TABLE api_keys (
        id TEXT COLLATE "C" PRIMARY KEY,
        org_id TEXT COLLATE "C" NOT NULL REFERENCES orgs(id),
        prefix TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        created_at TIMESTAMPTZ NOT NULL,
        last_used_at TIMESTAMPTZ,
        revoked_at TIMESTAMPTZ
      );
      CREATE INDEX api_keys_org ON api_keys(org_id);
      CREATE TABLE settings (
        org_id TEXT COLLATE "C" NOT NULL,
        experiment_id TEXT COLLATE "C" NOT NULL,
        json TEXT NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (org_id, experiment_id)
      );
      CREATE TABLE analyses (
        org_id TEXT COLLATE "C" NOT NULL,
        experiment_id TEXT COLLATE "C" NOT NULL,
        etag TEXT NOT NULL,
        size_bytes BIGINT NOT NULL,
        status TEXT NOT NULL,
        error TEXT,
        rows BIGINT,
        result TEXT,
        delivered_at TIMESTAMPTZ NOT NULL,
        started_at TIMESTAMPTZ,
        finished_at TIMESTAMPTZ,
        PRIMARY KEY (org_id, experiment_id)
      );`,
  },
  {
    version: 2,
    name: "scale-out: shared secrets, analysis jobs with leases",
    sql: `
      CREATE TABLE secrets (
        name TEXT PRIMARY KEY,
        value BYTEA NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now()
      );
      CREATE TABLE analysis_jobs (
        org_id TEXT COLLATE "C" NOT NULL,
        experiment_id TEXT COLLATE "C" NOT NULL,
        object_key TEXT NOT NULL,
        etag TEXT NOT NULL,
        size_bytes BIGINT NOT NULL,
        delivered_at TIMESTAMPTZ NOT NULL,
        validated BOOLEAN NOT NULL,
        source TEXT NOT NULL,
        generation BIGINT NOT NULL DEFAULT 1,
        attempts INTEGER NOT NULL DEFAULT 0,
        offered_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        lease_owner TEXT,
        lease_until TIMESTAMPTZ,
        PRIMARY KEY (org_id, experiment_id)
      );
      CREATE INDEX analysis_jobs_offered ON analysis_jobs (offered_at);`,
  },
  {
    version: 3,
    name: "the dataset catalog and upload grants",
    // Keys and experiment ids in byte order, as storage lists keys and SQLite compares them.
    sql: `
      CREATE TABLE datasets (
        org_id TEXT COLLATE "C" NOT NULL,
        experiment_id TEXT COLLATE "C" NOT NULL,
        key TEXT COLLATE "C" NOT NULL,
        size_bytes BIGINT NOT NULL,
        etag TEXT NOT NULL,
        delivered_at TIMESTAMPTZ NOT NULL,
        observed_at TIMESTAMPTZ NOT NULL,
        analysis_status TEXT NOT NULL,
        PRIMARY KEY (org_id, experiment_id)
      );
      CREATE UNIQUE INDEX datasets_key ON datasets (key);
      CREATE INDEX datasets_pending ON datasets (observed_at) WHERE analysis_status = 'pending';
      CREATE TABLE grants (
        key TEXT COLLATE "C" PRIMARY KEY,
        org_id TEXT COLLATE "C" NOT NULL,
        experiment_id TEXT COLLATE "C" NOT NULL,
        expires_at TIMESTAMPTZ NOT NULL
      );
      CREATE INDEX grants_expiry ON grants (expires_at);`,
  },
  {
    version: 4,
    name: "health and history: analysis versions, snapshots, delivery summaries",
    sql: `
      ALTER TABLE analyses ADD COLUMN analysis_version INTEGER;
      CREATE TABLE history_snapshots (
        org_id TEXT COLLATE "C" NOT NULL,
        experiment_id TEXT COLLATE "C" NOT NULL,
        seq INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        etag TEXT NOT NULL,
        delivered_at TIMESTAMPTZ NOT NULL,
        analysed_at TIMESTAMPTZ NOT NULL,
        figures TEXT NOT NULL,
        PRIMARY KEY (org_id, experiment_id, seq),
        UNIQUE (org_id, experiment_id, sha256)
      );
      CREATE TABLE delivery_summaries (
        org_id TEXT COLLATE "C" NOT NULL,
        experiment_id TEXT COLLATE "C" NOT NULL,
        etag TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        delivered_at TIMESTAMPTZ NOT NULL,
        summary BYTEA NOT NULL,
        changes TEXT,
        updated_at TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (org_id, experiment_id)
      );
      ALTER TABLE analysis_jobs ADD COLUMN sha256 TEXT;`,
  },
  {
    version: 5,
    name: "delivery summaries in parts of 64 KiB, as on SQLite",
    // The blob of each summary moves into parts (`summary` stays empty): a run reads the first
    // part only before it aggregates, and no summary travels as one value of 20 MB of hex text.
    sql: `
      CREATE TABLE delivery_summary_parts (
        org_id TEXT COLLATE "C" NOT NULL,
        experiment_id TEXT COLLATE "C" NOT NULL,
        part INTEGER NOT NULL,
        bytes BYTEA NOT NULL,
        PRIMARY KEY (org_id, experiment_id, part)
      );
      INSERT INTO delivery_summary_parts (org_id, experiment_id, part, bytes)
        SELECT org_id, experiment_id, p, substring(summary from p * 65536 + 1 for 65536)
        FROM delivery_summaries, generate_series(0, (length(summary) - 1) / 65536) AS p
        WHERE length(summary) > 0;
      UPDATE delivery_summaries SET summary = ''::bytea;`,
  },
  {
    version: 6,
    name: "analysis jobs in lanes, claimed in the order of an index; what the upload found",
    // A claim takes one lane's oldest offers first (newest deliveries first among those offered
    // together) in this index's order, without reading or sorting what waits in other lanes.
    sql: `
      ALTER TABLE analysis_jobs ADD COLUMN lane TEXT NOT NULL DEFAULT 'large';
      UPDATE analysis_jobs SET lane = CASE WHEN source = 'upgrade' THEN 'upgrade'
        WHEN size_bytes <= 1048576 THEN 'small' ELSE 'large' END;
      ALTER TABLE analysis_jobs ALTER COLUMN lane DROP DEFAULT;
      -- What the upload's checks found (no dimension columns: the analysis keeps no values).
      ALTER TABLE analysis_jobs ADD COLUMN has_dimensions BOOLEAN;
      CREATE INDEX analysis_jobs_claim ON analysis_jobs (lane, offered_at, delivered_at DESC);
      DROP INDEX analysis_jobs_offered;`,
  },
  {
    version: 7,
    name: "scoped keys with names and expiry, the key behind a grant, the audit trail",
    // Keys made before keep every scope. The audit is read newest first per organization (all
    // actions: the primary key; one: its index) and pruned per organization by age.
    sql: `
      ALTER TABLE api_keys ADD COLUMN name TEXT;
      ALTER TABLE api_keys ADD COLUMN scopes TEXT NOT NULL DEFAULT 'upload,read,write,admin';
      ALTER TABLE api_keys ADD COLUMN expires_at TIMESTAMPTZ;
      ALTER TABLE grants ADD COLUMN key_id TEXT;
      CREATE TABLE audit_events (
        org_id TEXT COLLATE "C" NOT NULL,
        at TIMESTAMPTZ NOT NULL,
        id TEXT COLLATE "C" NOT NULL,
        action TEXT COLLATE "C" NOT NULL,
        key_id TEXT,
        experiment_id TEXT,
        details TEXT NOT NULL,
        PRIMARY KEY (org_id, at, id)
      );
      CREATE INDEX audit_events_action ON audit_events (org_id, action, at, id);`,
  },
  {
    version: 8,
    name: "storage quotas per organization",
    // NULL: the default, ABN_ORG_QUOTA_BYTES.
    sql: `ALTER TABLE orgs ADD COLUMN quota_bytes BIGINT;`,
  },
  {
    version: 9,
    name: "webhooks: endpoints, the outbox of deliveries, the facts of the last ready analysis",
    // As SQLite's migration 8. A claim takes due pending deliveries along webhook_deliveries_due
    // (FOR UPDATE SKIP LOCKED), so instances claiming together never take the same one.
    sql: `
      CREATE TABLE webhook_endpoints (
        id TEXT COLLATE "C" PRIMARY KEY,
        org_id TEXT COLLATE "C" NOT NULL,
        url TEXT NOT NULL,
        description TEXT NOT NULL,
        events TEXT NOT NULL,
        secret TEXT NOT NULL,
        previous_secret TEXT,
        previous_secret_until TIMESTAMPTZ,
        enabled BOOLEAN NOT NULL,
        consecutive_failures INTEGER NOT NULL DEFAULT 0,
        disabled_reason TEXT,
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL
      );
      CREATE INDEX webhook_endpoints_org ON webhook_endpoints (org_id, created_at);
      CREATE TABLE webhook_deliveries (
        id TEXT COLLATE "C" PRIMARY KEY,
        event_id TEXT NOT NULL,
        endpoint_id TEXT COLLATE "C" NOT NULL,
        org_id TEXT COLLATE "C" NOT NULL,
        type TEXT NOT NULL,
        body TEXT NOT NULL,
        state TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        round_start INTEGER NOT NULL DEFAULT 0,
        scheduled_from TIMESTAMPTZ NOT NULL,
        next_attempt_at TIMESTAMPTZ,
        last_status INTEGER,
        last_error TEXT,
        lease_owner TEXT,
        lease_until TIMESTAMPTZ,
        created_at TIMESTAMPTZ NOT NULL,
        finished_at TIMESTAMPTZ
      );
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)
        WHERE state = 'pending';
      CREATE INDEX webhook_deliveries_endpoint
        ON webhook_deliveries (endpoint_id, created_at, id);
      ALTER TABLE analyses ADD COLUMN ready_facts TEXT;`,
  },
  {
    version: 10,
    name: "one audit event of an id per organization",
    // As SQLite's migration 9: instances noticing one two-step delivery together give its event
    // the same id (src/audit/two_step_audit.ts); the trail keeps the first.
    sql: `CREATE UNIQUE INDEX audit_events_id ON audit_events (org_id, id);`,
  },
];

/** Every table the service reads and writes (checked for privileges at start-up). */
export const TABLES = [
  "orgs",
  "api_keys",
  "settings",
  "analyses",
  "secrets",
  "analysis_jobs",
  "datasets",
  "grants",
  "history_snapshots",
  "delivery_summaries",
  "delivery_summary_parts",
  "audit_events",
  "webhook_endpoints",
  "webhook_deliveries",
];

/** The advisory lock that serializes migrations. */
const MIGRATION_LOCK = 1;

/** The schema version of the database: 0 before the first migration. */
export async function schemaVersion(db: Queryable): Promise<number> {
  const { rows: [{ exists }] } = await db.query<{ exists: boolean }>(
    "SELECT to_regclass('schema_migrations') IS NOT NULL AS exists",
  );
  if (!exists) return 0;
  const { rows: [{ version }] } = await db.query<{ version: number | null }>(
    "SELECT max(version) AS version FROM schema_migrations",
  );
  return version ?? 0;
}

/**
 * Applies the pending migrations; answers the version this call found and the one it left
 * (equal when there was nothing to do, or another instance did it while this one waited).
 */
export async function migrate(db: PgClient): Promise<{ from: number; to: number }> {
  const latest = MIGRATIONS[MIGRATIONS.length - 1].version;
  const current = await schemaVersion(db);
  if (current >= latest) return { from: current, to: current };
  return await db.transaction(async (tx) => {
    await tx.query("SELECT pg_advisory_xact_lock($1, $2)", [LOCK_NAMESPACE, MIGRATION_LOCK]);
    await tx.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )`);
    // Another instance may have applied some while this one waited for the lock.
    const from = await schemaVersion(tx);
    for (const migration of MIGRATIONS) {
      if (migration.version <= from) continue;
      await tx.query(migration.sql);
      await tx.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [
        migration.version,
        migration.name,
      ]);
    }
    return { from, to: Math.max(from, latest) };
  });
}

/**
 * Throws (SQLSTATE 42501) naming the tables the connected role cannot read and write (of those
 * that exist), so a database without permissions stops start-up instead of failing requests.
 */
export async function checkPrivileges(db: Queryable): Promise<void> {
  const { rows } = await db.query<{ table: string; ok: boolean }>(
    `SELECT t AS table, has_table_privilege(t, 'SELECT') AND (t = 'schema_migrations' OR
       (has_table_privilege(t, 'INSERT') AND has_table_privilege(t, 'UPDATE') AND
        has_table_privilege(t, 'DELETE'))) AS ok
     FROM unnest($1::text[]) WITH ORDINALITY AS u(t, n)
     WHERE to_regclass(t) IS NOT NULL ORDER BY n`,
    [["schema_migrations", ...TABLES]],
  );
  const missing = rows.filter((r) => !r.ok).map((r) => r.table);
  if (missing.length > 0) {
    throw Object.assign(
      new Error(
        `permission denied: SELECT, INSERT, UPDATE and DELETE are needed on ${
          missing.join(", ")
        } (SELECT on schema_migrations)`,
      ),
      { code: "42501" },
    );
  }
}
