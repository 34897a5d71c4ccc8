/**
 * `main.ts admin …`: organizations and API keys, straight on the SQLite file (safe while the
 * server runs: WAL mode, and the server reads keys on every request).
 */
import type { Config } from "../config.ts";
import { openControlPlane } from "../db/open_control_plane.ts";

const USAGE = `usage:
  admin org create NAME [--json]
  admin org deactivate ORG_ID
  admin org activate ORG_ID
  admin org list [--json]
  admin key create ORG_ID [--json]
  admin key list ORG_ID [--json]
  admin key revoke KEY_ID`;

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
  const [group, action, arg] = args.filter((a) => a !== "--json");
  if (!group || !action) {
    io.err(USAGE);
    return 2;
  }
  await Deno.mkdir(config.dataDir, { recursive: true });
  const db = await openControlPlane(config);
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
    throw error;
  } finally {
    await db.close();
  }
}

class UsageError extends Error {}
