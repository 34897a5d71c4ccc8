/**
 * The analysis queue when several instances share the control plane (PostgreSQL): a delivery
 * becomes a job row per dataset (newest delivery wins), and every instance claims jobs with a
 * lease, renewed while the run lasts. One run per delivery across instances: an offer of the
 * object a job already holds joins it, and a claimed job whose object was analysed meanwhile
 * ends without a run. An instance that dies mid-run stops renewing; once its lease ran out
 * another instance claims the job and finishes it. Each run is `runAnalysis`, as with the
 * in-memory queue (history, delivery summaries and changes included).
 *
 * A delivery made here is claimed at once (a direct upload's analysis starts right after its
 * commit, as with SQLite); jobs offered by other instances, and leases that ran out, are noticed
 * by a poll of the job table every `pollMs`. As in memory, each instance runs up to
 * `SMALL_AT_ONCE` small datasets beside `concurrency` larger ones; while its uploads stream
 * (`busy`) it claims small jobs only once they waited `BUSY_WAIT_MS`, one at a time. Re-runs of
 * results made by an older analysis (`upgrade` jobs) are claimed last, in the larger ones' room.
 */
import type { AnalysisJob, AnalysisJobRepo, AnalysisJobSelection } from "../db/control_plane.ts";
import type { Delivery } from "../deliveries.ts";
import { describeError } from "../log.ts";
import { randomBase62 } from "../db/ids.ts";
import { GroupWrite } from "../group_write.ts";
import type { AnalysisQueueOptions, AnalysisScheduler } from "./analysis_queue.ts";
import { BUSY_POLL_MS, BUSY_WAIT_MS, notQueued, SMALL_AT_ONCE } from "./analysis_queue.ts";
import { outdatedDeliveries, runAnalysis } from "./run.ts";
import { ANALYSIS_VERSION } from "./report.ts";
import { SMALL_INPUT_BYTES } from "./aggregate/aggregate.ts";

export interface LeasedAnalysisQueueOptions extends AnalysisQueueOptions {
  jobs: AnalysisJobRepo;
  /** How long a claim lasts without renewal (`ABN_ANALYSIS_LEASE_SECONDS`). */
  leaseSeconds: number;
  /** How often the job table is polled for work offered elsewhere; default 1000 ms. */
  pollMs?: number;
  /** This instance's name in leases; default `{hostname}/{pid}/{random}`. */
  owner?: string;
}

/** Least time between the starts of two claims (see `#wake`). */
const CLAIM_GAP_MS = 25;
/** Claims of one job (each after a lease ran out) before the analysis is reported failed. */
const MAX_ATTEMPTS = 5;
/** Delay before a job postponed by a transient failure is claimed again. */
const RETRY_SECONDS = 5;

export class LeasedAnalysisQueue implements AnalysisScheduler {
  readonly owner: string;
  #o: LeasedAnalysisQueueOptions;
  #running = new Map<string, { etag: string; small: boolean; done: Promise<void> }>();
  #runningSmall = 0;
  #busyTimer: ReturnType<typeof setTimeout> | undefined;
  /** Deliveries being admitted (their rows read and written), by dataset. */
  #admitting = new Map<string, string>();
  #admissions = 0;
  /** The newest delivery of a dataset that arrived while its admission was under way. */
  #nextAdmission = new Map<string, Delivery>();
  #claiming: Promise<void> | null = null;
  /** When the last claim started (`performance.now()`), and the timer of one waiting to. */
  #lastClaim = -Infinity;
  #claimTimer: ReturnType<typeof setTimeout> | undefined;
  #claimAgain = false;
  #unsubscribe: () => void;
  #poll: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;
  #idle: (() => void)[] = [];
  #lastDbWarning = 0;

  constructor(options: LeasedAnalysisQueueOptions) {
    this.#o = options;
    this.owner = options.owner ?? `${Deno.hostname()}/${Deno.pid}/${randomBase62(6)}`;
    this.#unsubscribe = options.deliveries.subscribe((d) => this.enqueue(d));
    this.#schedulePoll();
  }

