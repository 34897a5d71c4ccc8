/**
 * The control plane in one SQLite file (`node:sqlite`): the embedded default for a single host
 * and `deno task dev`. WAL mode so the admin CLI can write while the server reads; statements are
 * prepared once per handle; migrations keyed by `PRAGMA user_version` (`migrations.ts`).
 *
 * One process owns the file, so the scale-out capabilities are trivial: secrets are files in
 * the data directory (as before the interface had them), the timer lock is always held, and
 * there is no shared job table (`jobs` is absent: the analysis queue lives in memory).
 *
 * Writes are group-committed: those issued within one turn of the event loop (up to
 * `MAX_BATCH`) run in one transaction (a failing one alone again, see `#commit`), and every
 * caller's promise settles once that transaction committed. An autocommit write costs 60–90 µs
 * here (its own WAL frames and commit), a write in a shared transaction 6–8 µs:
 * at a few thousand small deliveries a second (a catalog row, the analysis' pending mark and
 * result each) that is most of a core saved. A write waits for the end of the current turn
 * (`setImmediate`, tens of microseconds), not for a timer.
 *
 * Durability: `synchronous = NORMAL` in WAL mode. A committed transaction is in the WAL file
 * (the operating system's page cache) when the write's promise settles, so it survives the end
 * of the process (a crash, SIGKILL); the WAL is fsynced at checkpoints, so a power failure or
 * kernel crash may roll back the last transactions. Storage commits fsync the bytes, so what
 * such a failure can lose is catalog rows of stored objects, which the reconciliation at
 * start-up restores (the dataset list reads storage until it has run).
 */
import { DatabaseSync } from "node:sqlite";
import { clearImmediate, setImmediate } from "node:timers";
import type { StatementSync } from "node:sqlite";
import type {
  AnalysisOutcome,
  AnalysisRepo,
  AnalysisRow,
  AnalysisStatus,
  ApiKeyInfo,
  ControlPlane,
  DatasetEntry,
  DatasetRepo,
  DatasetRow,
  DeliverySummaryRepo,
  DeliverySummaryRow,
  Grant,
  GrantRepo,
  HistoryRepo,
  HistorySnapshot,
  KeyOwner,
  KeyRepo,
  Org,
  OrgRepo,
  OutdatedAnalysis,
  RecordOutcome,
  SecretRepo,
  SettingsRepo,
} from "../control_plane.ts";
import { DatabaseUnavailable, nowIso, outcomeValues } from "../control_plane.ts";
import { generateKey, hashKey, KEY_PREFIX } from "../api_keys.ts";
import { newId, orgName } from "../ids.ts";
import { migrate } from "./migrations.ts";
import { loadOrCreateSecret, readSecret } from "../../crypto/secret_file.ts";

/**
 * SQLite failures that pass with time or an operator's fix (another connection holds the lock
 * past the busy timeout, a read-only or full disk), as opposed to programming errors.
 */
const UNAVAILABLE =
  /database is locked|database table is locked|readonly database|disk I\/O error|database or disk is full|unable to open database file/;

function isUnavailable(error: unknown): boolean {
  return error instanceof Error && (error as { code?: string }).code === "ERR_SQLITE_ERROR" &&
    UNAVAILABLE.test(error.message);
}

/** A transient SQLite failure as `DatabaseUnavailable`; anything else as it is. */
function mapError(error: unknown): unknown {
  return isUnavailable(error)
    ? new DatabaseUnavailable((error as Error).message, { cause: error })
    : error;
}

/** Writes in one group commit at most; more commit at once. */
const MAX_BATCH = 512;

/** Bytes per stored part of a delivery summary's blob (see migration 4). */
const SUMMARY_PART_BYTES = 64 * 1024;

