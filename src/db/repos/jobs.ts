/**
 * Analysis jobs: one row per dataset holding its newest delivery, claimed with a lease (rows
 * locked as they are claimed where the engine can, so instances claiming together never take
 * the same row). The running instance renews the lease; when it dies the lease runs out and
 * another instance claims the job. `generation` grows with every offer that changes the row, so
 * the end of a run removes the job only when nothing newer arrived meanwhile. On one host
 * (SQLite) the same rules hold; a lease there is simply held until the run ends.
 */
import type { Dialect, Sql, SqlValue } from "../dialect.ts";
import { int, rowsParam } from "../dialect.ts";
import type { PendingDelivery } from "./analyses.ts";
import { markPendingRows } from "./analyses.ts";

/** How a delivery was noticed (see `AnalysisJobOffer.source`). */
export type DeliverySource =
  | "upload"
  | "presigned_put"
  | "scan"
  | "event"
  | "reconcile"
  | "settings"
  | "upgrade";

/**
 * Where a job waits: `small` and `large` deliveries (the queue runs them side by side, each
 * lane claimed in offer order along an index), `upgrade` for re-runs of older results.
 */
export type JobLane = "small" | "large" | "upgrade";

/** What a delivery offers the analysis queue. */
export interface AnalysisJobOffer {
  orgId: string;
  experimentId: string;
  /** The dataset's storage key. */
  key: string;
  etag: string;
  sizeBytes: number;
  /** ISO time the object was stored. */
  deliveredAt: string;
  /** True when the bytes were validated on the way in (direct upload). */
  validated: boolean;
  /** SHA-256 of the bytes (hex) when known on the way in (direct upload). */
  sha256?: string;
  /**
   * Whether the checks on the way in found dimension columns (direct upload): false lets the
   * analysis keep no dimension values. Unknown: undefined.
   */
  hasDimensions?: boolean;
  /**
   * How the delivery was noticed; `settings` asks for one more run of the same object; `upgrade`
   * is the re-run of a result made by an older analysis, which never replaces a job.
   */
  source: DeliverySource;
  /** The lane of a delivery (`upgrade` when its source is, whatever this says). */
  lane: "small" | "large";
}

/** A claimed analysis job: the newest delivery of one dataset. */
export interface AnalysisJob extends AnalysisJobOffer {
  /** Grows with every offer that changes the job; `complete` compares it. */
  generation: number;
  /** Claims so far, this one included (postponed claims do not count). */
  attempts: number;
}

/** Which jobs a claim takes (every one by default, re-runs of older results last). */
export interface AnalysisJobSelection {
  /** Jobs of this lane only. */
  lane?: JobLane;
  /** Jobs offered at least this many milliseconds ago only (by the database's clock). */
  offeredAgoMs?: number;
}

export interface AnalysisJobRepo {
  /**
   * The lease owner of the one queue when one process owns the database (SQLite): a restarted
   * process takes back at once the jobs it held before (see `claim`). Undefined where instances
   * share the database: each names its own.
   */
  readonly soleOwner?: string;
  /**
   * Records that a delivery awaits analysis. The object already offered joins that job (nothing
   * changes) unless the source is `settings`, which queues one more run; another object replaces
   * the job's (newest wins) and is run after the current run, if any, finished. An `upgrade`
   * only adds a job to a dataset that has none.
   */
  offer(job: AnalysisJobOffer): Promise<void>;
  /**
   * Admits deliveries (at most one per dataset) in one transaction: for each, unless its
   * object's result is already saved (and the source is not `settings`), the analysis row
   * becomes `pending` for a new object (or for a `settings` re-run; never for an `upgrade`), and
   * the job is offered as `offer` does.
   */
  admit(jobs: readonly AnalysisJobOffer[]): Promise<void>;
  /**
   * Claims up to `limit` jobs for `leaseSeconds` among those `select` names, oldest offer first
   * and re-runs of older results last: jobs nobody holds, and jobs `owner` holds but does not
   * run (`running` lists the `org/experiment` it runs): a claim or a release whose answer was
   * lost in a database outage is taken back at once instead of waiting for its lease to run out.
   */
  claim(
    owner: string,
    leaseSeconds: number,
    limit: number,
    running?: readonly string[],
    select?: AnalysisJobSelection,
  ): Promise<AnalysisJob[]>;
  /** Extends the lease; false when `owner` no longer holds the job. */
  renew(owner: string, job: AnalysisJob, leaseSeconds: number): Promise<boolean>;
  /**
   * Ends a run: the job is removed, unless an offer changed it meanwhile; then it is released, to
   * be claimed again at once.
   */
  complete(owner: string, job: AnalysisJob): Promise<void>;
  /** Releases the job after a transient failure, claimable again in `delaySeconds`. */
  postpone(owner: string, job: AnalysisJob, delaySeconds: number): Promise<void>;
  /** True when a job `select` names waits for a claim (nobody holds it). */
  waiting(select: AnalysisJobSelection): Promise<boolean>;
  /** The ETag of the dataset's job (queued or running, on any instance), if it has one. */
  etagOf(orgId: string, experimentId: string): Promise<string | null>;
}

