/**
 * The analysis queue, on both databases: a delivery becomes a job row per dataset (newest
 * delivery wins, `db/repos/jobs.ts`), and the queue claims jobs with a lease, renewed while the
 * run lasts. One run per delivery, across instances: an offer of the object a job already holds
 * joins it, a settings change queues one more run, afterwards, and a claimed job whose object
 * was analysed meanwhile ends without a run. An instance that dies mid-run stops renewing; once
 * its lease ran out another instance claims the job and finishes it. On one host (SQLite) the
 * lease is simply held, under one owner name, so a restarted process takes its jobs back at once.
 * Each run is `runAnalysis` (`run.ts`).
 *
 * A delivery made here is claimed at once (a direct upload's analysis starts right after its
 * commit); jobs offered by other instances, postponed ones and leases that ran out are noticed
 * by a poll of the job table every `pollMs`. Each instance runs up to `SMALL_AT_ONCE` datasets
 * up to `SMALL_INPUT_BYTES` (read on this thread in about a millisecond) beside `concurrency`
 * larger ones, so that a burst of small deliveries is analysed as fast as it arrives while a
 * large file still gets its memory to itself. While uploads stream here (`busy`) small jobs are
 * claimed only once they waited `BUSY_WAIT_MS`, one at a time: on two cores a burst of tiny
 * uploads keeps the request thread busy, the requests come first, and the analyses catch up
 * once the burst ends. Re-runs of results made by an older analysis (`upgrade` jobs) are claimed
 * last, in the larger ones' room.
 */
import type {
  AnalysisJob,
  AnalysisJobOffer,
  AnalysisJobSelection,
  ControlPlane,
} from "../db/control_plane.ts";
import type { ObjectStore } from "../storage/object_store.ts";
import type { Delivery, DeliveryHub } from "../deliveries.ts";
import type { Metrics } from "../metrics.ts";
import type { Logger } from "../log.ts";
import { describeError } from "../log.ts";
import { randomBase62 } from "../db/ids.ts";
import { GroupWrite } from "../group_write.ts";
import { outdatedDeliveries, runAnalysis } from "./run.ts";
import { ANALYSIS_VERSION } from "./report.ts";
import { SMALL_INPUT_BYTES } from "./aggregate/aggregate.ts";

/**
 * Small datasets analysed at the same time (beside the larger ones). A small run mostly waits
 * (for storage, for its commits, for its job's claim and removal), so more of them at once keep
 * a burst's analyses going: 10,000 tiny deliveries were analysed 4.3 s after the last 201 on
 * SQLite with 16 (5.6 s with 8), 19.7 s after it on PostgreSQL (26 s with 8), 2026-12-02.
 */
export const SMALL_AT_ONCE = 16;
/** Longest a small analysis waits for uploads to stop streaming before it runs anyway. */
export const BUSY_WAIT_MS = 5_000;
/** How often a queue holding small jobs back looks whether uploads stopped. */
export const BUSY_POLL_MS = 20;
/** How often it looks, while they stream, for small jobs that waited long enough. */
const BUSY_LOOK_MS = 250;
/** Claims of one job (each after a lease ran out) before the analysis is reported failed. */
const MAX_ATTEMPTS = 5;
/** Delay before a job postponed by a transient failure is claimed again. */
const RETRY_SECONDS = 5;

/** What the wiring, the scan, the routes and tests see of the analysis queue. */
export interface AnalysisScheduler {
  /** Offers a delivery for analysis (never throws; a failure is logged and retried later). */
  enqueue(delivery: Delivery): void;
  /** True when a delivery with this ETag is being admitted or running here. */
  inFlight(orgId: string, experimentId: string, etag: string): boolean;
  /**
   * Resolves once the analysis of the object with `etag` is neither queued nor running, here or
   * on another instance (its dataset's job holds another object, or none), or once `ms` passed;
   * answers whether it settled. A run here is seen as it ends; another instance's through the
   * job row, at the poll's pace.
   */
  settled(orgId: string, experimentId: string, etag: string, ms: number): Promise<boolean>;
  /**
   * Queues, in the background, a re-run of every ready result made by an older analysis
   * (`ANALYSIS_VERSION`), newest deliveries first; answers how many were offered.
   */
  rerunOutdated(): Promise<number>;
  /** Resolves when nothing is admitted, claimable or running here. */
  whenIdle(): Promise<void>;
  /** Stops taking work and waits for the runs under way. */
  stop(): Promise<void>;
}