  #schedulePoll(): void {
    if (this.#stopped) return;
    this.#poll = setTimeout(() => {
      this.#wake();
      this.#schedulePoll();
    }, this.#o.pollMs ?? 1000);
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
    if (this.#admitting.has(id) && delivery.source !== "upgrade") {
      // An admission of this dataset is under way: this newer delivery is admitted after it (and
      // replaces any other that waited), so a burst of re-deliveries costs a few round trips.
      this.#nextAdmission.set(id, delivery);
      this.#admitting.set(id, etag);
      return;
    }
    this.#admitting.set(id, etag);
    this.#admissions++;
    this.#admit(id, delivery).catch(notQueued(this.#o.log, delivery)).finally(() => {
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
   * Queues, in the background, a re-run of every ready result made by an older analysis
   * (`ANALYSIS_VERSION`), newest deliveries first; answers how many were offered. Every instance
   * offers them at start-up: an offer for a dataset that has a job joins it.
   */
  async rerunOutdated(): Promise<number> {
    const deliveries = await outdatedDeliveries(this.#o.db);
    for (const delivery of deliveries) this.enqueue(delivery);
    return deliveries.length;
  }

  /**
   * Records the delivery as pending (unless its result is saved already) and offers the job
   * (`AnalysisJobRepo.admit`). One write is under way at a time; deliveries that arrive meanwhile
   * go together in the next one, so a burst of deliveries costs a few statements, not three
   * round trips each.
   */
  #admit(id: string, delivery: Delivery): Promise<void> {
    return this.#admissionWrites.add([id, delivery]);
  }

