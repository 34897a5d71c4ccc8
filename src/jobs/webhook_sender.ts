/**
 * The webhook sender: works through the outbox (`db.webhooks`), at least once. It claims due
 * deliveries with a lease (as many as it has free slots, so each attempt starts at once and the
 * lease only has to outlast one attempt), makes each attempt (`webhooks/attempt.ts`: the target
 * checked at send time, signed, redirects not followed, bounded in time and bytes) and settles
 * the outcome as DESIGN's rules say: any 2xx is delivered; a 410 disables the endpoint; a 429 or
 * 503 is tried again on the schedule, not before its `Retry-After`; anything else is tried again
 * on the schedule (`ABN_WEBHOOK_RETRY_SCHEDULE`) until it runs out, and the delivery is `failed`;
 * 50 failed deliveries in a row disable the endpoint. Outcomes are written in groups (one
 * transaction for the attempts that finished meanwhile).
 *
 * It is woken at once when this instance commits deliveries; otherwise it sleeps until the next
 * delivery falls due, and looks at least every `pollMs` for deliveries other instances wrote or
 * left (a dead instance's lease runs out; another claims its deliveries then). Idle, it makes one
 * query per poll.
 */
import type { ClaimedDelivery, ControlPlane, SettledAttempt } from "../db/control_plane.ts";
import type { Logger } from "../log.ts";
import { describeError } from "../log.ts";
import type { Metrics } from "../metrics.ts";
import { Gauge } from "../metrics.ts";
import { GroupWrite } from "../group_write.ts";
import { attemptDelivery, type AttemptOutcome } from "../webhooks/attempt.ts";
import { nextAttempt } from "../webhooks/schedule.ts";
import type { Resolver } from "../webhooks/targets.ts";
import { PinnedClients } from "../webhooks/pinned_clients.ts";
import type { WebhookAudit } from "../webhooks/audit_hook.ts";

/** Options of {@linkcode WebhookSender}. */
export interface WebhookSenderOptions {
  db: ControlPlane;
  metrics: Metrics;
  log: Logger;
  audit: WebhookAudit;
  /** Seconds after the first try of each attempt (`ABN_WEBHOOK_RETRY_SCHEDULE`). */
  schedule: readonly number[];
  /** The longest one attempt takes (`ABN_WEBHOOK_TIMEOUT_SECONDS`). */
  timeoutSeconds: number;
  /** Loopback and private targets allowed (`ABN_WEBHOOK_ALLOW_PRIVATE`). */
  allowPrivate: boolean;
  /** Attempts under way at once; default 16. */
  concurrency?: number;
  /**
   * The longest the sender sleeps when nothing falls due sooner; default 5 s where instances
   * share the database, 60 s where one process owns it (it hears of its own deliveries at once).
   */
  pollMs?: number;
  /** Resolves target hosts (tests); default DNS. */
  resolve?: Resolver;
  /**
   * True while uploads are being received here: then deliveries written `busyWaitMs` ago are
   * sent one at a time (at most 50 a second), and those 30 s overdue at full pace, so a burst's
   * requests do not wait behind its webhooks.
   */
  busy?: () => boolean;
  /** How long a delivery waits while `busy` before it is sent anyway; default 5 s. */
  busyWaitMs?: number;
}

const DEFAULT_CONCURRENCY = 16;
/** Finished deliveries are kept this long for the deliveries list and replays, then removed. */
export const KEEP_FINISHED_DAYS = 30;
const PRUNE_EVERY_MS = 3600_000;
/** A due delivery that could not be claimed (held elsewhere, clocks apart) is looked at again. */
const RECHECK_MS = 1000;
/** While uploads stream, how often the sender looks whether they stopped. */
const BUSY_POLL_MS = 100;
const BUSY_WAIT_MS = 5_000;
/** While uploads stream, the least time between two deliveries sent one at a time. */
const BUSY_GAP_MS = 20;
/** Deliveries due this long ago are sent at full pace, uploads streaming or not. */
const OVERDUE_SECONDS = 30;
/** How often the oldest pending delivery is looked up for `/metrics`. */
const OLDEST_EVERY_MS = 10_000;

export class WebhookSender {
  /** The lease owner of this instance's claims. */
  readonly owner: string;
  readonly #o: WebhookSenderOptions;
  readonly #concurrency: number;
  readonly #leaseSeconds: number;
  readonly #pollMs: number;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #abort = new AbortController();
  readonly #settles: GroupWrite<SettledAttempt>;
  readonly #clients = new PinnedClients();
  #pumping: Promise<void> | null = null;
  #again = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** When `#timer` fires (`performance.now()`). */
  #timerAt = 0;
  #stopped = false;
  #started = false;
  #unsubscribe: (() => void) | undefined;
  #lastWarning = 0;
  #oldestPendingSeconds = 0;
  #oldestReadAt = -Infinity;
  #prunedAt = 0;
  #busyLookAfter = 0;
  #pruning: Promise<void> | null = null;
  #idle: (() => void)[] = [];