export interface AnalysisQueueOptions {
  db: ControlPlane;
  store: ObjectStore;
  deliveries: DeliveryHub;
  metrics: Metrics;
  maxUploadBytes: number;
  log: Logger;
  /** How long a claim lasts without renewal (`ABN_ANALYSIS_LEASE_SECONDS`); default 60. */
  leaseSeconds?: number;
  /**
   * How often the job table is polled for work offered elsewhere; default 1000 ms, or 30 s when
   * one process owns the database (nothing is offered elsewhere; a postponed job wakes the
   * queue when its delay ends).
   */
  pollMs?: number;
  /** This queue's name in leases; default the database's sole owner, else host/pid/random. */
  owner?: string;
  /** Datasets over `SMALL_INPUT_BYTES` analysed at the same time; default 1. */
  concurrency?: number;
  /** True while uploads are being received (small analyses then wait, see `busyWaitMs`). */
  busy?: () => boolean;
  /** Longest a small analysis waits while `busy` before running anyway; default 5 s. */
  busyWaitMs?: number;
  /** Snapshots kept per experiment (`ABN_HISTORY_MAX_SNAPSHOTS`); default 1000. */
  historyMaxSnapshots?: number;
}

/** A claim of one kind of job: how many this instance has room for, and which. */
interface Claim {
  room: number;
  small: boolean;
  select: AnalysisJobSelection;
}

function offerOf(d: Delivery): AnalysisJobOffer {
  return {
    orgId: d.orgId,
    experimentId: d.experimentId,
    key: d.key,
    etag: d.info.etag,
    sizeBytes: d.info.size,
    deliveredAt: d.info.lastModified.toISOString(),
    validated: d.validated,
    sha256: d.sha256,
    hasDimensions: d.hasDimensions,
    source: d.source,
    lane: d.info.size <= SMALL_INPUT_BYTES ? "small" : "large",
  };
}

function deliveryOf(job: AnalysisJob): Delivery {
  return {
    orgId: job.orgId,
    experimentId: job.experimentId,
    key: job.key,
    info: {
      key: job.key,
      size: job.sizeBytes,
      etag: job.etag,
      lastModified: new Date(job.deliveredAt),
    },
    validated: job.validated,
    sha256: job.sha256,
    hasDimensions: job.hasDimensions,
    source: job.source,
  };
}

export class AnalysisQueue implements AnalysisScheduler {
  readonly owner: string;
  readonly #o: AnalysisQueueOptions;
  readonly #leaseSeconds: number;
  #running = new Map<string, { etag: string; small: boolean; done: Promise<void> }>();
  #runningSmall = 0;
  /** Deliveries being admitted (their rows read and written), by dataset. */
  #admitting = new Map<string, string>();
  #admissions = 0;
  /** The newest delivery of a dataset that arrived while its admission was under way. */
  #nextAdmission = new Map<string, Delivery>();
  #claiming: Promise<void> | null = null;
  #claimAgain = false;
  /** True when the last claims may have left claimable jobs (they filled their room). */
  #moreWaiting = false;
  /** True when a large job may wait for room here. */
  #largeBacklog = false;
  #busyTimer: ReturnType<typeof setTimeout> | undefined;
  /** When small jobs were last looked for while uploads streamed (`performance.now()`). */
  #lastBusyLook = -Infinity;
  /** True once the poll came round: jobs offered elsewhere are looked for in every lane. */
  #polled = true;
  #poll: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;
  #idle: (() => void)[] = [];
  /** Callers of `settled` waiting for the next change here (or the next poll). */
  #watchers = new Set<() => void>();
  #lastDbWarning = 0;
  readonly #unsubscribe: () => void;

  constructor(options: AnalysisQueueOptions) {
    this.#o = options;
    this.#leaseSeconds = options.leaseSeconds ?? 60;
    this.owner = options.owner ?? options.db.jobs.soleOwner ??
      `${Deno.hostname()}/${Deno.pid}/${randomBase62(6)}`;
    this.#unsubscribe = options.deliveries.subscribe((d) => this.enqueue(d));
    this.#schedulePoll();
    // Jobs left by a previous process of this owner, or offered elsewhere before this start.
    this.#wake();
  }

