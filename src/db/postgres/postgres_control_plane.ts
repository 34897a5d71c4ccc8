/**
 * The control plane on PostgreSQL, shared by every instance behind a load balancer: the same
 * repositories as the SQLite driver (one file each: organizations, keys, settings, analyses, the
 * dataset catalog, upload grants, history snapshots, delivery summaries), plus what scale-out
 * needs: secrets in a table, analysis jobs claimed with leases, and timer locks as advisory locks
 * (released with their connection when an instance dies).
 */
import type {
  AnalysisJobRepo,
  AnalysisRepo,
  ControlPlane,
  DatasetRepo,
  DeliverySummaryRepo,
  GrantRepo,
  HistoryRepo,
  KeyRepo,
  OrgRepo,
  SecretRepo,
  SettingsRepo,
} from "../control_plane.ts";
import { DatabaseOpenError } from "../control_plane.ts";
import type { PgClient } from "./pg_client.ts";
import { createPool, describeOpenFailure, LOCK_NAMESPACE } from "./pg_client.ts";
import { checkPrivileges, migrate } from "./migrations.ts";
import { postgresOrgs } from "./orgs.ts";
import { postgresKeys } from "./api_keys.ts";
import { postgresSettings } from "./settings.ts";
import { postgresAnalyses } from "./analyses.ts";
import { postgresSecrets } from "./secrets.ts";
import { postgresAnalysisJobs } from "./analysis_jobs.ts";
import { postgresDatasets } from "./datasets.ts";
import { postgresGrants } from "./grants.ts";
import { postgresHistory } from "./history.ts";
import { postgresDeliverySummaries } from "./delivery_summaries.ts";

export interface OpenPostgresOptions {
  /** Connections in the pool unless the URL says (`?max=`); default 10. */
  max?: number;
}

/** Timer locks are the advisory locks (LOCK_NAMESPACE, hashtext(name)); migrations use key 1. */
export class PostgresControlPlane implements ControlPlane {
  readonly driver = "postgres";
  readonly orgs: OrgRepo;
  readonly keys: KeyRepo;
  readonly settings: SettingsRepo;
  readonly analyses: AnalysisRepo;
  readonly datasets: DatasetRepo;
  readonly grants: GrantRepo;
  readonly history: HistoryRepo;
  readonly deliverySummaries: DeliverySummaryRepo;
  readonly secrets: SecretRepo;
  readonly jobs: AnalysisJobRepo;
  /** The schema versions before and after the migrations applied at open. */
  readonly schema: { from: number; to: number };
  readonly #db: PgClient;

  constructor(db: PgClient, schema: { from: number; to: number }) {
    this.schema = schema;
    this.#db = db;
    this.orgs = postgresOrgs(db);
    this.keys = postgresKeys(db);
    this.settings = postgresSettings(db);
    this.analyses = postgresAnalyses(db);
    this.datasets = postgresDatasets(db);
    this.grants = postgresGrants(db);
    this.history = postgresHistory(db);
    this.deliverySummaries = postgresDeliverySummaries(db);
    this.secrets = postgresSecrets(db);
    this.jobs = postgresAnalysisJobs(db);
  }

  /** The pool, with its error mapping (the copy from SQLite and tests use it). */
  get db(): PgClient {
    return this.#db;
  }

  /**
   * A session advisory lock (`pg_try_advisory_lock`) on a connection checked out for the job:
   * released at the end, or with the connection when the instance dies or the server restarts
   * (a connection that failed meanwhile is discarded, never returned to the pool holding it).
   */
  async withTimerLock<T>(name: string, fn: () => Promise<T>): Promise<T | undefined> {
    let running: Promise<T> | undefined;
    try {
      return await this.#db.session(async (client) => {
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

  async close(): Promise<void> {
    await this.#db.end();
  }
}

/**
 * Connects, applies pending migrations (under a lock) and checks the role's privileges. Anything wrong (the
 * server unreachable, a wrong password, no such database, missing permissions) throws
 * `DatabaseOpenError` with one line naming the cause, never the password.
 */
export async function openPostgres(
  url: string,
  options: OpenPostgresOptions = {},
): Promise<PostgresControlPlane> {
  let db: PgClient | undefined;
  try {
    db = createPool(url, { max: options.max });
    await db.query("SELECT 1");
    // Privileges first (on the tables there are), so a role that may not read them hears so.
    await checkPrivileges(db);
    const schema = await migrate(db);
    await checkPrivileges(db);
    return new PostgresControlPlane(db, schema);
  } catch (error) {
    await db?.end().catch(() => {});
    throw new DatabaseOpenError(describeOpenFailure(error, url), { cause: error });
  }
}
