/**
 * `main.ts admin …`: organizations and API keys, straight on the control plane (safe while the
 * server runs: SQLite in WAL mode, or PostgreSQL shared by every instance; the servers read keys
 * at least every half second), and the database itself: `db migrate`, `db copy-from-sqlite`.
 */
import type { Config } from "../config.ts";
import { openControlPlane } from "../db/open_control_plane.ts";
import { DatabaseOpenError, DatabaseUnavailable } from "../db/control_plane.ts";
import { SqliteControlPlane } from "../db/sqlite/sqlite_control_plane.ts";

import {
  type AdminCommand,
  type CliIo,
  defaultIo,
  parseArgs,
  type ParsedArgs,
  USAGE,
  UsageError,
} from "./_admin_args.ts";
import { orgCreate, orgList, orgSetActive, orgSetQuota } from "./_admin_orgs.ts";
import { keyCreate, keyList, keyRevoke, keyRotate } from "./_admin_keys.ts";

export type { CliIo };

/** Every command on the control plane, by its two words. */
const COMMANDS: Readonly<Record<string, AdminCommand>> = {
  "org create": orgCreate,
  "org activate": orgSetActive,
  "org deactivate": orgSetActive,
  "org list": orgList,
  "org set-quota": orgSetQuota,
  "key create": keyCreate,
  "key list": keyList,
  "key rotate": keyRotate,
  "key revoke": keyRevoke,
};

/** Runs an admin command; answers the process exit code. */
export async function runAdmin(
  args: string[],
  config: Readonly<Config>,
  io: CliIo = defaultIo,
): Promise<number> {
  let parsed: ParsedArgs;
  try {
    parsed = parseArgs(args);
  } catch (error) {
    io.err(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const { options, asJson } = parsed;
  const [group, action, arg, value] = parsed.positional;
  if (!group || !action) {
    io.err(USAGE);
    return 2;
  }
  if (group === "db") {
    try {
      return await runDb(action, arg, config, io);
    } catch (error) {
      return databaseFailure(error, io);
    }
  }
  const command = COMMANDS[`${group} ${action}`];
  if (!command) {
    io.err(`Unknown command: admin ${group} ${action}\n${USAGE}`);
    return 2;
  }
  await Deno.mkdir(config.dataDir, { recursive: true });
  let db;
  try {
    db = await openControlPlane(config);
  } catch (error) {
    return databaseFailure(error, io);
  }
  const need = (what: string) => {
    if (!arg) throw new UsageError(`missing ${what}\n${USAGE}`);
    return arg;
  };
  try {
    return await command({ db, action, need, value, options, asJson, io });
  } catch (error) {
    if (error instanceof UsageError || error instanceof RangeError) {
      io.err(error.message);
      return 2;
    }
    return databaseFailure(error, io);
  } finally {
    await db.close();
  }
}

/** One line for a database that cannot be opened or answered; rethrows anything else. */
function databaseFailure(error: unknown, io: CliIo): number {
  if (error instanceof DatabaseOpenError || error instanceof DatabaseUnavailable) {
    io.err(`Cannot use the database: ${error.message}`);
    return 1;
  }
  throw error;
}

/** `admin db migrate` and `admin db copy-from-sqlite PATH`. */
async function runDb(
  action: string,
  arg: string | undefined,
  config: Readonly<Config>,
  io: CliIo,
): Promise<number> {
  if (action !== "migrate" && action !== "copy-from-sqlite") {
    io.err(`Unknown command: admin db ${action}\n${USAGE}`);
    return 2;
  }
  if (!config.databaseUrl) {
    if (action === "migrate") {
      // SQLite brings its schema up to date whenever the file is opened.
      const db = await openControlPlane(config);
      await db.close();
      io.out(`SQLite ${config.dbPath}: schema up to date (SQLite migrates itself at start-up)`);
      return 0;
    }
    io.err(
      "admin db copy-from-sqlite needs ABN_DATABASE_URL: the PostgreSQL database to copy into",
    );
    return 2;
  }
  const { openPostgres } = await import("../db/postgres/postgres_control_plane.ts");
  if (action === "migrate") {
    const pg = await openPostgres(config.databaseUrl);
    await pg.close();
    const { from, to } = pg.schema;
    io.out(
      from === to
        ? `PostgreSQL schema up to date (version ${to})`
        : `PostgreSQL schema migrated from version ${from} to ${to}`,
    );
    return 0;
  }
  if (!arg) {
    io.err(`missing PATH\n${USAGE}`);
    return 2;
  }
  try {
    await Deno.stat(arg);
  } catch {
    io.err(`No SQLite file at ${arg}`);
    return 1;
  }
  const { copyFromSqlite } = await import("../db/postgres/copy_from_sqlite.ts");
  const sqlite = new SqliteControlPlane(arg);
  const pg = await openPostgres(config.databaseUrl).catch(async (error) => {
    await sqlite.close();
    throw error;
  });
  try {
    const report = await copyFromSqlite(sqlite.sqlite, sqlite.secrets, pg);
    for (const t of report.tables) {
      io.out(
        `${t.table}: ${t.sqlite} in SQLite, ${t.found} of them in PostgreSQL (${t.postgres} rows there in all)`,
      );
    }
    for (const [name, outcome] of Object.entries(report.secrets)) {
      io.out(`secret ${name}: ${outcome}`);
    }
    if (!report.verified) {
      io.err("Copy not verified: some SQLite rows are missing in PostgreSQL (see above)");
      return 1;
    }
    io.out("Copy verified: every SQLite row is in PostgreSQL");
    return 0;
  } finally {
    await sqlite.close();
    await pg.close();
  }
}