interface QueuedWrite {
  work: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** The catalog's columns, and the analysis status of the row's ETag (a subquery on analyses). */
const DATASET_COLUMNS =
  "org_id, experiment_id, key, size_bytes, etag, delivered_at, observed_at, analysis_status";

interface OrgRow {
  id: string;
  name: string;
  active: number;
  created_at: string;
}

interface KeyRow {
  id: string;
  org_id: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

function toOrg(row: OrgRow): Org {
  return { id: row.id, name: row.name, active: row.active === 1, created_at: row.created_at };
}

function toKeyInfo(row: KeyRow): ApiKeyInfo {
  return {
    key_id: row.id,
    org_id: row.org_id,
    prefix: row.prefix,
    created_at: row.created_at,
    last_used_at: row.last_used_at,
    revoked_at: row.revoked_at,
    active: row.revoked_at === null,
  };
}

export interface SqliteControlPlaneOptions {
  /** Where secrets are kept as files; default the `secrets` folder beside the database file. */
  secretsDir?: string;
}

export class SqliteControlPlane implements ControlPlane {
  readonly driver = "sqlite";
  /** The SQLite handle itself (tests and the copy to PostgreSQL read it directly). */
  readonly sqlite: DatabaseSync;
  readonly orgs: OrgRepo;
  readonly keys: KeyRepo;
  readonly settings: SettingsRepo;
  readonly analyses: AnalysisRepo;
  readonly datasets: DatasetRepo;
  readonly grants: GrantRepo;
  readonly history: HistoryRepo;
  readonly deliverySummaries: DeliverySummaryRepo;
  readonly secrets: SecretRepo;
  readonly #statements = new Map<string, StatementSync>();
  #batch: QueuedWrite[] = [];
  #flush: ReturnType<typeof setImmediate> | undefined;

  constructor(path: string, options: SqliteControlPlaneOptions = {}) {
    const db = this.sqlite = new DatabaseSync(path);
    db.exec("PRAGMA busy_timeout = 5000");
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = NORMAL");
    db.exec("PRAGMA foreign_keys = ON");
    migrate(db);
    this.orgs = this.#orgRepo();
    this.keys = this.#keyRepo();
    this.settings = this.#settingsRepo();
    this.analyses = this.#analysisRepo();
    this.datasets = this.#datasetRepo();
    this.grants = this.#grantRepo();
    this.history = this.#historyRepo();
    this.deliverySummaries = this.#deliverySummaryRepo();
    const slash = path.lastIndexOf("/");
    this.secrets = fileSecrets(
      options.secretsDir ?? `${slash < 0 ? "." : path.slice(0, slash)}/secrets`,
    );
  }

  /** One process owns the file: the lock is always this instance's. */
  withTimerLock<T>(_name: string, fn: () => Promise<T>): Promise<T | undefined> {
    return fn();
  }

  reachable(): Promise<boolean> {
    try {
      this.#stmt("SELECT 1").get();
      return Promise.resolve(true);
    } catch {
      return Promise.resolve(false);
    }
  }

  close(): Promise<void> {
    if (this.sqlite.isOpen) {
      this.#commit();
      this.sqlite.close();
    }
    return Promise.resolve();
  }

  /** A prepared statement, prepared once and reused (hot paths parse no SQL). */
  #stmt(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.sqlite.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  /** Runs `work` (a read) now; a transient SQLite failure becomes `DatabaseUnavailable`. */
  #run<T>(work: () => T): Promise<T> {
    try {
      return Promise.resolve(work());
    } catch (error) {
      return Promise.reject(mapError(error));
    }
  }

