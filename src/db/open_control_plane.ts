/**
 * Opens the control plane the configuration names: the SQLite file at `ABN_DB_PATH` (its folder
 * made if needed).
 */
import type { Config } from "../config.ts";
import type { ControlPlane } from "./control_plane.ts";
import { SqliteControlPlane } from "./sqlite/sqlite_control_plane.ts";

export async function openControlPlane(config: Readonly<Config>): Promise<ControlPlane> {
  const dir = config.dbPath.slice(0, config.dbPath.lastIndexOf("/"));
  if (dir) await Deno.mkdir(dir, { recursive: true });
  return new SqliteControlPlane(config.dbPath);
}
