/**
 * `main.ts admin db copy-from-sqlite PATH`: moves a single-host install's control plane into
 * PostgreSQL, in one transaction, table by table (the tables and columns are the same on both
 * engines; only the types differ): organizations, keys, settings, analyses, the dataset catalog,
 * upload grants, history snapshots, delivery summaries (with their parts), the audit trail, webhook
 * endpoints and their outbox. Idempotent: rows PostgreSQL lacks are inserted; rows it has are
 * updated only where the SQLite row is newer, and a revocation, a key's expiry or a deactivation on
 * either side is never undone. Afterwards every SQLite row is looked up by its
 * key in PostgreSQL and the counts are compared; a difference fails the command.
 *
 * Adding a table to the control plane means adding it to `COPIED_TABLES`.
 */
import { AUDIT_COLUMNS } from "../repos/audit.ts";
import { Buffer } from "node:buffer";
import type { DatabaseSync, SQLInputValue } from "node:sqlite";
import type { SecretRepo } from "../control_plane.ts";
import type { PgClient, Queryable } from "./pg_client.ts";
import { DATASET_COLUMN_TYPES } from "../repos/catalog.ts";

type ColumnKind = "text" | "integer" | "boolean" | "time" | "bytes";

export interface CopiedTable {
  name: string;
  /** The primary key's columns. */
  key: string[];
  columns: Record<string, ColumnKind>;
  /**
   * What follows `ON CONFLICT (key)` (`ON CONFLICT` alone when `anyConflict`: every unique
   * constraint); `t` is the PostgreSQL row, `excluded` the copied one.
   */
  onConflict: string;
  anyConflict?: boolean;
  /** The columns a copied row is looked up by afterwards; default `key`. */
  verifyBy?: string[];
  /** A statement run after the table's rows, in the same transaction. */
  after?: string;
  /**
   * Rows that belong to a row of another table copied before (a summary's parts): copied, in
   * place of PostgreSQL's, only where PostgreSQL now holds that row as SQLite has it (its `same`
   * column equal); the others are PostgreSQL's own, newer ones.
   */
  parent?: { table: string; by: string[]; same: string };
}

/** `DO UPDATE SET` every column but the key, from the copied row. */
function updateAll(columns: Record<string, ColumnKind>, key: string[]): string {
  return "DO UPDATE SET " +
    Object.keys(columns).filter((c) => !key.includes(c)).map((c) => `${c} = excluded.${c}`)
      .join(", ");
}

const ANALYSIS_COLUMNS: Record<string, ColumnKind> = {
  org_id: "text",
  experiment_id: "text",
  etag: "text",
  size_bytes: "integer",
  status: "text",
  error: "text",
  rows: "integer",
  result: "text",
  delivered_at: "time",
  started_at: "time",
  finished_at: "time",
  analysis_version: "integer",
  ready_facts: "text",
};

const ENDPOINT_COLUMNS: Record<string, ColumnKind> = {
  id: "text",
  org_id: "text",
  url: "text",
  description: "text",
  events: "text",
  secret: "text",
  previous_secret: "text",
  previous_secret_until: "time",
  enabled: "boolean",
  consecutive_failures: "integer",
  disabled_reason: "text",
  created_at: "time",
  updated_at: "time",
};

const WEBHOOK_DELIVERY_COLUMNS: Record<string, ColumnKind> = {
  id: "text",
  event_id: "text",
  endpoint_id: "text",
  org_id: "text",
  type: "text",
  body: "text",
  state: "text",
  attempts: "integer",
  round_start: "integer",
  scheduled_from: "time",
  next_attempt_at: "time",
  last_status: "integer",
  last_error: "text",
  lease_owner: "text",
  lease_until: "time",
  created_at: "time",
  finished_at: "time",
};

const DATASET_COLUMNS: Record<string, ColumnKind> = DATASET_COLUMN_TYPES;

const SUMMARY_COLUMNS: Record<string, ColumnKind> = {
  org_id: "text",
  experiment_id: "text",
  etag: "text",
  sha256: "text",
  delivered_at: "time",
  summary: "bytes",
  changes: "text",
  updated_at: "time",
};