  readonly #admissionWrites = new GroupWrite<[string, Delivery]>(async (group) => {
    // One per dataset; a newer delivery announced here meanwhile wins (it has its own admission).
    const current = new Map(group.filter(([id, d]) => this.#admitting.get(id) === d.info.etag));
    await this.#o.jobs.admit([...current.values()].map((d) => ({
      orgId: d.orgId,
      experimentId: d.experimentId,
      key: d.key,
      etag: d.info.etag,
      sizeBytes: d.info.size,
      deliveredAt: d.info.lastModified.toISOString(),
      validated: d.validated,
      sha256: d.sha256,
      source: d.source,
    })));
    this.#wake();
  });

  /**
   * Claims jobs while this instance has room; one claim at a time, and claims start at least
   * `CLAIM_GAP_MS` apart: during a burst of deliveries each offer wakes the queue, and the wakes
   * of one gap are served by one claim (which takes as many jobs as there is room for).
   */
  #wake(): void {
    if (this.#stopped) return;
    if (this.#claiming) {
      this.#claimAgain = true;
      return;
    }
    if (this.#claimTimer !== undefined) return; // a claim starts soon
    const wait = this.#lastClaim + CLAIM_GAP_MS - performance.now();
    if (wait > 0) {
      this.#claimTimer = setTimeout(() => {
        this.#claimTimer = undefined;
        this.#wake();
      }, wait);
      return;
    }
    this.#lastClaim = performance.now();
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
   * Claims what this instance has room for: small jobs (held back while uploads stream here),
   * larger ones, then re-runs of older results once no delivery waits.
   */
  async #claim(): Promise<void> {
    const limit = this.#o.concurrency ?? 1;
    const busy = this.#o.busy?.() ?? false;
    const claims: { room: number; small: boolean; select: AnalysisJobSelection }[] = [];
    const smallRoom = SMALL_AT_ONCE - this.#runningSmall;
    if (!busy) {
      claims.push({
        room: smallRoom,
        small: true,
        select: { maxBytes: SMALL_INPUT_BYTES, upgrades: "exclude" },
      });
    } else {
      // Uploads stream: a small job runs only once it waited long, one at a time.
      claims.push({
        room: this.#runningSmall === 0 ? 1 : 0,
        small: true,
        select: {
          maxBytes: SMALL_INPUT_BYTES,
          upgrades: "exclude",
          offeredAgoMs: this.#o.busyWaitMs ?? BUSY_WAIT_MS,
        },
      });
      this.#watchBusy();
    }
    claims.push({
      room: limit - (this.#running.size - this.#runningSmall),
      small: false,
      select: { overBytes: SMALL_INPUT_BYTES, upgrades: "exclude" },
    });
    let waiting = busy; // small deliveries may wait unseen while uploads stream
    try {
      for (const { room, small, select } of claims) {
        if (room <= 0) {
          waiting = true;
          continue;
        }
        const claimed = await this.#o.jobs.claim(this.owner, this.#o.leaseSeconds, room, [
          ...this.#running.keys(),
        ], select);
        if (claimed.length === room) waiting = true;
        for (const job of claimed) this.#start(job, small);
      }
      // Re-runs of older results wait while deliveries do, then run in the larger ones' room.
      const upgradeRoom = limit - (this.#running.size - this.#runningSmall);
      if (!waiting && upgradeRoom > 0) {
        const claimed = await this.#o.jobs.claim(this.owner, this.#o.leaseSeconds, upgradeRoom, [
          ...this.#running.keys(),
        ], { upgrades: "only" });
        for (const job of claimed) this.#start(job, false);
      }
    } catch (error) {
      this.#databaseFailed("cannot claim analysis jobs", error);
    }
  }

  /** While uploads stream, looks often whether they stopped (then small jobs are claimed). */
  #watchBusy(): void {
    if (this.#busyTimer !== undefined || this.#stopped) return;
    this.#busyTimer = setTimeout(() => {
      this.#busyTimer = undefined;
      if (this.#o.busy?.()) this.#watchBusy();
      else this.#wake();
    }, BUSY_POLL_MS);
  }

  #start(job: AnalysisJob, small: boolean): void {
    const id = `${job.orgId}/${job.experimentId}`;
    if (small) this.#runningSmall++;
    const done = this.#run(job).finally(() => {
      this.#running.delete(id);
      if (small) this.#runningSmall--;
      this.#settle();
      this.#wake();
    });
    this.#running.set(id, { etag: job.etag, small, done });
  }

  async #run(job: AnalysisJob): Promise<void> {
    const { db, jobs, log, leaseSeconds } = this.#o;
    const fields = { org_id: job.orgId, experiment_id: job.experimentId, etag: job.etag };
    const renewal = setInterval(() => {
      jobs.renew(this.owner, job, leaseSeconds).then((held) => {
        if (!held) log.warn("analysis lease lost: another instance may run it too", fields);
      }, () => {/* the database is away: renewed at the next tick, or the lease runs out */});
    }, Math.max(200, leaseSeconds * 1000 / 3));
    try {
      const delivery: Delivery = {
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
        source: job.source,
      };
      if (job.source === "upgrade") {
        // Only a ready result of this object made by an older analysis is run again (a newer
        // delivery has a job of its own).
        const row = await db.analyses.get(job.orgId, job.experimentId);
        if (
          row?.etag !== job.etag || row.status !== "ready" ||
          (row.analysis_version ?? 0) >= ANALYSIS_VERSION
        ) {
          await jobs.complete(this.owner, job);
          return;
        }
      } else if (job.source !== "settings") {
        // Analysed meanwhile (an offer raced with the end of another instance's run).
        const row = await db.analyses.get(job.orgId, job.experimentId);
        if (row?.etag === job.etag && row.status !== "pending") {
          await jobs.complete(this.owner, job);
          return;
        }
      }
      if (job.attempts > MAX_ATTEMPTS) {
        await this.#giveUp(job);
        return;
      }
      const result = await runAnalysis(this.#o, delivery);
      if (result.kind === "postponed") {
        await jobs.postpone(this.owner, job, RETRY_SECONDS);
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
      await jobs.complete(this.owner, job);
    } catch (error) {
      // The database failed mid-way: the lease runs out and the job is claimed again.
      this.#databaseFailed("analysis job not finished; it is claimed again later", error);
    } finally {
      clearInterval(renewal);
    }
  }

  /** A job whose runs kept dying with their instance: reported failed instead of run again. */
  async #giveUp(job: AnalysisJob): Promise<void> {
    const { db, jobs, log } = this.#o;
    if (job.source === "upgrade") {
      // The result of the older analysis stays served.
      log.error("analysis re-run given up", {
        org_id: job.orgId,
        experiment_id: job.experimentId,
        etag: job.etag,
        attempts: job.attempts - 1,
      });
      await jobs.complete(this.owner, job);
      return;
    }
    const error =
      `The analysis was interrupted ${MAX_ATTEMPTS} times (the instance running it stopped); deliver the file again to retry`;
    log.error("analysis given up", {
      org_id: job.orgId,
      experiment_id: job.experimentId,
      etag: job.etag,
      attempts: job.attempts - 1,
    });
    await db.analyses.saveResult(job.orgId, job.experimentId, job.etag, {
      status: "failed",
      error,
      rows: null,
      result: null,
      version: ANALYSIS_VERSION,
    }, new Date().toISOString());
    await jobs.complete(this.owner, job);
  }

  /** Logs a database failure of background work, at most once a minute. */
  #databaseFailed(what: string, error: unknown): void {
    if (Date.now() - this.#lastDbWarning < 60_000) return;
    this.#lastDbWarning = Date.now();
    this.#o.log.warn(what, { error: describeError(error) });
  }

  #isIdle(): boolean {
    return this.#running.size === 0 && this.#admissions === 0 && this.#claiming === null &&
      this.#claimTimer === undefined;
  }

  #settle(): void {
    if (this.#isIdle()) { for (const resolve of this.#idle.splice(0)) resolve(); }
  }

  whenIdle(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribe();
    clearTimeout(this.#poll);
    clearTimeout(this.#busyTimer);
    clearTimeout(this.#claimTimer);
    this.#claimTimer = undefined;
    await this.#claiming;
    await Promise.all([...this.#running.values()].map((r) => r.done.catch(() => {})));
  }
}
