/**
 * The control plane on PostgreSQL, shared by every instance behind a load balancer: the shared
 * repositories (`../repos/`) over `PostgresDialect` (the pool, advisory locks), with the
 * secrets in a table so every instance signs alike.
 */
import { DatabaseOpenError } from "../control_plane.ts";
import { SqlControlPlane } from "../repos/mod.ts";
import { secretRepo } from "../repos/secrets.ts";
import type { PgClient } from "./pg_client.ts";
import { createPool, describeOpenFailure } from "./pg_client.ts";
import { PostgresDialect } from "./postgres_dialect.ts";
import { checkPrivileges, migrate } from "./migrations.ts";

export interface OpenPostgresOptions {
  /** Connections in the pool unless the URL says (`?max=`); default 10. */
  max?: number;
  /** The service's external base URL, for the `links` of webhook events. */
  publicUrl?: string;
}

export class PostgresControlPlane extends SqlControlPlane {
  /** The schema versions before and after the migrations applied at open. */
  readonly schema: { from: number; to: number };
  /** The pool, with its error mapping (the copy from SQLite and tests use it). */
  readonly db: PgClient;

  constructor(
    db: PgClient,
    schema: { from: number; to: number },
    options: { publicUrl?: string } = {},
  ) {
    const dialect = new PostgresDialect(db);
    super(dialect, secretRepo(dialect), options);
    this.schema = schema;
    this.db = db;
  }
}

/**
 * Connects, applies pending migrations (under a lock) and checks the role's privileges. Anything
 * wrong (the server unreachable, a wrong password, no such database, missing permissions) throws
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
    return new PostgresControlPlane(db, schema, { publicUrl: options.publicUrl });
  } catch (error) {
    await db?.end().catch(() => {});
    throw new DatabaseOpenError(describeOpenFailure(error, url), { cause: error });
  }
}