/** In dependency order (organizations before their keys). */
export const COPIED_TABLES: readonly CopiedTable[] = [
  {
    name: "orgs",
    key: ["id"],
    columns: {
      id: "text",
      name: "text",
      active: "boolean",
      created_at: "time",
      quota_bytes: "integer",
    },
    // A quota already set in PostgreSQL is kept.
    onConflict: `DO UPDATE SET active = t.active AND excluded.active,
      quota_bytes = COALESCE(t.quota_bytes, excluded.quota_bytes)`,
  },
  {
    name: "api_keys",
    key: ["id"],
    columns: {
      id: "text",
      org_id: "text",
      prefix: "text",
      hash: "text",
      created_at: "time",
      last_used_at: "time",
      revoked_at: "time",
      name: "text",
      scopes: "text",
      expires_at: "time",
    },
    // An expiry set on either side (a rotation) stays: the earlier one wins.
    onConflict: `DO UPDATE SET revoked_at = COALESCE(t.revoked_at, excluded.revoked_at),
      last_used_at = GREATEST(t.last_used_at, excluded.last_used_at),
      expires_at = LEAST(t.expires_at, excluded.expires_at)`,
  },
  {
    name: "settings",
    key: ["org_id", "experiment_id"],
    columns: { org_id: "text", experiment_id: "text", json: "text", updated_at: "time" },
    onConflict: `DO UPDATE SET json = excluded.json, updated_at = excluded.updated_at
      WHERE excluded.updated_at > t.updated_at`,
  },
  {
    name: "analyses",
    key: ["org_id", "experiment_id"],
    columns: ANALYSIS_COLUMNS,
    onConflict: `${updateAll(ANALYSIS_COLUMNS, ["org_id", "experiment_id"])}
      WHERE excluded.delivered_at > t.delivered_at OR (excluded.etag = t.etag
        AND t.status = 'pending' AND excluded.status <> 'pending')`,
  },
  {
    // After the analyses: each row's status is then that of PostgreSQL's analysis of its ETag.
    name: "datasets",
    key: ["org_id", "experiment_id"],
    columns: DATASET_COLUMNS,
    onConflict: `${updateAll(DATASET_COLUMNS, ["org_id", "experiment_id"])}
      WHERE excluded.observed_at >= t.observed_at`,
    after: `UPDATE datasets d SET analysis_status = COALESCE(a.status, 'pending')
      FROM datasets c LEFT JOIN analyses a ON a.org_id = c.org_id
        AND a.experiment_id = c.experiment_id AND a.etag = c.etag
      WHERE d.org_id = c.org_id AND d.experiment_id = c.experiment_id
        AND d.analysis_status <> COALESCE(a.status, 'pending')`,
  },
  {
    name: "grants",
    key: ["key"],
    columns: {
      key: "text",
      org_id: "text",
      experiment_id: "text",
      expires_at: "time",
      key_id: "text",
    },
    onConflict: `DO UPDATE SET expires_at = excluded.expires_at, key_id = excluded.key_id
      WHERE excluded.expires_at > t.expires_at`,
  },
  {
    // A snapshot is its content: one PostgreSQL already holds (under any number) is kept as it
    // is, and the copy is checked by content.
    name: "history_snapshots",
    key: ["org_id", "experiment_id", "seq"],
    columns: {
      org_id: "text",
      experiment_id: "text",
      seq: "integer",
      sha256: "text",
      etag: "text",
      delivered_at: "time",
      analysed_at: "time",
      figures: "text",
    },
    onConflict: "DO NOTHING",
    anyConflict: true,
    verifyBy: ["org_id", "experiment_id", "sha256"],
  },
  {
    name: "delivery_summaries",
    key: ["org_id", "experiment_id"],
    columns: SUMMARY_COLUMNS,
    onConflict: `${updateAll(SUMMARY_COLUMNS, ["org_id", "experiment_id"])}
      WHERE excluded.updated_at > t.updated_at`,
  },
  {
    name: "delivery_summary_parts",
    key: ["org_id", "experiment_id", "part"],
    columns: { org_id: "text", experiment_id: "text", part: "integer", bytes: "bytes" },
    onConflict: "DO UPDATE SET bytes = excluded.bytes",
    parent: { table: "delivery_summaries", by: ["org_id", "experiment_id"], same: "updated_at" },
  },
  {
    // An event never changes: one PostgreSQL holds already is kept.
    name: "audit_events",
    key: ["org_id", "at", "id"],
    verifyBy: ["id"],
    columns: AUDIT_COLUMNS,
    onConflict: "DO NOTHING",
  },
  {
    name: "webhook_endpoints",
    key: ["id"],
    columns: ENDPOINT_COLUMNS,
    onConflict: `${updateAll(ENDPOINT_COLUMNS, ["id"])} WHERE excluded.updated_at > t.updated_at`,
  },
  {
    // The outbox: a delivery PostgreSQL already holds is its own (it may have been sent since);
    // a lease held on the single host means nothing here.
    name: "webhook_deliveries",
    key: ["id"],
    columns: WEBHOOK_DELIVERY_COLUMNS,
    onConflict: "DO NOTHING",
    after: "UPDATE webhook_deliveries SET lease_owner = NULL, lease_until = NULL " +
      "WHERE lease_owner = 'this-host'",
  },
];

/** The secrets copied (by name) when PostgreSQL has none of that name yet. */
export const COPIED_SECRETS = ["url-signing"];

export interface TableCount {
  table: string;
  /** Rows in the SQLite file. */
  sqlite: number;
  /** Of those, found by key in PostgreSQL after the copy. */
  found: number;
  /** Rows in the PostgreSQL table (more when it held rows of its own). */
  postgres: number;
}

