/**
 * Webhooks: each organization's endpoints (where, which events, the signing secret and, during a
 * rotation's overlap, the previous one) and the outbox of deliveries the sender works through.
 * Deliveries are written by `WebhookOutbox` in the transaction of the change they report; the
 * sender claims and settles them through `webhook_claims.ts`, with leases: an instance that dies
 * leaves its leases to run out, and another then claims those deliveries. On one host (SQLite) a
 * restarted process takes back at once what it held (`release`).
 */
import type { Dialect, SqlValue } from "../dialect.ts";
import { int, intOrNull, timeOrNull } from "../dialect.ts";
import { nowIso } from "../errors.ts";
import { newId } from "../ids.ts";
import type { EventSelection } from "../../webhooks/events.ts";
import type { Subscriber } from "./webhook_outbox.ts";
import { eventsOf, storedEvents, WebhookOutbox } from "./webhook_outbox.ts";
import type { ClaimRepo } from "./webhook_claims.ts";
import { claimRepo } from "./webhook_claims.ts";

export type {
  ClaimedDelivery,
  ClaimRepo,
  DisabledEndpoint,
  SettledAttempt,
} from "./webhook_claims.ts";
export { MAX_CONSECUTIVE_FAILURES } from "./webhook_claims.ts";

/** An endpoint as the API shows it (never its secrets). */
export interface WebhookEndpoint {
  webhook_id: string;
  org_id: string;
  url: string;
  description: string;
  events: EventSelection[];
  enabled: boolean;
  /** Why it was disabled (by a key, a 410, 50 failed deliveries in a row); null when enabled. */
  disabled_reason: string | null;
  consecutive_failures: number;
  created_at: string;
  updated_at: string;
  /** Until when the previous secret signs too (after a rotation); null without one. */
  previous_secret_until: string | null;
}

/** What an update changes (fields left out stay). */
export interface EndpointChange {
  url?: string;
  description?: string;
  events?: EventSelection[];
  enabled?: boolean;
  /** With `enabled: false`: why (shown as `disabled_reason`). */
  reason?: string;
}

export type DeliveryState = "pending" | "delivered" | "failed";

/** One delivery of an event to an endpoint, as the deliveries list shows it. */
export interface WebhookDelivery {
  delivery_id: string;
  event_id: string;
  webhook_id: string;
  type: string;
  state: DeliveryState;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  created_at: string;
  finished_at: string | null;
}

export interface DeliveryPageOptions {
  limit: number;
  /** The last delivery of the previous page (newest first), if any. */
  after?: { created_at: string; id: string } | null;
}

export interface WebhookRepo extends ClaimRepo {
  /** The outbox writer, for the repositories that raise events. */
  readonly outbox: WebhookOutbox;
  /** The lease owner when one process owns the database (SQLite); see `release`. */
  readonly soleOwner?: string;
  create(
    orgId: string,
    fields: Required<Omit<EndpointChange, "enabled" | "reason">> & {
      secret: string;
    },
  ): Promise<WebhookEndpoint>;
  /** The organization's endpoints, oldest first. */
  list(orgId: string): Promise<WebhookEndpoint[]>;
  get(orgId: string, webhookId: string): Promise<WebhookEndpoint | null>;
  /** Null when the organization has no such endpoint. Enabling clears the failures counted. */
  update(orgId: string, webhookId: string, change: EndpointChange): Promise<WebhookEndpoint | null>;
  /** Removes the endpoint and its deliveries; false when there was none. */
  delete(orgId: string, webhookId: string): Promise<boolean>;
  /** The new secret signs from now; the current one keeps signing for `overlapSeconds`. */
  rotateSecret(
    orgId: string,
    webhookId: string,
    secret: string,
    overlapSeconds: number,
  ): Promise<WebhookEndpoint | null>;
  /** Queues a `webhook.test` for the endpoint (enabled or not); null without the endpoint. */
  sendTest(orgId: string, webhookId: string): Promise<WebhookDelivery | null>;
  /** The endpoint's deliveries, newest first. */
  deliveries(
    orgId: string,
    webhookId: string,
    page: DeliveryPageOptions,
  ): Promise<WebhookDelivery[]>;
  /**
   * Sends the delivery again from now, on a new round of the schedule (a finished one too); one
   * whose attempt is under way is left to it. Null when the endpoint has no such delivery.
   */
  retry(orgId: string, webhookId: string, deliveryId: string): Promise<WebhookDelivery | null>;
}