/** A job row as `RETURNING_JOB` names its columns: the interface's, in the engine's types. */
type JobRow = Record<keyof AnalysisJob, unknown> & {
  sha256: string | null;
  hasDimensions: unknown;
};

const JOB_COLUMNS =
  "org_id, experiment_id, object_key, etag, size_bytes, delivered_at, validated, source, sha256, lane, has_dimensions";

/** A claimed job's columns under the interface's names. */
const RETURNING_JOB = `org_id AS "orgId", experiment_id AS "experimentId", object_key AS key,
  etag, size_bytes AS "sizeBytes", delivered_at AS "deliveredAt", validated, sha256,
  has_dimensions AS "hasDimensions", source,
  CASE WHEN lane = 'small' THEN 'small' ELSE 'large' END AS lane, generation, attempts`;

function toJob({ sha256, hasDimensions, ...row }: JobRow): AnalysisJob {
  return {
    ...row as AnalysisJob,
    sizeBytes: int(row.sizeBytes),
    validated: Boolean(row.validated),
    ...(sha256 === null ? {} : { sha256 }),
    ...(hasDimensions === null ? {} : { hasDimensions: Boolean(hasDimensions) }),
    generation: int(row.generation),
    attempts: int(row.attempts),
  };
}

const OFFER_COLUMNS = {
  org_id: "text",
  experiment_id: "text",
  object_key: "text",
  etag: "text",
  size_bytes: "integer",
  delivered_at: "time",
  validated: "boolean",
  source: "text",
  sha256: "text",
  lane: "text",
  has_dimensions: "boolean",
} as const;

/** One offer as `Dialect.rows` reads it (with the columns `markPendingRows` reads too). */
function offerRow(job: AnalysisJobOffer): PendingDelivery & Record<string, SqlValue> {
  return {
    org_id: job.orgId,
    experiment_id: job.experimentId,
    object_key: job.key,
    etag: job.etag,
    size_bytes: job.sizeBytes,
    delivered_at: job.deliveredAt,
    validated: job.validated,
    source: job.source,
    sha256: job.sha256 ?? null,
    has_dimensions: job.hasDimensions ?? null,
    lane: job.source === "upgrade" ? "upgrade" : job.lane,
  };
}

