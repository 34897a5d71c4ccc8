/**
 * Signing secrets in the database (PostgreSQL): one row per name, made by the first instance
 * that needs it (`ON CONFLICT DO NOTHING`, then read back), so every instance signs and verifies
 * alike. On one host they are files in the data directory instead (`../../crypto/secret_file.ts`),
 * where operators and DESIGN's layout expect them.
 */
import type { Dialect } from "../dialect.ts";

export interface SecretRepo {
  /**
   * The secret called `name`, stored on first use (`initial`, else 32 random bytes): every
   * instance sharing the database gets the same bytes.
   */
  getOrCreate(name: string, initial?: Uint8Array): Promise<Uint8Array>;
  /** The secret called `name`, or null when none was made yet. */
  get(name: string): Promise<Uint8Array | null>;
}

export function secretRepo(db: Dialect): SecretRepo {
  const get = async (name: string) => {
    const row = await db.get<{ value: Uint8Array }>("SELECT value FROM secrets WHERE name = ?", [
      name,
    ]);
    return row ? new Uint8Array(row.value) : null;
  };
  return {
    get,
    getOrCreate: async (name, initial) => {
      const candidate = initial ?? crypto.getRandomValues(new Uint8Array(32));
      await db.run(
        "INSERT INTO secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
        [name, candidate],
      );
      const stored = await get(name);
      if (!stored) throw new Error(`Cannot read secret ${name} just stored`);
      return stored;
    },
  };
}
