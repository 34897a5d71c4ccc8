/**
 * Webhooks: each organization's endpoints (where, which events, the signing secret and, during a
 * rotation's overlap, the previous one) and the outbox of deliveries the sender works through.
 * Deliveries are written by `WebhookOutbox` in the transaction of the change they report; the
 * sender claims due ones with a lease (rows locked as they are claimed where the engine can, so
 * instances claiming together never take the same delivery), attempts each, and settles the
 * outcomes, which only the lease's owner may. An instance that dies leaves its leases to run
 * out; another then claims those deliveries. On one host (SQLite) a restarted process takes back
 * at once what it held (`release`).
 */
import type { Dialect, SqlValue } from "../dialect.ts";
import { int, intOrNull, rowsParam, timeOrNull } from "../dialect.ts";
import { nowIso } from "../errors.ts";
import { newId } from "../ids.ts";
import type { EventSelection } from "../../webhooks/events.ts";
import type { Subscriber } from "./webhook_outbox.ts";
import { eventsOf, storedEvents, WebhookOutbox } from "./webhook_outbox.ts";

/** Finished deliveries in a row that failed, after which an endpoint is disabled. */
export const MAX_CONSECUTIVE_FAILURES = 50;

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

/** A claimed delivery: what its attempt sends, and where its schedule stands. */
export interface ClaimedDelivery {
  id: string;
  eventId: string;
  endpointId: string;
  orgId: string;
  body: string;
  /** Attempts made before this one. */
  attempts: number;
  /** Attempts made before the current round (a retry asked for starts a new one). */
  roundStart: number;
  /** When the current round's schedule counts from (ISO). */
  scheduledFrom: string;
  url: string;
  /** The current secret, then the previous one while it still signs. */
  secrets: string[];
}

/** How an attempt of a claimed delivery ended, as the sender decided it. */
export interface SettledAttempt {
  id: string;
  endpointId: string;
  /** `pending`: attempted again at `nextAttemptAt`. */
  state: DeliveryState;
  status: number | null;
  error: string | null;
  nextAttemptAt: string | null;
  /** Disables the endpoint, with this reason (a 410). */
  disable?: string;
}

/** An endpoint that a settle disabled. */
export interface DisabledEndpoint {
  webhookId: string;
  orgId: string;
  reason: string;
}

export interface DeliveryPageOptions {
  limit: number;
  /** The last delivery of the previous page (newest first), if any. */
  after?: { created_at: string; id: string } | null;
}

export interface WebhookRepo {
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
  /**
   * Claims up to `limit` due deliveries for `leaseSeconds`, earliest due first: pending ones
   * nobody holds, of enabled endpoints (a test whatever the endpoint's state); with
   * `dueAgoSeconds`, only those written at least that long ago.
   */
  claim(
    owner: string,
    leaseSeconds: number,
    limit: number,
    dueAgoSeconds?: number,
  ): Promise<ClaimedDelivery[]>;
  /**
   * Records attempts' outcomes in one transaction (those whose lease `owner` lost are skipped),
   * keeps each endpoint's count of failed deliveries in a row, and disables endpoints (a 410, or
   * `MAX_CONSECUTIVE_FAILURES`); answers the endpoints it disabled.
   */
  settle(owner: string, attempts: readonly SettledAttempt[]): Promise<DisabledEndpoint[]>;
  /** Releases every lease `owner` holds (a restarted process on one host). */
  release(owner: string): Promise<void>;
  /** When the earliest unclaimed pending delivery falls due (ISO), or null. */
  nextDue(): Promise<string | null>;
  /** When the oldest pending delivery of an enabled endpoint was created (ISO), or null. */
  oldestPending(): Promise<string | null>;
  /** Removes finished deliveries that finished before `before` (ISO); answers how many. */
  prune(before: string): Promise<number>;
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
      return await delivery(ids[0]);
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
    claim: async (owner, leaseSeconds, limit, dueAgoSeconds = 0) => {
      const claimed = await db.returning<Record<string, unknown>>(
        `UPDATE webhook_deliveries SET lease_owner = ?, lease_until = ${db.timeIn("?")}
         WHERE id IN (
           SELECT d.id FROM webhook_deliveries d
           WHERE d.state = 'pending' AND d.next_attempt_at <= ${db.timeIn("?")}
             AND (d.lease_until IS NULL OR d.lease_until <= ${now})
             AND EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = d.endpoint_id
               AND (e.enabled = true OR d.type = 'webhook.test'))
           ORDER BY d.next_attempt_at LIMIT ?${db.skipLocked})
         RETURNING id, event_id, endpoint_id, org_id, body, attempts, round_start,
           scheduled_from`,
        [owner, leaseSeconds, -dueAgoSeconds, limit],
      );
      if (claimed.length === 0) return [];
      const endpointIds = [...new Set(claimed.map((row) => String(row.endpoint_id)))];
      const targets = new Map(
        (await db.all<{ id: string; url: string; secret: string; previous: string | null }>(
          `SELECT id, url, secret,
             CASE WHEN previous_secret_until > ${now} THEN previous_secret END AS previous
           FROM webhook_endpoints
           WHERE id IN (SELECT id FROM ${db.rows("i", { id: "text" })})`,
          [rowsParam(endpointIds.map((id) => ({ id })))],
        )).map((row) => [row.id, row]),
      );
      return claimed.flatMap((row) => {
        const target = targets.get(String(row.endpoint_id));
        if (!target) return []; // deleted since: its deliveries go with it
        return [{
          id: String(row.id),
          eventId: String(row.event_id),
          endpointId: String(row.endpoint_id),
          orgId: String(row.org_id),
          body: String(row.body),
          attempts: int(row.attempts),
          roundStart: int(row.round_start),
          scheduledFrom: String(row.scheduled_from),
          url: target.url,
          secrets: target.previous ? [target.secret, target.previous] : [target.secret],
        }];
      });
    },
    settle: (owner, attempts) => settleAttempts(db, owner, attempts),
    release: async (owner) => {
      await db.run(
        `UPDATE webhook_deliveries SET lease_owner = NULL, lease_until = NULL
         WHERE state = 'pending' AND lease_owner = ?`,
        [owner],
      );
    },
    nextDue: async () =>
      timeOrNull(
        (await db.get<{ at: unknown }>(
          `SELECT d.next_attempt_at AS at FROM webhook_deliveries d
           WHERE d.state = 'pending' AND (d.lease_until IS NULL OR d.lease_until <= ${now})
             AND EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = d.endpoint_id
               AND (e.enabled = true OR d.type = 'webhook.test'))
           ORDER BY d.next_attempt_at LIMIT 1`,
        ))?.at,
      ),
    oldestPending: async () =>
      timeOrNull(
        (await db.get<{ at: unknown }>(
          `SELECT min(d.created_at) AS at FROM webhook_deliveries d
           JOIN webhook_endpoints e ON e.id = d.endpoint_id
           WHERE d.state = 'pending' AND e.enabled = true`,
        ))?.at,
      ),
    prune: (before) =>
      db.run("DELETE FROM webhook_deliveries WHERE state <> 'pending' AND finished_at < ?", [
        before,
      ]),
  };
}

