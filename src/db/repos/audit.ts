/**
 * The audit trail: who did what to an organization's data and keys (deliveries, deletions,
 * settings changes, key changes). Events are written in batches (`../../audit/audit_log.ts`),
 * read newest first per organization (all actions or one) by a position, and pruned by age.
 */
import type { Dialect } from "../dialect.ts";
import { rowsParam, timeOrNull } from "../dialect.ts";

/** What happened: `dataset.delivered`, `key.revoked`, … (docs/api.md, "Audit trail"). */
export type AuditAction =
  | "dataset.delivered"
  | "dataset.deleted"
  | "settings.changed"
  | "key.created"
  | "key.revoked"
  | "key.rotated"
  | "webhook.created"
  | "webhook.updated"
  | "webhook.deleted"
  | "webhook.enabled"
  | "webhook.disabled"
  | "webhook.secret_rotated"
  | "webhook.test_sent"
  | "webhook.delivery_retried";

export interface AuditEvent {
  id: string;
  org_id: string;
  /** When it happened, ISO-8601. */
  at: string;
  action: AuditAction;
  /** The key that did it; null for the admin CLI, the service itself or an unknown key. */
  key_id: string | null;
  experiment_id: string | null;
  /** The event's facts (a JSON object). */
  details: Record<string, unknown>;
}

/** Where a page starts: after this event in newest-first order. */
export interface AuditPosition {
  at: string;
  id: string;
}

export interface AuditPageOptions {
  /** Most events to answer. */
  limit: number;
  /** Events older than this position; default from the newest. */
  before?: AuditPosition | null;
  /** Only this action; default all. */
  action?: string | null;
}

export interface AuditRepo {
  /** Stores events, in one statement. */
  record(events: readonly AuditEvent[]): Promise<void>;
  /** One organization's events, newest first (ties by id, descending). */
  page(orgId: string, options: AuditPageOptions): Promise<AuditEvent[]>;
  /**
   * Deletes events older than `before` (ISO) of every organization (in `orgs`), a batch at a
   * time; answers how many.
   */
  prune(before: string): Promise<number>;
}

/** A row as stored: the event with its details as JSON text. */
type Row = Omit<AuditEvent, "details"> & { details: string; [column: string]: unknown };

/** The table's columns and their kinds (also what `admin db copy-from-sqlite` copies). */
export const AUDIT_COLUMNS = {
  id: "text",
  org_id: "text",
  at: "time",
  action: "text",
  key_id: "text",
  experiment_id: "text",
  details: "text",
} as const;

const COLUMNS = Object.keys(AUDIT_COLUMNS).join(", ");

/** Events deleted by one statement of `prune`. */
const PRUNE_BATCH = 5000;

function toEvent(row: Row): AuditEvent {
  return {
    id: row.id,
    org_id: row.org_id,
    at: String(timeOrNull(row.at)),
    action: row.action,
    key_id: row.key_id ?? null,
    experiment_id: row.experiment_id ?? null,
    details: JSON.parse(row.details),
  };
}

export function auditRepo(db: Dialect): AuditRepo {
  return {
    record: async (events) => {
      if (events.length === 0) return;
      await db.run(
        `INSERT INTO audit_events (${COLUMNS})
         SELECT ${COLUMNS} FROM ${db.rows("e", AUDIT_COLUMNS)}
         WHERE true ON CONFLICT DO NOTHING`,
        [rowsParam(events.map((e) => ({ ...e, details: JSON.stringify(e.details) })))],
      );
    },
    page: async (orgId, { limit, before, action }) => {
      const where = ["org_id = ?"];
      const params: (string | number)[] = [orgId];
      if (action) {
        where.push("action = ?");
        params.push(action);
      }
      if (before) {
        where.push("(at, id) < (?, ?)");
        params.push(before.at, before.id);
      }
      params.push(limit);
      const rows = await db.all<Row>(
        `SELECT ${COLUMNS} FROM audit_events WHERE ${where.join(" AND ")}
         ORDER BY at DESC, id DESC LIMIT ?`,
        params,
      );
      return rows.map(toEvent);
    },
    prune: async (before) => {
      // Per organization, along the primary key: no index on the age alone to keep up.
      const orgs = await db.all<{ id: string }>("SELECT id FROM orgs ORDER BY id");
      let deleted = 0;
      for (const { id } of orgs) {
        while (true) {
          const n = await db.run(
            `DELETE FROM audit_events WHERE (org_id, at, id) IN
               (SELECT org_id, at, id FROM audit_events WHERE org_id = ? AND at < ?
                ORDER BY at LIMIT ${PRUNE_BATCH})`,
            [id, before],
          );
          deleted += n;
          if (n < PRUNE_BATCH) break;
        }
      }
      return deleted;
    },
  };
}
