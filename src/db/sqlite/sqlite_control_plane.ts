/**
 * The control plane in one SQLite file (`node:sqlite`): the embedded default for a single host
 * and `deno task dev`. WAL mode so the admin CLI can write while the server reads; statements are
 * prepared once per handle; migrations keyed by `PRAGMA user_version` (`migrations.ts`).
 */
import { DatabaseSync } from "node:sqlite";
import type { StatementSync } from "node:sqlite";
import type {
  AnalysisOutcome,
  AnalysisRepo,
  AnalysisRow,
  AnalysisStatus,
  ApiKeyInfo,
  ControlPlane,
  DeliverySummaryRepo,
  DeliverySummaryRow,
  HistoryRepo,
  HistorySnapshot,
  KeyOwner,
  KeyRepo,
  Org,
  OrgRepo,
  OutdatedAnalysis,
  RecordOutcome,
  SettingsRepo,
} from "../control_plane.ts";
import { DatabaseUnavailable, nowIso } from "../control_plane.ts";
import { generateKey, hashKey, KEY_PREFIX } from "../api_keys.ts";
import { newId } from "../ids.ts";
import { migrate } from "./migrations.ts";

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

/** Checks an organization name: 1 to 200 characters once trimmed. */
export function orgName(name: string): string {
  const trimmed = name.trim();
  if (trimmed === "" || trimmed.length > 200) {
    throw new RangeError("Cannot create organization: the name must be 1 to 200 characters");
  }
  return trimmed;
}

export class SqliteControlPlane implements ControlPlane {
  readonly driver = "sqlite";
  /** The SQLite handle itself (tests and the copy to PostgreSQL read it directly). */
  readonly sqlite: DatabaseSync;
  readonly orgs: OrgRepo;
  readonly keys: KeyRepo;
  readonly settings: SettingsRepo;
  readonly analyses: AnalysisRepo;
  readonly history: HistoryRepo;
  readonly deliverySummaries: DeliverySummaryRepo;
  readonly #statements = new Map<string, StatementSync>();

  constructor(path: string) {
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
    this.history = this.#historyRepo();
    this.deliverySummaries = this.#deliverySummaryRepo();
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
    if (this.sqlite.isOpen) this.sqlite.close();
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

  /** Runs `work` now; a transient SQLite failure becomes `DatabaseUnavailable`. */
  #run<T>(work: () => T): Promise<T> {
    try {
      return Promise.resolve(work());
    } catch (error) {
      if (isUnavailable(error)) {
        return Promise.reject(new DatabaseUnavailable((error as Error).message, { cause: error }));
      }
      return Promise.reject(error);
    }
  }