  #schedulePoll(): void {
    if (this.#stopped) return;
    this.#poll = setTimeout(() => {
      this.#polled = true;
      this.#wake();
      this.#changed();
      this.#schedulePoll();
    }, this.#o.pollMs ?? (this.#o.db.jobs.soleOwner === undefined ? 1000 : 30_000));
    Deno.unrefTimer(this.#poll as unknown as number);
  }

  inFlight(orgId: string, experimentId: string, etag: string): boolean {
    const id = `${orgId}/${experimentId}`;
    return this.#running.get(id)?.etag === etag || this.#admitting.get(id) === etag;
  }

  enqueue(delivery: Delivery): void {
    if (this.#stopped || delivery.info.size > this.#o.maxUploadBytes) return;
    const id = `${delivery.orgId}/${delivery.experimentId}`;
    const etag = delivery.info.etag;
    // A re-run of an older result: only when this instance has no run of the dataset under way.
    if (delivery.source === "upgrade" && (this.#running.has(id) || this.#admitting.has(id))) {
      return;
    }
    if (
      delivery.source !== "settings" && this.inFlight(delivery.orgId, delivery.experimentId, etag)
    ) {
      return;
    }
    if (delivery.info.size > SMALL_INPUT_BYTES) this.#largeBacklog = true;
    if (this.#admitting.has(id) && delivery.source !== "upgrade") {
      // An admission of this dataset is under way: this newer delivery is admitted after it (and
      // replaces any other that waited), so a burst of re-deliveries costs a few round trips.
      this.#nextAdmission.set(id, delivery);
      this.#admitting.set(id, etag);
      return;
    }
    this.#admitting.set(id, etag);
    this.#admissions++;
    this.#admissionWrites.add([id, delivery]).catch((error) => {
      this.#o.log.warn("analysis not queued: the database failed; the next scan retries it", {
        org_id: delivery.orgId,
        experiment_id: delivery.experimentId,
        error: describeError(error),
      });
    }).finally(() => {
      this.#admissions--;
      const next = this.#nextAdmission.get(id);
      this.#nextAdmission.delete(id);
      if (next && this.#admitting.get(id) === next.info.etag) {
        this.#admitting.delete(id);
        this.enqueue(next);
      } else if (this.#admitting.get(id) === etag) this.#admitting.delete(id);
      this.#settle();
    });
  }

  /**
   * Records deliveries as pending (unless their result is saved already) and offers their jobs
   * (`AnalysisJobRepo.admit`). One write is under way at a time; deliveries that arrive meanwhile
   * go together in the next one, so a burst of deliveries costs a few statements, not a few each.
   */
  readonly #admissionWrites = new GroupWrite<[string, Delivery]>(async (group) => {
    // One per dataset; a newer delivery announced here meanwhile wins (it has its own admission).
    const current = new Map(group.filter(([id, d]) => this.#admitting.get(id) === d.info.etag));
    await this.#o.db.jobs.admit([...current.values()].map(offerOf));
    this.#wake();
  });

  async rerunOutdated(): Promise<number> {
    const deliveries = await outdatedDeliveries(this.#o.db);
    for (const delivery of deliveries) this.enqueue(delivery);
    return deliveries.length;
  }

  async settled(orgId: string, experimentId: string, etag: string, ms: number): Promise<boolean> {
    const deadline = performance.now() + ms;
    for (;;) {
      if (!this.inFlight(orgId, experimentId, etag)) {
        if (await this.#o.db.jobs.etagOf(orgId, experimentId) !== etag) return true;
      }
      const left = deadline - performance.now();
      if (left <= 0 || this.#stopped) return false;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.#watchers.delete(done);
          resolve();
        };
        const timer = setTimeout(done, left);
        this.#watchers.add(done);
      });
    }
  }

  /** Wakes the callers of `settled`: something changed here, or the poll came round. */
  #changed(): void {
    for (const watcher of [...this.#watchers]) watcher();
  }

  /** Claims jobs while this instance has room; one claim at a time, later wakes coalesced. */
  #wake(): void {
    if (this.#stopped) return;
    if (this.#claiming) {
      this.#claimAgain = true;
      return;
    }
    this.#claiming = this.#claim().finally(() => {
      this.#claiming = null;
      if (this.#claimAgain) {
        this.#claimAgain = false;
        this.#wake();
      }
      this.#settle();
    });
  }

  /**
   * The claims this instance has room for now, small jobs first. While uploads stream, small
   * jobs are looked for every `BUSY_LOOK_MS` at most (each admission would otherwise claim in
   * vain), and large ones when one was offered here or the poll came round.
   */
  #claims(): Claim[] {
    const now = performance.now();
    const busy = this.#o.busy?.() ?? false;
    if (busy) this.#watchBusy();
    const look = !busy || now - this.#lastBusyLook >= BUSY_LOOK_MS;
    if (busy && look) this.#lastBusyLook = now;
    const large = this.#largeBacklog || this.#polled;
    this.#polled = false;
    return [
      // Uploads stream: a small job runs only once it waited long, one at a time.
      busy
        ? {
          room: look && this.#runningSmall === 0 ? 1 : 0,
          small: true,
          select: { ...SMALL, offeredAgoMs: this.#o.busyWaitMs ?? BUSY_WAIT_MS },
        }
        : { room: SMALL_AT_ONCE - this.#runningSmall, small: true, select: SMALL },
      {
        room: large ? (this.#o.concurrency ?? 1) - (this.#running.size - this.#runningSmall) : 0,
        small: false,
        select: { lane: "large" },
      },
    ];
  }

  /**
   * Claims what this instance has room for: small jobs (held back while uploads stream here),
   * larger ones, then re-runs of older results once no delivery waits.
   */
  async #claim(): Promise<void> {
    const { jobs } = this.#o.db;
    /** True when a claim filled its room: more jobs may be claimable. */
    let more = false;
    const take = async ({ room, small, select }: Claim) => {
      const claimed = await jobs.claim(this.owner, this.#leaseSeconds, room, [
        ...this.#running.keys(),
      ], select);
      for (const job of claimed) this.#start(job, small);
      return claimed.length === room;
    };
    try {
      for (const claim of this.#claims()) {
        // No room (or not looked for now): what waits is claimed when a run ends, or later.
        if (claim.room <= 0) {
          more ||= claim.small;
          continue;
        }
        const full = await take(claim);
        if (!claim.small) this.#largeBacklog = full;
        more ||= full;
      }
      // Small jobs held back while uploads stream wait all the same.
      if (!more && this.#o.busy?.()) more = await jobs.waiting(SMALL);
      // Re-runs of older results wait while deliveries do, then run in the larger ones' room.
      const room = (this.#o.concurrency ?? 1) - (this.#running.size - this.#runningSmall);
      if (!more && room > 0) more = await take({ room, small: false, select: UPGRADES });
      this.#moreWaiting = more;
    } catch (error) {
      this.#moreWaiting = false; // the poll tries again
      this.#databaseFailed("cannot claim analysis jobs", error);
    }
  }

  /** While uploads stream, looks often whether they stopped (then small jobs are claimed). */
  #watchBusy(): void {
    if (this.#busyTimer !== undefined || this.#stopped) return;
    this.#busyTimer = setTimeout(() => {
      this.#busyTimer = undefined;
      const look = performance.now() - this.#lastBusyLook >= BUSY_LOOK_MS;
      if (this.#o.busy?.() && !look) this.#watchBusy();
      else this.#wake();
    }, BUSY_POLL_MS);
  }

  #start(job: AnalysisJob, small: boolean): void {
    const id = `${job.orgId}/${job.experimentId}`;
    if (small) this.#runningSmall++;
    const done = this.#run(job).finally(() => {
      this.#running.delete(id);
      if (small) this.#runningSmall--;
      this.#wake();
      this.#settle();
    });
    this.#running.set(id, { etag: job.etag, small, done });
  }

  async #run(job: AnalysisJob): Promise<void> {
    const { db, log } = this.#o;
    const renewal = setInterval(() => {
      db.jobs.renew(this.owner, job, this.#leaseSeconds).then((held) => {
        if (held) return;
        log.warn("analysis lease lost: another instance may run it too", {
          org_id: job.orgId,
          experiment_id: job.experimentId,
          etag: job.etag,
        });
      }, () => {/* the database is away: renewed at the next tick, or the lease runs out */});
    }, Math.max(200, this.#leaseSeconds * 1000 / 3));
    try {
      if (await this.#needsNoRun(job)) {
        await db.jobs.complete(this.owner, job);
        return;
      }
      if (job.attempts > MAX_ATTEMPTS) {
        await this.#giveUp(job);
        return;
      }
      const delivery = deliveryOf(job);
      const result = await runAnalysis(this.#o, delivery);
      if (result.kind === "postponed") {
        await db.jobs.postpone(this.owner, job, RETRY_SECONDS);
        const retry = setTimeout(() => this.#wake(), RETRY_SECONDS * 1000 + 50);
        Deno.unrefTimer(retry as unknown as number);
        return;
      }
      // Replaced since it was offered: what is there now is a delivery (recorded, analysed; for
      // a re-run of an older result: nothing more).
      if (result.kind === "replaced" && job.source !== "upgrade") {
        await this.#o.deliveries.deliver({
          ...delivery,
          info: result.info,
          source: "scan",
          sha256: undefined,
        });
      }
      await db.jobs.complete(this.owner, job);
    } catch (error) {
      // The database failed mid-way: the lease runs out and the job is claimed again.
      this.#databaseFailed("analysis job not finished; it is claimed again later", error);
    } finally {
      clearInterval(renewal);
    }
  }

  /**
   * True when the job's run is not needed any more: its object was analysed meanwhile (an offer
   * raced with the end of another run), or, for a re-run of an older result, that result is
   * gone or current (a newer delivery has a job of its own).
   */
  async #needsNoRun(job: AnalysisJob): Promise<boolean> {
    if (job.source === "settings") return false;
    const row = await this.#o.db.analyses.get(job.orgId, job.experimentId);
    if (job.source !== "upgrade") return row?.etag === job.etag && row.status !== "pending";
    return row?.etag !== job.etag || row.status !== "ready" ||
      (row.analysis_version ?? 0) >= ANALYSIS_VERSION;
  }

  /** A job whose runs kept dying with their instance: reported failed instead of run again. */
  async #giveUp(job: AnalysisJob): Promise<void> {
    const { db, log } = this.#o;
    const fields = {
      org_id: job.orgId,
      experiment_id: job.experimentId,
      etag: job.etag,
      attempts: job.attempts - 1,
    };
    if (job.source === "upgrade") {
      // The result of the older analysis stays served.
      log.error("analysis re-run given up", fields);
    } else {
      log.error("analysis given up", fields);
      await db.analyses.saveResult(job.orgId, job.experimentId, job.etag, {
        status: "failed",
        error:
          `The analysis was interrupted ${MAX_ATTEMPTS} times (the instance running it stopped); deliver the file again to retry`,
        rows: null,
        result: null,
        version: ANALYSIS_VERSION,
      }, new Date().toISOString());
    }
    await db.jobs.complete(this.owner, job);
  }

  /** Logs a database failure of background work, at most once a minute. */
  #databaseFailed(what: string, error: unknown): void {
    if (Date.now() - this.#lastDbWarning < 60_000) return;
    this.#lastDbWarning = Date.now();
    this.#o.log.warn(what, { error: describeError(error) });
  }

  #isIdle(): boolean {
    return this.#running.size === 0 && this.#admissions === 0 && this.#claiming === null &&
      !this.#moreWaiting;
  }

  #settle(): void {
    this.#changed();
    if (this.#isIdle()) { for (const resolve of this.#idle.splice(0)) resolve(); }
  }

  whenIdle(): Promise<void> {
    if (this.#isIdle() || this.#stopped) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribe();
    clearTimeout(this.#poll);
    clearTimeout(this.#busyTimer);
    this.#changed();
    await this.#claiming;
    await Promise.all([...this.#running.values()].map((r) => r.done.catch(() => {})));
    for (const resolve of this.#idle.splice(0)) resolve();
  }
}

const SMALL: AnalysisJobSelection = { lane: "small" };
const UPGRADES: AnalysisJobSelection = { lane: "upgrade" };
