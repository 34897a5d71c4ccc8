/**
 * The analysis queue when several instances share the control plane (PostgreSQL): a delivery
 * becomes a job row per dataset (newest delivery wins), and every instance claims jobs with a
 * lease, renewed while the run lasts. One run per delivery across instances: an offer of the
 * object a job already holds joins it, and a claimed job whose object was analysed meanwhile
 * ends without a run. An instance that dies mid-run stops renewing; once its lease ran out
 * another instance claims the job and finishes it.
 *
 * A delivery made here is claimed at once (a direct upload's analysis starts right after its
 * commit, as with SQLite); jobs offered by other instances, and leases that ran out, are noticed
 * by a poll of the job table every `pollMs`.
 */
import type { AnalysisJob, AnalysisJobRepo } from "../db/control_plane.ts";
import type { Delivery } from "../deliveries.ts";
import { describeError } from "../log.ts";
import { randomBase62 } from "../db/ids.ts";
import type { AnalysisQueueOptions, AnalysisScheduler } from "./analysis_queue.ts";
import { analyseDelivery } from "./analyse_delivery.ts";

export interface LeasedAnalysisQueueOptions extends AnalysisQueueOptions {
  jobs: AnalysisJobRepo;
  /** How long a claim lasts without renewal (`ABN_ANALYSIS_LEASE_SECONDS`). */
  leaseSeconds: number;
  /** How often the job table is polled for work offered elsewhere; default 1000 ms. */
  pollMs?: number;
  /** This instance's name in leases; default `{hostname}/{pid}/{random}`. */
  owner?: string;
}

/** Claims of one job (each after a lease ran out) before the analysis is reported failed. */
const MAX_ATTEMPTS = 5;
/** Delay before a job postponed by a transient failure is claimed again. */
const RETRY_SECONDS = 5;

export class LeasedAnalysisQueue implements AnalysisScheduler {
  readonly owner: string;
  #o: LeasedAnalysisQueueOptions;
  #running = new Map<string, { etag: string; done: Promise<void> }>();
  /** Deliveries being admitted (their rows read and written), by dataset. */
  #admitting = new Map<string, string>();
  #admissions = 0;
  #claiming: Promise<void> | null = null;
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
    if (
      delivery.source !== "settings" && this.inFlight(delivery.orgId, delivery.experimentId, etag)
    ) {
      return;
    }
    this.#admitting.set(id, etag);
    this.#admissions++;
    this.#admit(id, delivery).catch((error) => {
      // The database could not record it: the timer's scan offers it again.
      this.#o.log.warn("analysis not queued: the database failed; the next scan retries it", {
        org_id: delivery.orgId,
        experiment_id: delivery.experimentId,
        error: describeError(error),
      });
    }).finally(() => {
      this.#admissions--;
      if (this.#admitting.get(id) === etag) this.#admitting.delete(id);
      this.#settle();
    });
  }

  /** Records the delivery as pending (unless its result is saved already) and offers the job. */
  async #admit(id: string, delivery: Delivery): Promise<void> {
    const { db, jobs } = this.#o;
    const { orgId, experimentId, info } = delivery;
    const rerun = delivery.source === "settings";
    const row = await db.analyses.get(orgId, experimentId);
    const same = row?.etag === info.etag;
    if (same && row?.status !== "pending" && !rerun) return;
    // A newer delivery of this dataset was announced here meanwhile: it wins.
    if (this.#admitting.get(id) !== info.etag) return;
    if (!same || rerun) {
      await db.analyses.markPending(
        orgId,
        experimentId,
        info.etag,
        info.size,
        info.lastModified.toISOString(),
      );
    }
    await jobs.offer({
      orgId,
      experimentId,
      key: delivery.key,
      etag: info.etag,
      sizeBytes: info.size,
      deliveredAt: info.lastModified.toISOString(),
      validated: delivery.validated,
      source: delivery.source,
    });
    this.#wake();
  }

  /** Claims jobs while this instance has room; one claim at a time. */
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

  async #claim(): Promise<void> {
    const room = (this.#o.concurrency ?? 1) - this.#running.size;
    if (room <= 0) return;
    let claimed: AnalysisJob[];
    try {
      claimed = await this.#o.jobs.claim(this.owner, this.#o.leaseSeconds, room, [
        ...this.#running.keys(),
      ]);
    } catch (error) {
      this.#databaseFailed("cannot claim analysis jobs", error);
      return;
    }
    for (const job of claimed) this.#start(job);
  }

  #start(job: AnalysisJob): void {
    const id = `${job.orgId}/${job.experimentId}`;
    const done = this.#run(job).finally(() => {
      this.#running.delete(id);
      this.#settle();
      this.#wake();
    });
    this.#running.set(id, { etag: job.etag, done });
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
        source: job.source,
      };
      if (job.source !== "settings") {
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
      const result = await analyseDelivery(this.#o, delivery);
      if (result.kind === "postponed") {
        await jobs.postpone(this.owner, job, RETRY_SECONDS);
        return;
      }
      // Replaced since it was offered: analyse what is there now (newest wins).
      if (result.kind === "replaced") {
        this.enqueue({ ...delivery, info: result.info, source: "scan" });
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
    return this.#running.size === 0 && this.#admissions === 0 && this.#claiming === null;
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
    await this.#claiming;
    await Promise.all([...this.#running.values()].map((r) => r.done.catch(() => {})));
  }
}
