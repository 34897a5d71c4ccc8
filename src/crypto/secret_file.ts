/**
 * Secrets kept as files (base64, mode 0600): the SQLite driver's `secrets`, beside the data they
 * protect. With PostgreSQL the secrets live in the database instead, shared by every instance.
 */

/** The secret in `path`, or null when the file does not exist or holds less than 32 bytes. */
export async function readSecret(path: string): Promise<Uint8Array | null> {
  try {
    const text = (await Deno.readTextFile(path)).trim();
    const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
    return bytes.length >= 32 ? bytes : null;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}

/**
 * Reads the secret from `path`, creating it (mode 0600) on first use from `initial`, else from
 * 32 random bytes.
 */
export async function loadOrCreateSecret(path: string, initial?: Uint8Array): Promise<Uint8Array> {
  const existing = await readSecret(path);
  if (existing) return existing;
  const secret = initial ?? crypto.getRandomValues(new Uint8Array(32));
  const dir = path.slice(0, path.lastIndexOf("/"));
  if (dir) await Deno.mkdir(dir, { recursive: true });
  try {
    await Deno.writeTextFile(path, btoa(String.fromCharCode(...secret)) + "\n", {
      mode: 0o600,
      createNew: true,
    });
  } catch (error) {
    if (error instanceof Deno.errors.AlreadyExists) return loadOrCreateSecret(path);
    throw error;
  }
  return secret;
}
