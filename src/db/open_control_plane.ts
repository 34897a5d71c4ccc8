/**
 * Opens the control plane the configuration names: PostgreSQL when `ABN_DATABASE_URL` is set
 * (pending migrations applied under a lock), else the SQLite file at `ABN_DB_PATH` (its folder
 * made if needed), with its secrets in `{ABN_DATA_DIR}/secrets`.
 */
import type { Config } from "../config.ts";
import type { ControlPlane } from "./control_plane.ts";
import { SqliteControlPlane } from "./sqlite/sqlite_control_plane.ts";

export async function openControlPlane(config: Readonly<Config>): Promise<ControlPlane> {
  if (config.databaseUrl) {
    // Loaded on demand: the PostgreSQL driver is only paid for when it is configured.
    const { openPostgres } = await import("./postgres/postgres_control_plane.ts");
    return await openPostgres(config.databaseUrl, { publicUrl: config.publicUrl });
  }
  const dir = config.dbPath.slice(0, config.dbPath.lastIndexOf("/"));
  if (dir) await Deno.mkdir(dir, { recursive: true });
  return new SqliteControlPlane(config.dbPath, {
    secretsDir: `${config.dataDir}/secrets`,
    publicUrl: config.publicUrl,
  });
}