/** `WebhookRepo.settle`: the deliveries first, then each endpoint once, in id order. */
function settleAttempts(
  db: Dialect,
  owner: string,
  attempts: readonly SettledAttempt[],
): Promise<DisabledEndpoint[]> {
  const now = db.timeIn("0");
  return db.transaction(async (tx) => {
    const perEndpoint = new Map<string, { outcomes: SettledAttempt[] }>();
    for (const a of attempts) {
      const changed = await tx.run(
        `UPDATE webhook_deliveries SET state = ?, attempts = attempts + 1, last_status = ?,
           last_error = ?, next_attempt_at = ?,
           finished_at = CASE WHEN ? = 'pending' THEN NULL ELSE ${now} END,
           lease_owner = NULL, lease_until = NULL
         WHERE id = ? AND lease_owner = ?`,
        [a.state, a.status, a.error, a.nextAttemptAt, a.state, a.id, owner],
      );
      if (changed === 0) continue;
      const entry = perEndpoint.get(a.endpointId) ?? { outcomes: [] };
      entry.outcomes.push(a);
      perEndpoint.set(a.endpointId, entry);
    }
    const disabled: DisabledEndpoint[] = [];
    const disable = async (id: string, reason: string) => {
      const rows = await tx.returning<{ org_id: string }>(
        `UPDATE webhook_endpoints SET enabled = false, disabled_reason = ?, updated_at = ?
         WHERE id = ? AND enabled = true RETURNING org_id`,
        [reason, nowIso(), id],
      );
      for (const row of rows) disabled.push({ webhookId: id, orgId: row.org_id, reason });
    };
    for (const id of [...perEndpoint.keys()].sort()) {
      const { outcomes } = perEndpoint.get(id)!;
      const gone = outcomes.find((o) => o.disable !== undefined);
      const lastDelivered = outcomes.findLastIndex((o) => o.state === "delivered");
      const failedAfter = outcomes.slice(lastDelivered + 1).filter((o) => o.state === "failed")
        .length;
      let failures: number | null = null;
      if (lastDelivered >= 0) {
        const rows = await tx.returning<{ n: unknown }>(
          `UPDATE webhook_endpoints SET consecutive_failures = ? WHERE id = ?
           RETURNING consecutive_failures AS n`,
          [failedAfter, id],
        );
        failures = rows.length > 0 ? failedAfter : null;
      } else if (failedAfter > 0) {
        const rows = await tx.returning<{ n: unknown }>(
          `UPDATE webhook_endpoints SET consecutive_failures = consecutive_failures + ?
           WHERE id = ? RETURNING consecutive_failures AS n`,
          [failedAfter, id],
        );
        failures = rows.length > 0 ? int(rows[0].n) : null;
      }
      if (gone) await disable(id, gone.disable!);
      else if (failures !== null && failures >= MAX_CONSECUTIVE_FAILURES) {
        await disable(
          id,
          `Its last ${MAX_CONSECUTIVE_FAILURES} deliveries all failed; enable it again once it answers 2xx`,
        );
      }
    }
    return disabled;
  });
}
