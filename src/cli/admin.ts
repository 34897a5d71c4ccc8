/**
 * `main.ts admin …`: organizations and API keys, straight on the control plane (safe while the
 * server runs: SQLite in WAL mode, or PostgreSQL shared by every instance; the servers read keys
 * at least every half second), and the database itself: `db migrate`, `db copy-from-sqlite`.
 */
import type { Config } from "../config.ts";
import { openControlPlane } from "../db/open_control_plane.ts";
import type { ApiKeyInfo, ControlPlane, NewKeyOptions } from "../db/control_plane.ts";
import { DatabaseOpenError, DatabaseUnavailable } from "../db/control_plane.ts";
import { auditEventId } from "../audit/audit_log.ts";
import { SCOPES } from "../scopes.ts";
import { MAX_OVERLAP_HOURS, parseKeyName, parseScopeList } from "../routes/key_requests.ts";
import { SqliteControlPlane } from "../db/sqlite/sqlite_control_plane.ts";

const USAGE = `usage:
  admin org create NAME [--json]
  admin org deactivate ORG_ID
  admin org activate ORG_ID
  admin org list [--json]
  admin key create ORG_ID [--scopes upload,read,write,admin] [--name NAME]
                    [--expires-in-days N] [--json]
  admin key list ORG_ID [--json]
  admin key revoke KEY_ID
  admin key rotate KEY_ID [--overlap-hours N] [--json]   (default 24; 0 to 168)
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
  let parsed: ParsedArgs;
  try {
    parsed = parseArgs(args);
  } catch (error) {
    io.err(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const { options, asJson } = parsed;
  const [group, action, arg] = parsed.positional;
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
      case "key create": {
        const orgId = need("ORG_ID");
        if (!(await db.orgs.get(orgId))) {
          io.err(`No organization ${orgId}`);
          return 1;
        }
        const { api_key, info } = await db.keys.create(orgId, keyOptions(options));
        await auditKeyChange(db, "key.created", info, {
          name: info.name,
          prefix: info.prefix,
          scopes: info.scopes,
          expires_at: info.expires_at,
        });
        io.out(asJson ? JSON.stringify(createdJson(api_key, info)) : api_key);
        return 0;
      }
      case "key rotate": {
        const keyId = need("KEY_ID");
        const overlapHours = numberOption(options, "overlap-hours", 24, MAX_OVERLAP_HOURS);
        const result = await db.keys.rotate(keyId, { overlapSeconds: overlapHours * 3600 });
        if (result.outcome === "not_found") {
          io.err(`No API key ${keyId}`);
          return 1;
        }
        if (result.outcome === "not_active") {
          io.err(`${keyId} is ${result.key.status}: only an active key can be rotated`);
          return 1;
        }
        const { created, old } = result;
        await auditKeyChange(db, "key.rotated", old, {
          new_key_id: created.info.key_id,
          name: old.name,
          scopes: old.scopes,
          overlap_hours: overlapHours,
          old_expires_at: old.expires_at,
          expires_at: created.info.expires_at,
        });
        io.out(
          asJson
            ? JSON.stringify({ ...createdJson(created.api_key, created.info), replaces: old })
            : created.api_key,
        );
        if (!asJson) io.err(`${keyId} keeps working until ${old.expires_at}`);
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
            const expiry = k.expires_at === null ? "" : `\texpires ${k.expires_at}`;
            io.out(
              `${k.key_id}\t${k.prefix}…\t${k.status}\t${
                k.scopes.join(",")
              }\tcreated ${k.created_at}\tlast used ${k.last_used_at ?? "never"}${expiry}${
                k.name === null ? "" : `\t${k.name}`
              }`,
            );
          }
        }
        return 0;
      }
      case "key revoke": {
        const keyId = need("KEY_ID");
        // An operator may revoke any key, the organization's last admin key too (warned below).
        const result = await db.keys.revoke(keyId);
        if (result.outcome !== "revoked" && result.outcome !== "unchanged") {
          io.err(`No API key ${keyId}`);
          return 1;
        }
        if (result.outcome === "revoked") {
          await auditKeyChange(db, "key.revoked", result.key, {
            name: result.key.name,
            prefix: result.key.prefix,
          });
        }
        io.out(asJson ? JSON.stringify({ key_id: keyId, revoked: true }) : `${keyId} revoked`);
        const left = (await db.keys.list(result.key.org_id))
          .filter((k) => k.active && k.scopes.includes("admin"));
        if (left.length === 0) {
          io.err(
            `${result.key.org_id} has no active admin key left: keys can only be managed with the admin CLI until one is created (admin key create ${result.key.org_id})`,
          );
        }
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

interface ParsedArgs {
  positional: string[];
  options: Map<string, string>;
  asJson: boolean;
}

/** Options that take a value (`--name X` or `--name=X`). */
const VALUE_OPTIONS = ["scopes", "name", "expires-in-days", "overlap-hours"];

/** Positional arguments, `--json`, and the options of `VALUE_OPTIONS`; throws for others. */
function parseArgs(args: string[]): ParsedArgs {
  const positional: string[] = [];
  const options = new Map<string, string>();
  let asJson = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--json") {
      asJson = true;
      continue;
    }
    if (!arg.startsWith("--")) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = arg.slice(2, eq < 0 ? undefined : eq);
    if (!VALUE_OPTIONS.includes(name)) throw new UsageError(`Unknown option --${name}`);
    const value = eq < 0 ? args[++i] : arg.slice(eq + 1);
    if (value === undefined) throw new UsageError(`--${name} needs a value`);
    options.set(name, value);
  }
  return { positional, options, asJson };
}

/** A number option from 0 to `max` (`fallback` when absent); throws `UsageError` otherwise. */
function numberOption(
  options: Map<string, string>,
  name: string,
  fallback: number,
  max: number,
): number {
  const text = options.get(name);
  if (text === undefined) return fallback;
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value) || value < 0 || value > max) {
    throw new UsageError(`--${name} must be a number from 0 to ${max}`);
  }
  return value;
}

/** What `key create` asks for: every scope, no name and no expiry unless given. */
function keyOptions(options: Map<string, string>): NewKeyOptions {
  const scopes = options.get("scopes");
  const days = options.get("expires-in-days");
  let expiresAt: string | null = null;
  if (days !== undefined) {
    const value = numberOption(options, "expires-in-days", 0, 36_500);
    if (value <= 0) throw new UsageError("--expires-in-days must be more than 0");
    expiresAt = new Date(Date.now() + value * 86_400_000).toISOString();
  }
  try {
    return {
      name: parseKeyName(options.get("name")),
      scopes: scopes === undefined
        ? SCOPES
        : parseScopeList(scopes.split(",").map((s) => s.trim())),
      expiresAt,
    };
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function createdJson(apiKey: string, info: ApiKeyInfo) {
  return {
    api_key: apiKey,
    key_id: info.key_id,
    org_id: info.org_id,
    name: info.name,
    scopes: info.scopes,
    expires_at: info.expires_at,
  };
}

/** The audit event of a key change made here (by no key: `key_id` null). */
async function auditKeyChange(
  db: ControlPlane,
  action: "key.created" | "key.revoked" | "key.rotated",
  key: ApiKeyInfo,
  details: Record<string, unknown>,
): Promise<void> {
  const now = Date.now();
  await db.audit.record([{
    id: auditEventId(now),
    org_id: key.org_id,
    at: new Date(now).toISOString(),
    action,
    key_id: null,
    experiment_id: null,
    details: { target_key_id: key.key_id, ...details, via: "admin_cli" },
  }]);
}