type EndpointRow = Record<string, unknown>;

const ENDPOINT_COLUMNS = `id, org_id, url, description, events, enabled, disabled_reason,
  consecutive_failures, created_at, updated_at, previous_secret_until`;

function toEndpoint(row: EndpointRow): WebhookEndpoint {
  return {
    webhook_id: String(row.id),
    org_id: String(row.org_id),
    url: String(row.url),
    description: String(row.description),
    events: eventsOf(String(row.events)),
    enabled: Boolean(row.enabled),
    disabled_reason: (row.disabled_reason as string | null) ?? null,
    consecutive_failures: int(row.consecutive_failures),
    created_at: String(row.created_at),
    updated_at: String(row.updated_at),
    previous_secret_until: timeOrNull(row.previous_secret_until),
  };
}

const DELIVERY_COLUMNS = `id, event_id, endpoint_id, type, state, attempts, last_status,
  last_error, next_attempt_at, created_at, finished_at`;

function toDelivery(row: Record<string, unknown>): WebhookDelivery {
  const state = row.state as DeliveryState;
  return {
    delivery_id: String(row.id),
    event_id: String(row.event_id),
    webhook_id: String(row.endpoint_id),
    type: String(row.type),
    state,
    attempts: int(row.attempts),
    last_status: intOrNull(row.last_status),
    last_error: (row.last_error as string | null) ?? null,
    next_attempt_at: state === "pending" ? timeOrNull(row.next_attempt_at) : null,
    created_at: String(row.created_at),
    finished_at: timeOrNull(row.finished_at),
  };
}

/** Applies `change` to an endpoint of `orgId` (nothing when it names no field). */
async function updateEndpoint(
  db: Dialect,
  orgId: string,
  webhookId: string,
  change: Parameters<WebhookRepo["update"]>[2],
): Promise<void> {
  const sets: string[] = [];
  const params: SqlValue[] = [];
  const set = (sql: string, ...values: SqlValue[]) => {
    sets.push(sql);
    params.push(...values);
  };
  if (change.url !== undefined) set("url = ?", change.url);
  if (change.description !== undefined) set("description = ?", change.description);
  if (change.events !== undefined) set("events = ?", storedEvents(change.events));
  if (change.enabled === true) {
    set("enabled = true, disabled_reason = NULL, consecutive_failures = 0");
  }
  if (change.enabled === false) {
    set(
      "disabled_reason = CASE WHEN enabled THEN ? ELSE disabled_reason END, enabled = false",
      change.reason ?? "Disabled",
    );
  }
  if (sets.length > 0) {
    await db.run(
      `UPDATE webhook_endpoints SET ${sets.join(", ")}, updated_at = ?
       WHERE id = ? AND org_id = ?`,
      [...params, nowIso(), webhookId, orgId],
    );
  }
}

/** Writes a `webhook.test` event for one endpoint, whatever its events; its delivery's id. */
async function writeTestEvent(
  db: Dialect,
  outbox: WebhookOutbox,
  orgId: string,
  webhookId: string,
): Promise<string | null> {
  const ids = await db.transaction(async (tx) => {
    const row = await tx.get<{ id: string; events: string }>(
      "SELECT id, events FROM webhook_endpoints WHERE id = ? AND org_id = ?",
      [webhookId, orgId],
    );
    if (!row) return [];
    const target: Subscriber = { id: row.id, org_id: orgId, events: eventsOf(row.events) };
    return await outbox.write(tx, [target], [{
      type: "webhook.test",
      orgId,
      experimentId: null,
      facts: { webhook_id: webhookId, message: "A test event sent on request" },
    }], "any-event");
  });
  if (ids.length === 0) return null;
  outbox.wake();
  return ids[0];
}

