/**
 * The sender's side of the webhook outbox (`webhooks.ts` has the endpoints and the lists): due
 * deliveries claimed with a lease (rows locked as they are claimed where the engine can, so
 * instances claiming together never take the same one), outcomes settled by the lease's owner
 * only, each endpoint's count of failed deliveries in a row, and the removal of old ones.
 */
import type { Dialect } from "../dialect.ts";
import { int, rowsParam, timeOrNull } from "../dialect.ts";
import { nowIso } from "../errors.ts";
import type { DeliveryState } from "./webhooks.ts";

/** Finished deliveries in a row that failed, after which an endpoint is disabled. */
export const MAX_CONSECUTIVE_FAILURES = 50;

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

export interface ClaimRepo {
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

export function claimRepo(db: Dialect): ClaimRepo {
  const now = db.timeIn("0");
  return {
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