  /** Runs `work` in one write transaction. */
  #transaction<T>(work: () => T): T {
    this.sqlite.exec("BEGIN IMMEDIATE");
    try {
      const result = work();
      this.sqlite.exec("COMMIT");
      return result;
    } catch (error) {
      this.sqlite.exec("ROLLBACK");
      throw error;
    }
  }

  #orgRepo(): OrgRepo {
    return {
      create: (name) =>
        this.#run(() => {
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
        this.#run(() =>
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
        this.#run(() => {
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
        this.#run(() =>
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
        this.#run(() => {
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
        this.#run(() => {
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
        this.#run(() => {
          this.#stmt(
            `INSERT INTO analyses (org_id, experiment_id, etag, size_bytes, status, delivered_at)
             VALUES (?, ?, ?, ?, 'pending', ?)
             ON CONFLICT (org_id, experiment_id) DO UPDATE SET
               etag = excluded.etag, size_bytes = excluded.size_bytes, status = 'pending',
               error = NULL, rows = NULL, result = NULL, delivered_at = excluded.delivered_at,
               started_at = NULL, finished_at = NULL, analysis_version = NULL`,
          ).run(orgId, experimentId, etag, sizeBytes, deliveredAt);
        }),
      saveResult: (orgId, experimentId, etag, outcome: AnalysisOutcome, startedAt) => {
        try {
          const changes = this.#stmt(
            `UPDATE analyses SET status = ?, error = ?, rows = ?, result = ?, started_at = ?,
               finished_at = ?, analysis_version = ?
             WHERE org_id = ? AND experiment_id = ? AND etag = ?`,
          ).run(
            outcome.status,
            outcome.error,
            outcome.rows,
            outcome.result === null ? null : JSON.stringify(outcome.result),
            startedAt,
            nowIso(),
            outcome.version ?? null,
            orgId,
            experimentId,
            etag,
          ).changes;
          return Promise.resolve(Number(changes) > 0);
        } catch (error) {
          // A busy or read-only database must not take the process down from a background run:
          // the row stays `pending`, and the timer's scan runs the analysis again.
          if (isUnavailable(error)) return Promise.resolve(false);
          return Promise.reject(error);
        }
      },
      delete: (orgId, experimentId) =>
        this.#run(() => {
          this.#stmt("DELETE FROM analyses WHERE org_id = ? AND experiment_id = ?")
            .run(orgId, experimentId);
        }),
      etags: () =>
        this.#run(() => {
          const rows = this.#stmt("SELECT org_id, experiment_id, etag FROM analyses")
            .all() as unknown as { org_id: string; experiment_id: string; etag: string }[];
          return new Map(rows.map((r) => [`${r.org_id}/${r.experiment_id}`, r.etag]));
        }),
      pending: () =>
        this.#run(() => {
          const rows = this.#stmt(
            "SELECT org_id, experiment_id FROM analyses WHERE status = 'pending'",
          ).all() as unknown as { org_id: string; experiment_id: string }[];
          return new Set(rows.map((r) => `${r.org_id}/${r.experiment_id}`));
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
        this.#run(() =>
          this.#transaction((): RecordOutcome => {
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
          })
        ),
      list: (orgId, experimentId, afterSeq, limit) =>
        this.#run(() =>
          this.#stmt(
            `SELECT seq, sha256, etag, delivered_at, analysed_at, figures FROM history_snapshots
             WHERE org_id = ? AND experiment_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
          ).all(orgId, experimentId, afterSeq, limit) as unknown as HistorySnapshot[]
        ),
      delete: (orgId, experimentId) =>
        this.#run(() => {
          this.#stmt("DELETE FROM history_snapshots WHERE org_id = ? AND experiment_id = ?")
            .run(orgId, experimentId);
        }),
    };
  }

  #deliverySummaryRepo(): DeliverySummaryRepo {
    return {
      get: (orgId, experimentId) =>
        this.#run(() => {
          const row = this.#stmt(
            `SELECT etag, sha256, delivered_at, summary, changes FROM delivery_summaries
             WHERE org_id = ? AND experiment_id = ?`,
          ).get(orgId, experimentId) as DeliverySummaryRow | undefined;
          return row === undefined ? null : { ...row };
        }),
      save: (orgId, experimentId, row) =>
        this.#run(() => {
          this.#stmt(
            `INSERT INTO delivery_summaries (org_id, experiment_id, etag, sha256, delivered_at,
               summary, changes, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (org_id, experiment_id) DO UPDATE SET etag = excluded.etag,
               sha256 = excluded.sha256, delivered_at = excluded.delivered_at,
               summary = excluded.summary, changes = excluded.changes,
               updated_at = excluded.updated_at`,
          ).run(
            orgId,
            experimentId,
            row.etag,
            row.sha256,
            row.delivered_at,
            row.summary,
            row.changes,
            nowIso(),
          );
        }),
      delete: (orgId, experimentId) =>
        this.#run(() => {
          this.#stmt("DELETE FROM delivery_summaries WHERE org_id = ? AND experiment_id = ?")
            .run(orgId, experimentId);
        }),
    };
  }
}