export function webhookRepo(db: Dialect, outbox: WebhookOutbox): WebhookRepo {
  const now = db.timeIn("0");
  const endpoint = async (orgId: string, webhookId: string) => {
    const row = await db.get<EndpointRow>(
      `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = ? AND org_id = ?`,
      [webhookId, orgId],
    );
    return row ? toEndpoint(row) : null;
  };
  const delivery = async (deliveryId: string) => {
    const row = await db.get(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE id = ?`, [
      deliveryId,
    ]);
    return row ? toDelivery(row) : null;
  };
  return {
    outbox,
    ...(db.singleProcess ? { soleOwner: "this-host" } : {}),
    create: async (orgId, { url, description, events, secret }) => {
      const id = newId("wh");
      const at = nowIso();
      await db.run(
        `INSERT INTO webhook_endpoints (id, org_id, url, description, events, secret, enabled,
           created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, true, ?, ?)`,
        [id, orgId, url, description, storedEvents(events), secret, at, at],
      );
      return (await endpoint(orgId, id))!;
    },
    list: async (orgId) =>
      (await db.all<EndpointRow>(
        `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE org_id = ?
         ORDER BY created_at, id`,
        [orgId],
      )).map(toEndpoint),
    get: endpoint,
    update: async (orgId, webhookId, change) => {
      await updateEndpoint(db, orgId, webhookId, change);
      return await endpoint(orgId, webhookId);
    },
    delete: (orgId, webhookId) =>
      db.transaction(async (tx) => {
        const removed = await tx.run("DELETE FROM webhook_endpoints WHERE id = ? AND org_id = ?", [
          webhookId,
          orgId,
        ]);
        if (removed > 0) {
          await tx.run("DELETE FROM webhook_deliveries WHERE endpoint_id = ?", [webhookId]);
        }
        return removed > 0;
      }),
    rotateSecret: async (orgId, webhookId, secret, overlapSeconds) => {
      await db.run(
        `UPDATE webhook_endpoints SET previous_secret = secret,
           previous_secret_until = ${db.timeIn("?")}, secret = ?, updated_at = ?
         WHERE id = ? AND org_id = ?`,
        [overlapSeconds, secret, nowIso(), webhookId, orgId],
      );
      return await endpoint(orgId, webhookId);
    },
    sendTest: async (orgId, webhookId) => {
      const id = await writeTestEvent(db, outbox, orgId, webhookId);
      return id === null ? null : await delivery(id);
    },
    deliveries: async (orgId, webhookId, { limit, after }) => {
      const rows = after
        ? await db.all(
          `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries
           WHERE endpoint_id = ? AND org_id = ? AND (created_at, id) < (?, ?)
           ORDER BY created_at DESC, id DESC LIMIT ?`,
          [webhookId, orgId, after.created_at, after.id, limit],
        )
        : await db.all(
          `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries
           WHERE endpoint_id = ? AND org_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`,
          [webhookId, orgId, limit],
        );
      return rows.map(toDelivery);
    },
    retry: async (orgId, webhookId, deliveryId) => {
      const changed = await db.run(
        `UPDATE webhook_deliveries SET state = 'pending', round_start = attempts,
           scheduled_from = ${now}, next_attempt_at = ${now}, finished_at = NULL
         WHERE id = ? AND endpoint_id = ? AND org_id = ?
           AND (lease_until IS NULL OR lease_until <= ${now})`,
        [deliveryId, webhookId, orgId],
      );
      if (changed > 0) outbox.wake();
      const found = await delivery(deliveryId);
      return found && found.webhook_id === webhookId && (await endpoint(orgId, webhookId))
        ? found
        : null;
    },
    ...claimRepo(db),
  };
}
