/**
 * Signing secrets on PostgreSQL: one row per name, made by the first instance that needs it
 * (`ON CONFLICT DO NOTHING`, then read back), so every instance signs and verifies alike.
 */
import type { SecretRepo } from "../control_plane.ts";
import type { PgClient } from "./pg_client.ts";

export function postgresSecrets(db: PgClient): SecretRepo {
  const get = (name: string) =>
    db.run(async (sql) => {
      const [row] = await sql<{ value: Uint8Array }[]>`
        SELECT value FROM secrets WHERE name = ${name}`;
      return row ? new Uint8Array(row.value) : null;
    });
  return {
    get,
    getOrCreate: async (name, initial) => {
      const candidate = initial ?? crypto.getRandomValues(new Uint8Array(32));
      await db.run((sql) =>
        sql`INSERT INTO secrets (name, value) VALUES (${name}, ${candidate})
          ON CONFLICT (name) DO NOTHING`
      );
      const stored = await get(name);
      if (!stored) throw new Error(`Cannot read secret ${name} just stored`);
      return stored;
    },
  };
}
