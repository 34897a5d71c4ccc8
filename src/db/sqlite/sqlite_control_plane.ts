/**
 * The control plane in one SQLite file: the embedded default for a single host and `deno task
 * dev`. The repositories are the shared ones (`../repos/`) over `SqliteConnection` (WAL, group
 * commit, migrations keyed by `PRAGMA user_version`).
 *
 * One process owns the file, so the scale-out capabilities are trivial: the timer lock is always
 * held, an analysis job's lease is simply held until its run ends, and secrets are files in the
 * data directory (`{ABN_DATA_DIR}/secrets`, as DESIGN's layout has them).
 */
import type { DatabaseSync } from "node:sqlite";
import type { SecretRepo } from "../control_plane.ts";
import { SqlControlPlane } from "../repos/mod.ts";
import { SqliteConnection } from "./connection.ts";
import { loadOrCreateSecret, readSecret } from "../../crypto/secret_file.ts";

export interface SqliteControlPlaneOptions {
  /** Where secrets are kept as files; default the `secrets` folder beside the database file. */
  secretsDir?: string;
  /** The service's external base URL, for the `links` of webhook events. */
  publicUrl?: string;
}

export class SqliteControlPlane extends SqlControlPlane {
  /** The SQLite handle itself (tests and the copy to PostgreSQL read it directly). */
  readonly sqlite: DatabaseSync;

  constructor(path: string, options: SqliteControlPlaneOptions = {}) {
    const connection = new SqliteConnection(path);
    const slash = path.lastIndexOf("/");
    super(
      connection,
      fileSecrets(options.secretsDir ?? `${slash < 0 ? "." : path.slice(0, slash)}/secrets`),
      { publicUrl: options.publicUrl },
    );
    this.sqlite = connection.handle;
  }
}

/** Secrets as files `{dir}/{name}.key` (base64, mode 0600). */
function fileSecrets(dir: string): SecretRepo {
  const file = (name: string) => {
    if (!/^[a-z0-9-]{1,64}$/.test(name)) throw new RangeError(`Invalid secret name: ${name}`);
    return `${dir}/${name}.key`;
  };
  return {
    getOrCreate: (name, initial) => loadOrCreateSecret(file(name), initial),
    get: (name) => readSecret(file(name)),
  };
}
