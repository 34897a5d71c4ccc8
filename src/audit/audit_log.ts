/**
 * Writes the audit trail (`db/repos/audit.ts`) in batches: `record` stamps an event with its id
 * and time and returns at once; the events of the next `delayMs` (default 100 ms, sooner at 500
 * events) are written in one statement. A delivery's answer never waits for its event, and a
 * thousand tiny uploads a second cost ten writes. `write` records and waits for the write, for the
 * rare changes made by hand (keys, settings, deletions), whose answer then follows a stored event.
 *
 * A failed write is kept and tried again with the next batch (up to 10,000 events, the oldest
 * dropped beyond, with a warning); a crash loses at most the last `delayMs` of events.
 */
import type { AuditAction, AuditEvent, ControlPlane } from "../db/control_plane.ts";
import { randomBase62, toBase62 } from "../db/ids.ts";
import type { Logger } from "../log.ts";
import { describeError } from "../log.ts";

/** An event as its maker states it; the id and the time are added by `record`. */
export interface AuditEntry {
  orgId: string;
  action: AuditAction;
  /** The key that did it; default none (the admin CLI, the service itself). */
  keyId?: string | null;
  experimentId?: string | null;
  details?: Record<string, unknown>;
  /**
   * The event's id when it names a fact that several instances may record (`two_step_audit.ts`):
   * the trail keeps one event of an id. Default a new one (`auditEventId`).
   */
  id?: string;
}

export interface AuditLogOptions {
  db: ControlPlane;
  log: Logger;
  /** Longest an event waits to be written; default 100 ms. */
  delayMs?: number;
}

const BATCH_EVENTS = 500;
const MAX_PENDING = 10_000;

let sequence = 0;

/**
 * A new event id, `evt_` + 20 base62 characters: the time in milliseconds, a counter, then random
 * characters. Ids sort as they were made (within one process; across instances by time), so the
 * trail's newest-first order (by time, then id) keeps the order of events of one millisecond.
 */
export function auditEventId(now = Date.now()): string {
  sequence = (sequence + 1) % 62 ** 4;
  return `evt_${toBase62(now, 8)}${toBase62(sequence, 4)}${randomBase62(8)}`;
}

export class AuditLog {
  readonly #db: ControlPlane;
  readonly #log: Logger;
  readonly #delayMs: number;
  #pending: AuditEvent[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  #writing: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(options: AuditLogOptions) {
    this.#db = options.db;
    this.#log = options.log;
    this.#delayMs = options.delayMs ?? 100;
  }

  /** Records an event, written within `delayMs`; answers it. */
  record(entry: AuditEntry): AuditEvent {
    const now = Date.now();
    const event: AuditEvent = {
      id: entry.id ?? auditEventId(now),
      org_id: entry.orgId,
      at: new Date(now).toISOString(),
      action: entry.action,
      key_id: entry.keyId ?? null,
      experiment_id: entry.experimentId ?? null,
      details: entry.details ?? {},
    };
    this.#pending.push(event);
    if (this.#pending.length >= BATCH_EVENTS) void this.flush();
    else this.#timer ??= setTimeout(() => void this.flush(), this.#delayMs);
    return event;
  }

  /** Records an event and waits until it is written (or its write failed and waits for retry). */
  async write(entry: AuditEntry): Promise<AuditEvent> {
    const event = this.record(entry);
    await this.flush();
    return event;
  }

  /** Writes what is pending now, after the writes under way; never throws. */
  flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#pending.length > 0) {
      const batch = this.#pending;
      this.#pending = [];
      this.#writing = this.#writing.then(() =>
        this.#db.audit.record(batch).catch((error) => this.#keep(batch, error))
      );
    }
    return this.#writing;
  }

  /** A failed batch waits for the next write (the newest `MAX_PENDING` events are kept). */
  #keep(batch: AuditEvent[], error: unknown): void {
    const kept = [...batch, ...this.#pending];
    const dropped = Math.max(0, kept.length - MAX_PENDING);
    this.#pending = kept.slice(dropped);
    this.#log.warn("audit events not written yet; tried again with the next ones", {
      events: batch.length,
      dropped: dropped || undefined,
      error: describeError(error),
    });
    if (!this.#closed) {
      this.#timer ??= setTimeout(() => void this.flush(), Math.max(this.#delayMs, 1000));
    }
  }

  /** Writes what is pending and stops retrying (the service is stopping). */
  async close(): Promise<void> {
    await this.flush();
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
