/**
 * Records the upload grants `initiate` hands out for S3 (where the PUT goes straight to storage,
 * so the timer must know which keys to look at). Grants are written together within
 * `delayMs` (default 50 ms), one row per key with its latest expiry: `initiate` answers without
 * waiting for the database, and a key granted a thousand times a second is written twenty times.
 * A grant lost in a crash only delays its delivery until the next reconciliation.
 */
import type { ControlPlane, Grant } from "../db/control_plane.ts";
import type { Logger } from "../log.ts";
import { describeError } from "../log.ts";

export interface GrantRecorderOptions {
  db: ControlPlane;
  log: Logger;
  /** Longest a grant waits to be written; default 50 ms. */
  delayMs?: number;
}

export class GrantRecorder {
  readonly #db: ControlPlane;
  readonly #log: Logger;
  readonly #delayMs: number;
  /** Grants to write, by key, with their expiry in milliseconds (made ISO when written). */
  #pending = new Map<
    string,
    { orgId: string; experimentId: string; expiresMs: number; keyId?: string }
  >();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #writing: Promise<void> = Promise.resolve();

  constructor(options: GrantRecorderOptions) {
    this.#db = options.db;
    this.#log = options.log;
    this.#delayMs = options.delayMs ?? 50;
  }

  /**
   * Records the grant of `key` until `expiresMs` (a time in milliseconds since the epoch), asked
   * for by the API key `keyId` (named in the audit event of its delivery).
   */
  record(
    key: string,
    orgId: string,
    experimentId: string,
    expiresMs: number,
    keyId?: string,
  ): void {
    const known = this.#pending.get(key);
    if (known === undefined || known.expiresMs <= expiresMs) {
      this.#pending.set(key, { orgId, experimentId, expiresMs, keyId });
    }
    this.#timer ??= setTimeout(() => this.flush(), this.#delayMs);
  }

  /** Writes what is pending now (and waits for writes under way). */
  flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#pending.size > 0) {
      const grants: Grant[] = [...this.#pending].map(([key, g]) => ({
        key,
        org_id: g.orgId,
        experiment_id: g.experimentId,
        expires_at: new Date(g.expiresMs).toISOString(),
        key_id: g.keyId ?? null,
      }));
      this.#pending = new Map();
      this.#writing = this.#writing.then(() =>
        this.#db.grants.put(grants).catch((error) => {
          this.#log.warn("upload grants not recorded; the next reconciliation finds their PUTs", {
            grants: grants.length,
            error: describeError(error),
          });
        })
      );
    }
    return this.#writing;
  }
}