  /**
   * Runs `work` (a write) in the next group commit; settles once that transaction committed
   * (rejects with `work`'s own error, or with `DatabaseUnavailable` when the transaction failed).
   */
  #write<T>(work: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#batch.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (this.#batch.length >= MAX_BATCH) this.#commit();
      else if (this.#flush === undefined) this.#flush = setImmediate(() => this.#commit());
    });
  }

  /**
   * Commits the writes queued so far in one transaction. When one of them throws, none is kept:
   * each runs again in a transaction of its own, so that it fails alone (rare: a refused value,
   * an unavailable database), and the common case pays for no savepoints.
   */
  #commit(): void {
    if (this.#flush !== undefined) clearImmediate(this.#flush);
    this.#flush = undefined;
    const batch = this.#batch;
    this.#batch = [];
    if (batch.length === 0) return;
    if (batch.length === 1) {
      this.#commitAlone(batch[0]);
      return;
    }
    const values: unknown[] = [];
    try {
      this.#stmt("BEGIN IMMEDIATE").run();
    } catch (error) {
      const failure = mapError(error);
      for (const { reject } of batch) reject(failure);
      return;
    }
    try {
      for (const { work } of batch) values.push(work());
      this.#stmt("COMMIT").run();
    } catch {
      this.#rollback();
      for (const write of batch) this.#commitAlone(write);
      return;
    }
    batch.forEach(({ resolve }, i) => resolve(values[i]));
  }

  /** One write in a transaction of its own (its statements commit together or not at all). */
  #commitAlone({ work, resolve, reject }: QueuedWrite): void {
    try {
      this.#stmt("BEGIN IMMEDIATE").run();
      const value = work();
      this.#stmt("COMMIT").run();
      resolve(value);
    } catch (error) {
      this.#rollback();
      reject(mapError(error));
    }
  }

  #rollback(): void {
    if (!this.sqlite.isTransaction) return;
    try {
      this.sqlite.exec("ROLLBACK");
    } catch { /* the transaction is gone already */ }
  }

  #orgRepo(): OrgRepo {
    return {
      create: (name) =>
        this.#write(() => {
          const org = { id: newId("org"), name: orgName(name), active: true, created_at: nowIso() };
          this.#stmt("INSERT INTO orgs (id, name, active, created_at) VALUES (?, ?, 1, ?)")
            .run(org.id, org.name, org.created_at);
          return org;
        }),
      get: (id) =>
        this.#run(() => {
          const row = this.#stmt("SELECT * FROM orgs WHERE id = ?").get(id) as OrgRow | undefined;
          return row ? toOrg(row) : null;
        }),
      findByName: (name) =>
        this.#run(() => {
          const row = this.#stmt("SELECT * FROM orgs WHERE name = ? ORDER BY created_at LIMIT 1")
            .get(name) as OrgRow | undefined;
          return row ? toOrg(row) : null;
        }),
      list: () =>
        this.#run(() =>
          (this.#stmt("SELECT * FROM orgs ORDER BY created_at, id").all() as unknown as OrgRow[])
            .map(toOrg)
        ),
      setActive: (id, active) =>
        this.#write(() =>
          Number(
            this.#stmt("UPDATE orgs SET active = ? WHERE id = ?").run(active ? 1 : 0, id)
              .changes,
          ) > 0
        ),
    };
  }

  #keyRepo(): KeyRepo {
    return {
      create: (orgId) =>
        this.#write(() => {
          const apiKey = generateKey();
          const row: KeyRow = {
            id: newId("key"),
            org_id: orgId,
            prefix: apiKey.slice(0, KEY_PREFIX.length + 6),
            created_at: nowIso(),
            last_used_at: null,
            revoked_at: null,
          };
          this.#stmt(
            "INSERT INTO api_keys (id, org_id, prefix, hash, created_at) VALUES (?, ?, ?, ?, ?)",
          ).run(row.id, row.org_id, row.prefix, hashKey(apiKey), row.created_at);
          return { api_key: apiKey, info: toKeyInfo(row) };
        }),
      list: (orgId) =>
        this.#run(() =>
          (this.#stmt(
            "SELECT id, org_id, prefix, created_at, last_used_at, revoked_at FROM api_keys WHERE org_id = ? ORDER BY created_at, id",
          ).all(orgId) as unknown as KeyRow[]).map(toKeyInfo)
        ),
      revoke: (keyId) =>
        this.#write(() =>
          Number(
            this.#stmt("UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?")
              .run(nowIso(), keyId).changes,
          ) > 0
        ),
      ownerByHash: (hash) =>
        this.#run((): KeyOwner | null => {
          const row = this.#stmt(
            `SELECT k.id AS key_id, k.org_id, k.revoked_at, o.active
               FROM api_keys k JOIN orgs o ON o.id = k.org_id WHERE k.hash = ?`,
          ).get(hash) as
            | { key_id: string; org_id: string; revoked_at: string | null; active: number }
            | undefined;
          if (!row) return null;
          return {
            keyId: row.key_id,
            orgId: row.org_id,
            orgActive: row.active === 1,
            revoked: row.revoked_at !== null,
          };
        }),
      touch: (lastUsed) =>
        this.#write(() => {
          const update = this.#stmt("UPDATE api_keys SET last_used_at = ? WHERE id = ?");
          for (const [keyId, at] of lastUsed) update.run(at, keyId);
        }),
    };
  }

  #settingsRepo(): SettingsRepo {
    return {
      get: (orgId, experimentId) =>
        this.#run(() => {
          const row = this.#stmt("SELECT json FROM settings WHERE org_id = ? AND experiment_id = ?")
            .get(orgId, experimentId) as { json: string } | undefined;
          return row ? JSON.parse(row.json) : null;
        }),
      save: (orgId, experimentId, settings) =>
        this.#write(() => {
          this.#stmt(
            `INSERT INTO settings (org_id, experiment_id, json, updated_at) VALUES (?, ?, ?, ?)
             ON CONFLICT (org_id, experiment_id) DO UPDATE SET json = excluded.json,
               updated_at = excluded.updated_at`,
          ).run(orgId, experimentId, JSON.stringify(settings), nowIso());
        }),
    };
  }

  #analysisRepo(): AnalysisRepo {
    return {
      get: (orgId, experimentId) =>
        this.#run(() =>
          (this.#stmt("SELECT * FROM analyses WHERE org_id = ? AND experiment_id = ?")
            .get(orgId, experimentId) as AnalysisRow | undefined) ?? null
        ),
      status: (orgId, experimentId, etag) =>
        this.#run((): AnalysisStatus => {
          const row = this.#stmt(
            "SELECT status, etag FROM analyses WHERE org_id = ? AND experiment_id = ?",
          ).get(orgId, experimentId) as { status: AnalysisStatus; etag: string } | undefined;
          return row && row.etag === etag ? row.status : "pending";
        }),
      markPending: (orgId, experimentId, etag, sizeBytes, deliveredAt) =>
        this.#write(() => {
          this.#stmt(
            `INSERT INTO analyses (org_id, experiment_id, etag, size_bytes, status, delivered_at)
             VALUES (?, ?, ?, ?, 'pending', ?)
             ON CONFLICT (org_id, experiment_id) DO UPDATE SET
               etag = excluded.etag, size_bytes = excluded.size_bytes, status = 'pending',
               error = NULL, rows = NULL, result = NULL, delivered_at = excluded.delivered_at,
               started_at = NULL, finished_at = NULL, analysis_version = NULL`,
          ).run(orgId, experimentId, etag, sizeBytes, deliveredAt);
          this.#setCatalogStatus(orgId, experimentId, etag, "pending");
        }),
      saveResult: (orgId, experimentId, etag, outcome: AnalysisOutcome, startedAt, history) =>
        this.#write(() => {
          const changes = this.#stmt(
            `UPDATE analyses SET status = ?, error = ?, rows = ?, result = ?, started_at = ?,
               finished_at = ?, analysis_version = ?
             WHERE org_id = ? AND experiment_id = ? AND etag = ?`,
          ).run(...outcomeValues(outcome, startedAt), orgId, experimentId, etag).changes;
          if (Number(changes) === 0) return false;
          this.#setCatalogStatus(orgId, experimentId, etag, outcome.status);
          if (history) {
            if (history.summary) this.#saveSummary(orgId, experimentId, history.summary);
            this.#recordSnapshot(orgId, experimentId, history.snapshot, history.keep);
          }
          return true;
        }).catch((error) => {
          // A busy or read-only database must not take the process down from a background run:
          // the row stays `pending`, and the timer's scan runs the analysis again.
          if (error instanceof DatabaseUnavailable) return false;
          throw error;
        }),
      delete: (orgId, experimentId) =>
        this.#write(() => {
          this.#stmt("DELETE FROM analyses WHERE org_id = ? AND experiment_id = ?")
            .run(orgId, experimentId);
          this.#stmt(
            "UPDATE datasets SET analysis_status = 'pending' WHERE org_id = ? AND experiment_id = ?",
          ).run(orgId, experimentId);
        }),
      outdated: (version) =>
        this.#run(() =>
          this.#stmt(
            `SELECT org_id, experiment_id, etag, size_bytes, delivered_at FROM analyses
             WHERE status = 'ready' AND (analysis_version IS NULL OR analysis_version < ?)
             ORDER BY delivered_at DESC, org_id, experiment_id`,
          ).all(version) as unknown as OutdatedAnalysis[]
        ),
    };
  }

  #historyRepo(): HistoryRepo {
    return {
      record: (orgId, experimentId, snapshot, keep) =>
        this.#write(() => this.#recordSnapshot(orgId, experimentId, snapshot, keep)),
      list: (orgId, experimentId, afterSeq, limit) =>
        this.#run(() =>
          this.#stmt(
            `SELECT seq, sha256, etag, delivered_at, analysed_at, figures FROM history_snapshots
             WHERE org_id = ? AND experiment_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
          ).all(orgId, experimentId, afterSeq, limit) as unknown as HistorySnapshot[]
        ),
      delete: (orgId, experimentId) =>
        this.#write(() => {
          this.#stmt("DELETE FROM history_snapshots WHERE org_id = ? AND experiment_id = ?")
            .run(orgId, experimentId);
        }),
    };
  }

  #deliverySummaryRepo(): DeliverySummaryRepo {
    return {
      // The blob is kept in parts of `SUMMARY_PART_BYTES` (migration 4): read part by part into
      // one buffer, and written part by part.
      get: (orgId, experimentId) => this.#readSummary(orgId, experimentId, Infinity),
      head: (orgId, experimentId, bytes) => this.#readSummary(orgId, experimentId, bytes),
      save: (orgId, experimentId, row) =>
        this.#write(() => this.#saveSummary(orgId, experimentId, row)),
      delete: (orgId, experimentId) =>
        this.#write(() => {
          this.#stmt("DELETE FROM delivery_summaries WHERE org_id = ? AND experiment_id = ?")
            .run(orgId, experimentId);
          this.#stmt("DELETE FROM delivery_summary_parts WHERE org_id = ? AND experiment_id = ?")
            .run(orgId, experimentId);
        }),
    };
  }

  /** The experiment's summary row, with the first `bytes` bytes of its blob (see above). */
  #readSummary(
    orgId: string,
    experimentId: string,
    bytes: number,
  ): Promise<DeliverySummaryRow | null> {
    return this.#run(() => {
      const row = this.#stmt(
        `SELECT etag, sha256, delivered_at, changes FROM delivery_summaries
         WHERE org_id = ? AND experiment_id = ?`,
      ).get(orgId, experimentId) as Omit<DeliverySummaryRow, "summary"> | undefined;
      if (row === undefined) return null;
      const { size } = this.#stmt(
        `SELECT coalesce(sum(length(bytes)), 0) AS size FROM delivery_summary_parts
         WHERE org_id = ? AND experiment_id = ?`,
      ).get(orgId, experimentId) as { size: number };
      const summary = new Uint8Array(Math.min(size, bytes));
      const parts = this.#stmt(
        `SELECT bytes FROM delivery_summary_parts WHERE org_id = ? AND experiment_id = ?
         ORDER BY part`,
      ).iterate(orgId, experimentId) as Iterable<{ bytes: Uint8Array }>;
      let at = 0;
      for (const { bytes: part } of parts) {
        const take = Math.min(part.length, summary.length - at);
        summary.set(part.subarray(0, take), at);
        at += take;
        if (at === summary.length) break; // the parts after it are not read
      }
      return { ...row, summary };
    });
  }

  /** Keeps a snapshot (inside a write), as `HistoryRepo.record` describes. */
  #recordSnapshot(
    orgId: string,
    experimentId: string,
    snapshot: Omit<HistorySnapshot, "seq">,
    keep: number,
  ): RecordOutcome {
    const last = this.#stmt(
      `SELECT seq FROM history_snapshots WHERE org_id = ? AND experiment_id = ?
         ORDER BY seq DESC LIMIT 1`,
    ).get(orgId, experimentId) as { seq: number } | undefined;
    const same = this.#stmt(
      `SELECT seq FROM history_snapshots
         WHERE org_id = ? AND experiment_id = ? AND sha256 = ?`,
    ).get(orgId, experimentId, snapshot.sha256) as { seq: number } | undefined;
    if (same !== undefined) {
      if (same.seq !== last?.seq) return "unchanged";
      this.#stmt(
        `UPDATE history_snapshots SET figures = ?, analysed_at = ?
           WHERE org_id = ? AND experiment_id = ? AND seq = ?`,
      ).run(snapshot.figures, snapshot.analysed_at, orgId, experimentId, same.seq);
      return "replaced";
    }
    const seq = (last?.seq ?? 0) + 1;
    this.#stmt(
      `INSERT INTO history_snapshots (org_id, experiment_id, seq, sha256, etag,
           delivered_at, analysed_at, figures) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      orgId,
      experimentId,
      seq,
      snapshot.sha256,
      snapshot.etag,
      snapshot.delivered_at,
      snapshot.analysed_at,
      snapshot.figures,
    );
    this.#stmt(
      `DELETE FROM history_snapshots WHERE org_id = ? AND experiment_id = ? AND seq <= ?`,
    ).run(orgId, experimentId, seq - keep);
    return "added";
  }

  /** Replaces an experiment's delivery summary (inside a write), its blob in parts. */
  #saveSummary(orgId: string, experimentId: string, row: DeliverySummaryRow): void {
    this.#stmt(
      `INSERT INTO delivery_summaries (org_id, experiment_id, etag, sha256, delivered_at,
         summary, changes, updated_at) VALUES (?, ?, ?, ?, ?, x'', ?, ?)
       ON CONFLICT (org_id, experiment_id) DO UPDATE SET etag = excluded.etag,
         sha256 = excluded.sha256, delivered_at = excluded.delivered_at,
         changes = excluded.changes, updated_at = excluded.updated_at`,
    ).run(orgId, experimentId, row.etag, row.sha256, row.delivered_at, row.changes, nowIso());
    const blob = row.summary;
    const insert = this.#stmt(
      `INSERT OR REPLACE INTO delivery_summary_parts (org_id, experiment_id, part, bytes)
       VALUES (?, ?, ?, ?)`,
    );
    let part = 0;
    for (let at = 0; at < blob.length; at += SUMMARY_PART_BYTES, part++) {
      insert.run(orgId, experimentId, part, blob.subarray(at, at + SUMMARY_PART_BYTES));
    }
    this.#stmt(
      `DELETE FROM delivery_summary_parts
       WHERE org_id = ? AND experiment_id = ? AND part >= ?`,
    ).run(orgId, experimentId, part);
  }

  /** Mirrors the status of the analysis of `etag` into the catalog row of that ETag. */
  #setCatalogStatus(orgId: string, experimentId: string, etag: string, status: string): void {
    this.#stmt(
      `UPDATE datasets SET analysis_status = ?
       WHERE org_id = ? AND experiment_id = ? AND etag = ? AND analysis_status <> ?`,
    ).run(status, orgId, experimentId, etag, status);
  }

  #datasetRepo(): DatasetRepo {
    const rows = (sql: string, ...params: (string | number)[]) =>
      this.#stmt(sql).all(...params) as unknown as DatasetRow[];
    return {
      put: (entries: readonly DatasetEntry[]) =>
        this.#write(() => {
          // A changed ETag takes the status of a saved analysis of it, else `pending`; an older
          // observation leaves the row alone.
          const upsert = this.#stmt(
            `INSERT INTO datasets (${DATASET_COLUMNS})
             VALUES (?, ?, ?, ?, ?, ?, ?, COALESCE((SELECT status FROM analyses
               WHERE org_id = ? AND experiment_id = ? AND etag = ?), 'pending'))
             ON CONFLICT (org_id, experiment_id) DO UPDATE SET
               key = excluded.key, size_bytes = excluded.size_bytes, etag = excluded.etag,
               delivered_at = excluded.delivered_at, observed_at = excluded.observed_at,
               analysis_status = excluded.analysis_status
             WHERE excluded.observed_at >= datasets.observed_at`,
          );
          for (const e of entries) {
            upsert.run(
              e.org_id,
              e.experiment_id,
              e.key,
              e.size_bytes,
              e.etag,
              e.delivered_at,
              e.observed_at,
              e.org_id,
              e.experiment_id,
              e.etag,
            );
          }
        }),
      remove: (orgId, experimentId, observedBefore) =>
        this.#write(() =>
          Number(
            this.#stmt(
              "DELETE FROM datasets WHERE org_id = ? AND experiment_id = ? AND observed_at <= ?",
            ).run(orgId, experimentId, observedBefore).changes,
          ) > 0
        ),
      get: (orgId, experimentId) =>
        this.#run(() =>
          (this.#stmt(
            `SELECT ${DATASET_COLUMNS} FROM datasets WHERE org_id = ? AND experiment_id = ?`,
          ).get(orgId, experimentId) as DatasetRow | undefined) ?? null
        ),
      page: (orgId, { after, limit }) =>
        this.#run(() =>
          after === null || after === undefined
            ? rows(
              `SELECT ${DATASET_COLUMNS} FROM datasets WHERE org_id = ?
               ORDER BY experiment_id LIMIT ?`,
              orgId,
              limit,
            )
            : rows(
              `SELECT ${DATASET_COLUMNS} FROM datasets WHERE org_id = ? AND experiment_id > ?
               ORDER BY experiment_id LIMIT ?`,
              orgId,
              after,
              limit,
            )
        ),
      keyRange: (afterKey, throughKey, limit) =>
        this.#run(() =>
          throughKey === null
            ? rows(
              `SELECT ${DATASET_COLUMNS} FROM datasets WHERE key > ? ORDER BY key LIMIT ?`,
              afterKey,
              limit,
            )
            : rows(
              `SELECT ${DATASET_COLUMNS} FROM datasets WHERE key > ? AND key <= ?
               ORDER BY key LIMIT ?`,
              afterKey,
              throughKey,
              limit,
            )
        ),
      // A scan of the table (no index to keep up at every delivery): the clean-up asks every
      // ABN_CLEANUP_INTERVAL_SECONDS, about a millisecond per 10,000 rows.
      larger: (sizeBytes, limit) =>
        this.#run(() =>
          rows(
            `SELECT ${DATASET_COLUMNS} FROM datasets WHERE size_bytes > ?
             ORDER BY size_bytes DESC LIMIT ?`,
            sizeBytes,
            limit,
          )
        ),
      pending: (maxBytes, observedBefore, limit) =>
        this.#run(() =>
          rows(
            `SELECT ${DATASET_COLUMNS} FROM datasets
             WHERE analysis_status = 'pending' AND observed_at < ? AND size_bytes <= ?
             ORDER BY observed_at DESC LIMIT ?`,
            observedBefore,
            maxBytes,
            limit,
          )
        ),
    };
  }

  #grantRepo(): GrantRepo {
    return {
      put: (grants: readonly Grant[]) =>
        this.#write(() => {
          const upsert = this.#stmt(
            `INSERT INTO grants (key, org_id, experiment_id, expires_at) VALUES (?, ?, ?, ?)
             ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at
             WHERE excluded.expires_at > grants.expires_at`,
          );
          for (const g of grants) upsert.run(g.key, g.org_id, g.experiment_id, g.expires_at);
        }),
      open: (since, orgId) =>
        this.#run(() =>
          (orgId === undefined
            ? this.#stmt(
              `SELECT key, org_id, experiment_id, expires_at FROM grants
               WHERE expires_at >= ? ORDER BY key`,
            ).all(since)
            : this.#stmt(
              `SELECT key, org_id, experiment_id, expires_at FROM grants
               WHERE expires_at >= ? AND org_id = ? ORDER BY key`,
            ).all(since, orgId)) as unknown as Grant[]
        ),
      get: (key, since) =>
        this.#run(() =>
          (this.#stmt(
            `SELECT key, org_id, experiment_id, expires_at FROM grants
             WHERE key = ? AND expires_at >= ?`,
          ).get(key, since) as Grant | undefined) ?? null
        ),
      prune: (before) =>
        this.#write(() =>
          Number(this.#stmt("DELETE FROM grants WHERE expires_at < ?").run(before).changes)
        ),
    };
  }
}

/** Secrets as files `{dir}/{name}.key` (base64, mode 0600). */
function fileSecrets(dir: string): SecretRepo {
  const file = (name: string) => {
    if (!/^[a-z0-9-]{1,64}$/.test(name)) throw new RangeError(`Invalid secret name: ${name}`);
    return `${dir}/${name}.key`;
  };
  return {
    getOrCreate: (name, initial) => loadOrCreateSecret(file(name), initial),
    get: (name) => readSecret(file(name)),
  };
}