export interface CopyReport {
  tables: TableCount[];
  /** Per secret: copied, kept (PostgreSQL had another one already: its own is kept), absent. */
  secrets: Record<string, "copied" | "kept" | "same" | "absent">;
  /** True when every SQLite row was found in PostgreSQL. */
  verified: boolean;
}

const BATCH_ROWS = 500;

function convert(kind: ColumnKind, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (kind === "boolean") return value === 1 || value === 1n || value === true;
  if (kind === "integer") return String(value);
  if (kind === "bytes") {
    const bytes = value as Uint8Array;
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  return value;
}

function tableExists(sqlite: DatabaseSync, name: string): boolean {
  return sqlite.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?")
    .get(name) !== undefined;
}

/** Copies every table of `sqlite` into PostgreSQL, then counts. */
export async function copyFromSqlite(
  sqlite: DatabaseSync,
  sqliteSecrets: SecretRepo,
  pg: { db: PgClient; secrets: SecretRepo },
): Promise<CopyReport> {
  const sources = new Map<string, Record<string, SQLInputValue>[]>();
  for (const table of COPIED_TABLES) {
    const rows = tableExists(sqlite, table.name)
      ? sqlite.prepare(`SELECT ${Object.keys(table.columns).join(", ")} FROM ${table.name}`)
        .all() as Record<string, SQLInputValue>[]
      : [];
    sources.set(table.name, rows);
  }
  await pg.db.transaction(async (tx) => {
    for (const table of COPIED_TABLES) {
      const columns = Object.keys(table.columns);
      if (table.parent) sources.set(table.name, await ofHeldParents(tx, table, sources));
      const rows = sources.get(table.name)!;
      for (let start = 0; start < rows.length; start += BATCH_ROWS) {
        const batch = rows.slice(start, start + BATCH_ROWS);
        const params: unknown[] = [];
        const tuples = batch.map((row) =>
          `(${
            columns.map((c) => {
              params.push(convert(table.columns[c], row[c]));
              return `$${params.length}`;
            }).join(", ")
          })`
        );
        const target = table.anyConflict ? "" : `(${table.key.join(", ")})`;
        await tx.query(
          `INSERT INTO ${table.name} AS t (${columns.join(", ")}) VALUES ${tuples.join(", ")}
           ON CONFLICT ${target} ${table.onConflict}`,
          params,
        );
      }
      if (table.after) await tx.query(table.after);
    }
  });

  const secrets: CopyReport["secrets"] = {};
  for (const name of COPIED_SECRETS) {
    const value = await sqliteSecrets.get(name);
    if (!value) {
      secrets[name] = "absent";
      continue;
    }
    const had = await pg.secrets.get(name);
    const stored = await pg.secrets.getOrCreate(name, value);
    secrets[name] = had === null ? "copied" : sameBytes(stored, value) ? "same" : "kept";
  }

  const tables: TableCount[] = [];
  for (const table of COPIED_TABLES) {
    const rows = sources.get(table.name)!;
    const by = table.verifyBy ?? table.key;
    const keys = by.map((k) => rows.map((r) => String(r[k])));
    const unnest = by.map((k, i) =>
      `$${i + 1}::${table.columns[k] === "integer" ? "bigint" : "text"}[]`
    ).join(", ");
    const { rows: [{ found }] } = await pg.db.query<{ found: number }>(
      `SELECT count(*)::integer AS found FROM unnest(${unnest}) AS s(${by.join(", ")})
       JOIN ${table.name} USING (${by.join(", ")})`,
      keys,
    );
    const { rows: [{ total }] } = await pg.db.query<{ total: number }>(
      `SELECT count(*)::integer AS total FROM ${table.name}`,
    );
    tables.push({ table: table.name, sqlite: rows.length, found, postgres: total });
  }
  return { tables, secrets, verified: tables.every((t) => t.found === t.sqlite) };
}

/**
 * The rows of `table` (whose `parent` is set) that belong to parent rows PostgreSQL now holds as
 * SQLite has them; PostgreSQL's own rows of those parents are deleted first.
 */
async function ofHeldParents(
  tx: Queryable,
  table: CopiedTable,
  sources: Map<string, Record<string, SQLInputValue>[]>,
): Promise<Record<string, SQLInputValue>[]> {
  const { table: parentTable, by, same } = table.parent!;
  const id = (row: Record<string, unknown>) => JSON.stringify(by.map((c) => row[c]));
  const { rows: held } = await tx.query(`SELECT ${by.join(", ")}, ${same} FROM ${parentTable}`);
  const heldAs = new Map(held.map((row) => [id(row), String(row[same])]));
  const taken = sources.get(parentTable)!.filter((row) => heldAs.get(id(row)) === row[same]);
  await tx.query(
    `DELETE FROM ${table.name} WHERE (${by.join(", ")}) IN (SELECT * FROM unnest(${
      by.map((_, i) => `$${i + 1}::text[]`).join(", ")
    }))`,
    by.map((c) => taken.map((row) => String(row[c]))),
  );
  const ids = new Set(taken.map(id));
  return sources.get(table.name)!.filter((row) => ids.has(id(row)));
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