export function jobRepo(db: Dialect): AnalysisJobRepo {
  const now = db.timeIn("0");
  /** Offers the jobs of `rows` (`rowsParam` of `offerRow`s) that `where` keeps. */
  const offerRows = (sql: Sql, param: string, where: string) =>
    sql.run(
      `INSERT INTO analysis_jobs (${JOB_COLUMNS}, offered_at)
       SELECT ${JOB_COLUMNS.split(", ").map((c) => `i.${c}`).join(", ")}, ${now}
       FROM ${db.rows("i", OFFER_COLUMNS)}
       LEFT JOIN analyses a ON a.org_id = i.org_id AND a.experiment_id = i.experiment_id
       WHERE ${where}
       ORDER BY i.org_id, i.experiment_id
       ON CONFLICT (org_id, experiment_id) DO UPDATE SET
         object_key = excluded.object_key,
         etag = excluded.etag,
         size_bytes = excluded.size_bytes,
         delivered_at = excluded.delivered_at,
         validated = CASE WHEN analysis_jobs.etag = excluded.etag
           THEN analysis_jobs.validated OR excluded.validated ELSE excluded.validated END,
         sha256 = CASE WHEN analysis_jobs.etag = excluded.etag
           THEN coalesce(excluded.sha256, analysis_jobs.sha256) ELSE excluded.sha256 END,
         has_dimensions = CASE WHEN analysis_jobs.etag = excluded.etag
           THEN coalesce(excluded.has_dimensions, analysis_jobs.has_dimensions)
           ELSE excluded.has_dimensions END,
         source = excluded.source,
         lane = excluded.lane,
         generation = analysis_jobs.generation + 1,
         attempts = CASE WHEN analysis_jobs.etag = excluded.etag
           THEN analysis_jobs.attempts ELSE 0 END,
         offered_at = excluded.offered_at,
         -- Claimable at once (a postponed retry too), unless a run holds it.
         lease_until = CASE WHEN analysis_jobs.lease_owner IS NULL
           THEN NULL ELSE analysis_jobs.lease_until END
       WHERE excluded.source <> 'upgrade'
         AND (analysis_jobs.etag <> excluded.etag OR excluded.source = 'settings')`,
      [param],
    );
  /** The job `owner` holds, as a statement's last parameters. */
  const held = (owner: string, job: AnalysisJob) => [job.orgId, job.experimentId, owner];
  return {
    ...(db.singleProcess ? { soleOwner: "this-host" } : {}),
    offer: async (job) => {
      await offerRows(db, rowsParam([offerRow(job)]), "true");
    },
    admit: async (jobs) => {
      if (jobs.length === 0) return;
      const sorted = [...jobs].sort((a, b) =>
        a.orgId < b.orgId ? -1 : a.orgId > b.orgId ? 1 : a.experimentId < b.experimentId ? -1 : 1
      );
      const param = rowsParam(sorted.map(offerRow));
      await db.transaction(async (tx) => {
        // Decided on the analyses rows as they were: a saved result of the same object needs no
        // run (unless settings changed, or it is an older analysis's), a pending one does.
        await offerRows(
          tx,
          param,
          `i.source IN ('settings', 'upgrade') OR a.etag IS NULL OR a.etag <> i.etag
             OR a.status = 'pending'`,
        );
        await markPendingRows(db, tx, param);
      });
    },
    claim: async (owner, leaseSeconds, limit, running = [], select = {}) => {
      const { sql, params } = selection(db, select);
      return (await db.returning<JobRow>(
        `UPDATE analysis_jobs SET lease_owner = ?, lease_until = ${db.timeIn("?")},
           attempts = attempts + 1
         WHERE (org_id, experiment_id) IN (
           SELECT org_id, experiment_id FROM analysis_jobs
           WHERE (lease_until IS NULL OR lease_until <= ${now}
             OR (lease_owner = ? AND org_id || '/' || experiment_id NOT IN (
               SELECT id FROM ${db.rows("r", { id: "text" })})))${sql}
           ORDER BY ${
          select.lane === undefined ? "lane = 'upgrade', " : ""
        }offered_at, delivered_at DESC LIMIT ?${db.skipLocked})
         RETURNING ${RETURNING_JOB}`,
        [
          owner,
          leaseSeconds,
          owner,
          rowsParam(running.map((id) => ({ id }))),
          ...params,
          limit,
        ],
      )).map(toJob);
    },
    renew: async (owner, job, leaseSeconds) =>
      await db.run(
        `UPDATE analysis_jobs SET lease_until = ${db.timeIn("?")}
         WHERE org_id = ? AND experiment_id = ? AND lease_owner = ?`,
        [leaseSeconds, ...held(owner, job)],
      ) > 0,
    complete: async (owner, job) => {
      const removed = await db.run(
        `DELETE FROM analysis_jobs
         WHERE org_id = ? AND experiment_id = ? AND lease_owner = ? AND generation = ?`,
        [...held(owner, job), job.generation],
      );
      if (removed > 0) return;
      // Offered again meanwhile (a newer delivery, a settings change): claimable at once.
      await db.run(
        `UPDATE analysis_jobs SET lease_owner = NULL, lease_until = NULL
         WHERE org_id = ? AND experiment_id = ? AND lease_owner = ?`,
        held(owner, job),
      );
    },
    postpone: async (owner, job, delaySeconds) => {
      await db.run(
        `UPDATE analysis_jobs SET lease_owner = NULL, lease_until = ${db.timeIn("?")},
           attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END
         WHERE org_id = ? AND experiment_id = ? AND lease_owner = ?`,
        [delaySeconds, ...held(owner, job)],
      );
    },
    waiting: async (select) => {
      const { sql, params } = selection(db, select);
      return (await db.get(
        `SELECT 1 AS one FROM analysis_jobs
         WHERE (lease_until IS NULL OR lease_until <= ${now})${sql} LIMIT 1`,
        params,
      )) !== undefined;
    },
    etagOf: async (orgId, experimentId) =>
      (await db.get<{ etag: string }>(
        "SELECT etag FROM analysis_jobs WHERE org_id = ? AND experiment_id = ?",
        [orgId, experimentId],
      ))?.etag ?? null,
  };
}

/** The conditions of a claim's `select`, as SQL after the others, and their parameters. */
function selection(db: Dialect, select: AnalysisJobSelection): { sql: string; params: SqlValue[] } {
  const conditions: string[] = [];
  const params: SqlValue[] = [];
  if (select.lane !== undefined) {
    conditions.push("lane = ?");
    params.push(select.lane);
  }
  if (select.offeredAgoMs !== undefined) {
    conditions.push(`offered_at <= ${db.timeIn("?")}`);
    params.push(-select.offeredAgoMs / 1000);
  }
  return { sql: conditions.map((c) => `\n             AND ${c}`).join(""), params };
}