  constructor(options: WebhookSenderOptions) {
    this.#o = options;
    const { db } = options;
    this.owner = db.webhooks.soleOwner ?? `sender-${crypto.randomUUID()}`;
    this.#concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
    // An attempt takes at most the timeout; the lease outlasts it with room for the settle.
    this.#leaseSeconds = options.timeoutSeconds + 30;
    this.#pollMs = options.pollMs ?? (db.webhooks.soleOwner ? 60_000 : 5_000);
    this.#settles = new GroupWrite((attempts) => this.#settle(attempts));
    options.metrics.add(
      new Gauge(
        "abn_webhook_oldest_pending_seconds",
        "Age of the oldest pending webhook delivery of an enabled endpoint, seconds (0: none)",
        () => this.#oldestPendingSeconds,
      ),
    );
    options.metrics.addCollector(async () => {
      // A scan of the pending rows: at most every 10 s, whatever the scrape interval.
      if (performance.now() - this.#oldestReadAt < OLDEST_EVERY_MS) return;
      this.#oldestReadAt = performance.now();
      const oldest = await db.webhooks.oldestPending();
      this.#oldestPendingSeconds = oldest === null
        ? 0
        : Math.max(0, (Date.now() - Date.parse(oldest)) / 1000);
    });
  }

  /** Starts sending: leases this host held before a restart are taken back first. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#unsubscribe = this.#o.db.webhooks.outbox.onQueued(() => this.wake());
    const released = this.#o.db.webhooks.soleOwner
      ? this.#o.db.webhooks.release(this.owner)
      : Promise.resolve();
    released.catch((error) => this.#warn("webhook leases not released", error))
      .finally(() => this.wake());
  }

  /** Looks for due deliveries now (deliveries were written). */
  wake(): void {
    if (this.#stopped || !this.#started) return;
    if (this.#pumping) {
      this.#again = true;
      return;
    }
    this.#pumping = this.#fill().finally(() => {
      this.#pumping = null;
      if (this.#again) {
        this.#again = false;
        this.wake();
      } else if (this.#inFlight.size === 0) {
        for (const resolve of this.#idle.splice(0)) resolve();
      }
    });
  }

  /** Resolves once nothing is due now and no attempt is under way (tests). */
  settled(): Promise<void> {
    if (this.#pumping === null && this.#inFlight.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /**
   * Stops: no new claims; attempts under way are cancelled and their leases released, so the
   * next start (or another instance) sends them at once.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribe?.();
    clearTimeout(this.#timer);
    this.#abort.abort();
    await this.#pumping;
    await this.#pruning;
    while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
    await this.#settles.add().catch(() => {});
    this.#clients.close();
    if (this.#started) {
      await this.#o.db.webhooks.release(this.owner).catch((error) =>
        this.#warn("webhook leases not released", error)
      );
    }
  }

  /** Claims while there are free slots and due deliveries, then sleeps until the next one. */
  async #fill(): Promise<void> {
    const { db } = this.#o;
    try {
      if (this.#o.busy?.()) {
        // Uploads stream: deliveries that waited `busyWaitMs` go one at a time, at most one
        // every BUSY_GAP_MS; those overdue by OVERDUE_SECONDS at full pace, so a steady stream
        // of uploads delays webhooks, never starves them. A look that found none waits for the
        // next poll: every delivery written meanwhile wakes the sender, and a claim is a write.
        if (performance.now() >= this.#busyLookAfter) {
          const free = this.#concurrency - this.#inFlight.size;
          const waited = (this.#o.busyWaitMs ?? BUSY_WAIT_MS) / 1000;
          const lease = this.#leaseSeconds;
          let claimed = free > 0
            ? await db.webhooks.claim(this.owner, lease, free, OVERDUE_SECONDS)
            : [];
          if (claimed.length === 0 && this.#inFlight.size === 0) {
            claimed = await db.webhooks.claim(this.owner, lease, 1, waited);
          }
          for (const d of claimed) this.#start(d);
          this.#busyLookAfter = performance.now() +
            (claimed.length === 0 ? BUSY_POLL_MS : BUSY_GAP_MS);
        }
        // Looked at again soon, to send at full pace once the uploads stopped.
        if (this.#timer === undefined || this.#timerAt > performance.now() + BUSY_POLL_MS) {
          this.#sleep(BUSY_POLL_MS);
        }
        return;
      }
      for (;;) {
        if (this.#stopped) return;
        const free = this.#concurrency - this.#inFlight.size;
        if (free <= 0) return; // an attempt that ends looks again
        const claimed = await db.webhooks.claim(this.owner, this.#leaseSeconds, free);
        for (const delivery of claimed) this.#start(delivery);
        if (claimed.length < free) break;
      }
      this.#prune();
      const due = await db.webhooks.nextDue();
      const wait = due === null ? Infinity : Date.parse(due) - Date.now();
      this.#sleep(wait <= 0 ? RECHECK_MS : Math.min(wait, this.#pollMs));
    } catch (error) {
      this.#warn("webhook deliveries not claimed; trying again", error);
      this.#sleep(Math.min(this.#pollMs, 5_000));
    }
  }

  /** At most hourly, on one instance at a time: finished deliveries past their keeping. */
  #prune(): void {
    if (Date.now() - this.#prunedAt < PRUNE_EVERY_MS) return;
    this.#prunedAt = Date.now();
    const before = new Date(Date.now() - KEEP_FINISHED_DAYS * 86_400_000).toISOString();
    this.#pruning = this.#o.db.withTimerLock(
      "webhook-prune",
      () => this.#o.db.webhooks.prune(before),
    ).then((removed) => {
      if (removed) this.#o.log.info("old webhook deliveries removed", { removed, before });
    }, (error) => this.#warn("old webhook deliveries not removed", error))
      .finally(() => this.#pruning = null);
  }

  #sleep(ms: number): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#timerAt = performance.now() + Math.max(0, ms);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.wake();
    }, Math.max(0, ms));
  }

  #start(delivery: ClaimedDelivery): void {
    const running: Promise<void> = this.#attempt(delivery)
      .catch((error) => this.#warn("webhook attempt not recorded", error))
      .finally(() => {
        this.#inFlight.delete(running);
        this.wake();
      });
    this.#inFlight.add(running);
  }

  async #attempt(delivery: ClaimedDelivery): Promise<void> {
    const { timeoutSeconds, allowPrivate, resolve, metrics } = this.#o;
    const outcome = await attemptDelivery(
      { url: delivery.url, id: delivery.eventId, body: delivery.body, secrets: delivery.secrets },
      { timeoutSeconds, allowPrivate, resolve, signal: this.#abort.signal, clients: this.#clients },
    );
    // Stopping: the attempt is not counted; its lease is released and it runs again.
    if (this.#abort.signal.aborted) return;
    metrics.webhookAttempts.inc({ result: outcome.kind });
    const settled = settledAttempt(delivery, outcome, this.#o.schedule);
    if (settled.state !== "pending") metrics.webhookDeliveries.inc({ outcome: settled.state });
    await this.#settles.add(settled);
  }

  async #settle(attempts: SettledAttempt[]): Promise<void> {
    if (attempts.length === 0) return;
    const { db, log, audit } = this.#o;
    const disabled = await db.webhooks.settle(this.owner, attempts);
    for (const endpoint of disabled) {
      log.warn("webhook endpoint disabled", {
        org_id: endpoint.orgId,
        webhook_id: endpoint.webhookId,
        reason: endpoint.reason,
      });
      await audit.record({
        orgId: endpoint.orgId,
        keyId: null,
        action: "webhook.disabled",
        details: { webhook_id: endpoint.webhookId, reason: endpoint.reason },
      }).catch((error) => this.#warn("audit event not recorded", error));
    }
  }

  /** Logs a failure of background work, at most once a minute. */
  #warn(what: string, error: unknown): void {
    if (Date.now() - this.#lastWarning < 60_000) return;
    this.#lastWarning = Date.now();
    this.#o.log.warn(what, { error: describeError(error) });
  }
}

/**
 * What an attempt's outcome makes of its delivery: delivered; failed (a 410, which also disables
 * the endpoint, or the schedule ran out); or pending, tried again when the schedule says (not
 * before a `Retry-After`).
 */
export function settledAttempt(
  delivery: ClaimedDelivery,
  outcome: AttemptOutcome,
  schedule: readonly number[],
  now = Date.now(),
): SettledAttempt {
  const base = { id: delivery.id, endpointId: delivery.endpointId };
  if (outcome.kind === "delivered") {
    return {
      ...base,
      state: "delivered",
      status: outcome.status,
      error: null,
      nextAttemptAt: null,
    };
  }
  if (outcome.kind === "gone") {
    return {
      ...base,
      state: "failed",
      status: 410,
      error: outcome.error,
      nextAttemptAt: null,
      disable: "The endpoint answered 410 Gone: it asked to be sent nothing more",
    };
  }
  const made = delivery.attempts + 1 - delivery.roundStart;
  const retryAfter = outcome.kind === "retry" && outcome.retryAfterSeconds !== undefined
    ? new Date(now + outcome.retryAfterSeconds * 1000)
    : undefined;
  const next = nextAttempt(schedule, made, new Date(delivery.scheduledFrom), retryAfter);
  const status = outcome.status ?? null;
  if (next === null) {
    const error = `${outcome.error} (attempt ${made} of ${schedule.length}: no attempt left)`;
    return { ...base, state: "failed", status, error, nextAttemptAt: null };
  }
  return {
    ...base,
    state: "pending",
    status,
    error: outcome.error,
    nextAttemptAt: next.toISOString(),
  };
}
