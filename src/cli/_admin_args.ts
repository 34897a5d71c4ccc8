/**
 * What every admin command shares: its arguments (positional ones, `--json`, options with a value),
 * its usage text and the call a command runs with.
 */
import type { ControlPlane } from "../db/control_plane.ts";

export const USAGE = `usage:
  admin org create NAME [--json]
  admin org deactivate ORG_ID
  admin org activate ORG_ID
  admin org list [--json]
  admin org set-quota ORG_ID BYTES|none [--json]
                                     storage its datasets may take; none: ABN_ORG_QUOTA_BYTES
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

export const defaultIo: CliIo = { out: (l) => console.log(l), err: (l) => console.error(l) };

/** A mistake in the command line: its message is printed, and the exit code is 2. */
export class UsageError extends Error {}

export interface ParsedArgs {
  positional: string[];
  options: Map<string, string>;
  asJson: boolean;
}

/** Options that take a value (`--name X` or `--name=X`). */
const VALUE_OPTIONS = ["scopes", "name", "expires-in-days", "overlap-hours"];

/** Positional arguments, `--json`, and the options of `VALUE_OPTIONS`; throws for others. */
export function parseArgs(args: string[]): ParsedArgs {
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

/** One admin command's call: the database, its arguments and where it writes. */
export interface AdminCall {
  db: ControlPlane;
  /** The command's second word (`activate` of `org activate`). */
  action: string;
  /** The first argument after the command, or a usage error naming `what`. */
  need(what: string): string;
  /** The second argument after the command (`BYTES` of `org set-quota ORG_ID BYTES`). */
  value: string | undefined;
  options: Map<string, string>;
  asJson: boolean;
  io: CliIo;
}

export type AdminCommand = (call: AdminCall) => Promise<number>;
