/**
 * The control plane on PostgreSQL, shared by every instance behind a load balancer: the same
 * repositories as the SQLite driver (one file each), plus what scale-out needs: secrets in a
 * table, analysis jobs claimed with leases, and timer locks as session advisory locks (held on a
 * connection reserved for the job, so a dying instance's lock is released with its connection).
 */
import type {
  AnalysisJobRepo,
  AnalysisRepo,
  ControlPlane,
  KeyRepo,
  OrgRepo,
  SecretRepo,
  SettingsRepo,
} from "../control_plane.ts";
import { DatabaseOpenError } from "../control_plane.ts";
import type { Sql } from "./pg_client.ts";
import { createPool, describeOpenFailure, LOCK_NAMESPACE, PgClient } from "./pg_client.ts";
import { checkPrivileges, migrate } from "./migrations.ts";
import { postgresOrgs } from "./orgs.ts";
import { postgresKeys } from "./api_keys.ts";
import { postgresSettings } from "./settings.ts";
import { postgresAnalyses } from "./analyses.ts";
import { postgresSecrets } from "./secrets.ts";
import { postgresAnalysisJobs } from "./analysis_jobs.ts";

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
  readonly secrets: SecretRepo;
  readonly jobs: AnalysisJobRepo;
  /** The schema versions before and after the migrations applied at open. */
  readonly schema: { from: number; to: number };
  readonly #db: PgClient;

  constructor(sql: Sql, schema: { from: number; to: number }) {
    this.schema = schema;
    const db = this.#db = new PgClient(sql);
    this.orgs = postgresOrgs(db);
    this.keys = postgresKeys(db);
    this.settings = postgresSettings(db);
    this.analyses = postgresAnalyses(db);
    this.secrets = postgresSecrets(db);
    this.jobs = postgresAnalysisJobs(db);
  }

  /** The pool itself (the copy from SQLite and tests use it). */
  get sql(): Sql {
    return this.#db.sql;
  }

  withTimerLock<T>(name: string, fn: () => Promise<T>): Promise<T | undefined> {
    return this.#db.run(async (sql) => {
      const conn = await sql.reserve();
      try {
        const [{ locked }] = await conn<{ locked: boolean }[]>`
          SELECT pg_try_advisory_lock(${LOCK_NAMESPACE}, hashtext(${name})) AS locked`;
        if (!locked) return undefined;
        try {
          return await fn();
        } finally {
          // A broken connection released the lock already.
          await conn`SELECT pg_advisory_unlock(${LOCK_NAMESPACE}, hashtext(${name}))`
            .catch(() => {});
        }
      } finally {
        conn.release();
      }
    });
  }

  async reachable(): Promise<boolean> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<boolean>((resolve) => timer = setTimeout(resolve, 2000, false));
    try {
      return await Promise.race([
        this.#db.sql`SELECT 1`.then(() => true, () => false),
        timeout,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    // Work has stopped by now; a connection stuck connecting to a server that is away is cut.
    await this.#db.sql.end({ timeout: 1 });
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
  let sql: Sql | undefined;
  try {
    sql = createPool(url, { max: options.max });
    await sql`SELECT 1`;
    // Privileges first (on the tables there are), so a role that may not read them hears so.
    await checkPrivileges(sql);
    const schema = await migrate(sql);
    await checkPrivileges(sql);
    return new PostgresControlPlane(sql, schema);
  } catch (error) {
    await sql?.end({ timeout: 1 }).catch(() => {});
    throw new DatabaseOpenError(describeOpenFailure(error, url), { cause: error });
  }
}
