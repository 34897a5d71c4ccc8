/**
 * `main.ts admin …`: organizations and API keys, straight on the control plane (safe while the
 * server runs: SQLite in WAL mode, or PostgreSQL shared by every instance; the servers read keys
 * at least every half second), and the database itself: `db migrate`, `db copy-from-sqlite`.
 */
import type { Config } from "../config.ts";
import { openControlPlane } from "../db/open_control_plane.ts";
import { DatabaseOpenError, DatabaseUnavailable } from "../db/control_plane.ts";
import { SqliteControlPlane } from "../db/sqlite/sqlite_control_plane.ts";

const USAGE = `usage:
  admin org create NAME [--json]
  admin org deactivate ORG_ID
  admin org activate ORG_ID
  admin org list [--json]
  admin org set-quota ORG_ID BYTES|none [--json]
                                     storage its datasets may take; none: ABN_ORG_QUOTA_BYTES
  admin key create ORG_ID [--json]
  admin key list ORG_ID [--json]
  admin key revoke KEY_ID
  admin db migrate                   apply pending migrations (PostgreSQL; SQLite migrates itself)
  admin db copy-from-sqlite PATH     copy a single-host SQLite file into ABN_DATABASE_URL`;

export interface CliIo {
  out: (line: string) => void;
  err: (line: string) => void;
}

const defaultIo: CliIo = { out: (l) => console.log(l), err: (l) => console.error(l) };

/** Runs an admin command; answers the process exit code. */
export async function runAdmin(
  args: string[],
  config: Readonly<Config>,
  io: CliIo = defaultIo,
): Promise<number> {
  const asJson = args.includes("--json");
  const [group, action, arg, value] = args.filter((a) => a !== "--json");
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
  await Deno.mkdir(config.dataDir, { recursive: true });
  let db;
  try {
    db = await openControlPlane(config);
  } catch (error) {
    return databaseFailure(error, io);
  }
  try {
    const need = (what: string) => {
      if (!arg) throw new UsageError(`missing ${what}\n${USAGE}`);
      return arg;
    };
    switch (`${group} ${action}`) {
      case "org create": {
        const org = await db.orgs.create(need("NAME"));
        io.out(asJson ? JSON.stringify({ org_id: org.id, name: org.name }) : org.id);
        return 0;
      }
      case "org deactivate":
      case "org activate": {
        const id = need("ORG_ID");
        if (!(await db.orgs.setActive(id, action === "activate"))) {
          io.err(`No organization ${id}`);
          return 1;
        }
        io.out(
          asJson
            ? JSON.stringify({ org_id: id, active: action === "activate" })
            : `${id} ${action}d`,
        );
        return 0;
      }
      case "org list": {
        const orgs = await db.orgs.list();
        if (asJson) {
          io.out(JSON.stringify(orgs.map((o) => ({ org_id: o.id, ...o, id: undefined }))));
        } else {
          for (const o of orgs) {
            io.out(`${o.id}\t${o.active ? "active" : "deactivated"}\t${o.created_at}\t${o.name}`);
          }
        }
        return 0;
      }
      case "org set-quota": {
        const id = need("ORG_ID");
        const quota = parseQuota(value);
        if (!(await db.orgs.setQuota(id, quota))) {
          io.err(`No organization ${id}`);
          return 1;
        }
        io.out(
          asJson
            ? JSON.stringify({ org_id: id, quota_bytes: quota })
            : quota === null
            ? `${id} quota none (ABN_ORG_QUOTA_BYTES applies)`
            : `${id} quota ${quota} bytes`,
        );
        return 0;
      }
      case "key create": {
        const orgId = need("ORG_ID");
        if (!(await db.orgs.get(orgId))) {
          io.err(`No organization ${orgId}`);
          return 1;
        }
        const { api_key, info } = await db.keys.create(orgId);
        io.out(asJson ? JSON.stringify({ api_key, key_id: info.key_id, org_id: orgId }) : api_key);
        return 0;
      }
      case "key list": {
        const orgId = need("ORG_ID");
        if (!(await db.orgs.get(orgId))) {
          io.err(`No organization ${orgId}`);
          return 1;
        }
        const keys = await db.keys.list(orgId);
        if (asJson) io.out(JSON.stringify(keys));
        else {
          for (const k of keys) {
            io.out(
              `${k.key_id}\t${k.prefix}…\t${
                k.active ? "active" : "revoked"
              }\tcreated ${k.created_at}\tlast used ${k.last_used_at ?? "never"}`,
            );
          }
        }
        return 0;
      }
      case "key revoke": {
        const keyId = need("KEY_ID");
        if (!(await db.keys.revoke(keyId))) {
          io.err(`No API key ${keyId}`);
          return 1;
        }
        io.out(asJson ? JSON.stringify({ key_id: keyId, revoked: true }) : `${keyId} revoked`);
        return 0;
      }
      default:
        io.err(`Unknown command: admin ${group} ${action}\n${USAGE}`);
        return 2;
    }
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

class UsageError extends Error {}

/** `BYTES` (a whole number) or `none` of `org set-quota`. */
function parseQuota(value: string | undefined): number | null {
  if (value === "none") return null;
  if (value !== undefined && /^\d+$/.test(value) && Number.isSafeInteger(Number(value))) {
    return Number(value);
  }
  throw new UsageError(
    `${
      value === undefined ? "missing BYTES" : `Invalid quota ${JSON.stringify(value)}`
    }: expected a whole number of bytes or none\n${USAGE}`,
  );
}
