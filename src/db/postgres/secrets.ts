/**
 * Signing secrets on PostgreSQL: one row per name, made by the first instance that needs it
 * (`ON CONFLICT DO NOTHING`, then read back), so every instance signs and verifies alike.
 */
import { Buffer } from "node:buffer";
import type { SecretRepo } from "../control_plane.ts";
import type { PgClient } from "./pg_client.ts";

export function postgresSecrets(db: PgClient): SecretRepo {
  const get = async (name: string) => {
    const { rows } = await db.query<{ value: Uint8Array }>(
      "SELECT value FROM secrets WHERE name = $1",
      [name],
    );
    return rows[0] ? new Uint8Array(rows[0].value) : null;
  };
  return {
    get,
    getOrCreate: async (name, initial) => {
      const candidate = initial ?? crypto.getRandomValues(new Uint8Array(32));
      await db.query(
        "INSERT INTO secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
        [name, Buffer.from(candidate)],
      );
      const stored = await get(name);
      if (!stored) throw new Error(`Cannot read secret ${name} just stored`);
      return stored;
    },
  };
}
