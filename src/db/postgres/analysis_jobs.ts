/**
 * Analysis jobs on PostgreSQL: one row per dataset holding its newest delivery, claimed with a
 * lease (`FOR UPDATE SKIP LOCKED`, so instances claiming together never take the same row). The
 * running instance renews the lease; when it dies the lease runs out and another instance
 * claims the job. `generation` grows with every offer that changes the row, so the end of a run
 * removes the job only when nothing newer arrived meanwhile.
 */
import type {
  AnalysisJob,
  AnalysisJobOffer,
  AnalysisJobRepo,
  AnalysisJobSelection,
} from "../control_plane.ts";
import type { PgClient } from "./pg_client.ts";
import { int, iso } from "./_rows.ts";

interface JobRow {
  [column: string]: unknown;
  org_id: string;
  experiment_id: string;
  object_key: string;
  etag: string;
  size_bytes: string;
  delivered_at: Date;
  validated: boolean;
  sha256: string | null;
  source: AnalysisJobOffer["source"];
  generation: string;
  attempts: number;
}

function toJob(row: JobRow): AnalysisJob {
  return {
    orgId: row.org_id,
    experimentId: row.experiment_id,
    key: row.object_key,
    etag: row.etag,
    sizeBytes: int(row.size_bytes),
    deliveredAt: iso(row.delivered_at),
    validated: row.validated,
    ...(row.sha256 === null ? {} : { sha256: row.sha256 }),
    source: row.source,
    generation: int(row.generation),
    attempts: row.attempts,
  };
}

/** What an offer changes in a job that exists (see `AnalysisJobRepo.offer`). */
const OFFER_CONFLICT = `ON CONFLICT (org_id, experiment_id) DO UPDATE SET
           object_key = excluded.object_key,
           etag = excluded.etag,
           size_bytes = excluded.size_bytes,
           delivered_at = excluded.delivered_at,
           validated = CASE WHEN analysis_jobs.etag = excluded.etag
             THEN analysis_jobs.validated OR excluded.validated ELSE excluded.validated END,
           sha256 = CASE WHEN analysis_jobs.etag = excluded.etag
             THEN coalesce(excluded.sha256, analysis_jobs.sha256) ELSE excluded.sha256 END,
           source = excluded.source,
           generation = analysis_jobs.generation + 1,
           attempts = CASE WHEN analysis_jobs.etag = excluded.etag
             THEN analysis_jobs.attempts ELSE 0 END,
           offered_at = now(),
           -- Claimable at once (a postponed retry too), unless a run holds it.
           lease_until = CASE WHEN analysis_jobs.lease_owner IS NULL
             THEN NULL ELSE analysis_jobs.lease_until END
         WHERE excluded.source <> 'upgrade'
           AND (analysis_jobs.etag <> excluded.etag OR excluded.source = 'settings')`;

export function postgresAnalysisJobs(db: PgClient): AnalysisJobRepo {
  return {
    offer: async (job) => {
      await db.query(
        `INSERT INTO analysis_jobs (org_id, experiment_id, object_key, etag, size_bytes,
           delivered_at, validated, source, sha256)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         ${OFFER_CONFLICT}`,
        [
          job.orgId,
          job.experimentId,
          job.key,
          job.etag,
          job.sizeBytes,
          job.deliveredAt,
          job.validated,
          job.source,
          job.sha256 ?? null,
        ],
      );
    },
    // One statement: the analyses rows read, made `pending` where needed (mirrored into the
    // catalog), and the jobs offered; the same decisions as markPending and offer one by one.
    admit: async (jobs) => {
      if (jobs.length === 0) return;
      const column = <T>(pick: (job: AnalysisJobOffer) => T) => jobs.map(pick);
      await db.query(
        `WITH i AS (
           SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[],
             $6::timestamptz[], $7::boolean[], $8::text[], $9::text[])
             AS i(org_id, experiment_id, object_key, etag, size_bytes, delivered_at, validated,
               source, sha256)),
         c AS (
           SELECT i.*, a.etag AS a_etag, a.status AS a_status
           FROM i LEFT JOIN analyses a
             ON a.org_id = i.org_id AND a.experiment_id = i.experiment_id),
         t AS (
           SELECT * FROM c
           WHERE source IN ('settings', 'upgrade') OR a_etag IS DISTINCT FROM etag
             OR a_status = 'pending'),
         p AS (
           INSERT INTO analyses (org_id, experiment_id, etag, size_bytes, status, delivered_at)
           SELECT org_id, experiment_id, etag, size_bytes, 'pending', delivered_at FROM t
           WHERE source <> 'upgrade' AND (a_etag IS DISTINCT FROM etag OR source = 'settings')
           ORDER BY org_id, experiment_id
           ON CONFLICT (org_id, experiment_id) DO UPDATE SET
             etag = excluded.etag, size_bytes = excluded.size_bytes, status = 'pending',
             error = NULL, rows = NULL, result = NULL, delivered_at = excluded.delivered_at,
             started_at = NULL, finished_at = NULL, analysis_version = NULL
           RETURNING org_id, experiment_id, etag),
         m AS (
           UPDATE datasets d SET analysis_status = 'pending' FROM p
           WHERE d.org_id = p.org_id AND d.experiment_id = p.experiment_id AND d.etag = p.etag
             AND d.analysis_status <> 'pending')
         INSERT INTO analysis_jobs (org_id, experiment_id, object_key, etag, size_bytes,
           delivered_at, validated, source, sha256)
         SELECT org_id, experiment_id, object_key, etag, size_bytes, delivered_at, validated,
           source, sha256 FROM t
         ORDER BY org_id, experiment_id
         ${OFFER_CONFLICT}`,
        [
          column((j) => j.orgId),
          column((j) => j.experimentId),
          column((j) => j.key),
          column((j) => j.etag),
          column((j) => j.sizeBytes),
          column((j) => j.deliveredAt),
          column((j) => j.validated),
          column((j) => j.source),
          column((j) => j.sha256 ?? null),
        ],
      );
    },
    claim: async (owner, leaseSeconds, limit, running = [], select = {}) => {
      const { sql, params } = selection(select, 5);
      return (await db.query<JobRow>(
        `UPDATE analysis_jobs j SET lease_owner = $1,
           lease_until = now() + $2::integer * interval '1 second',
           attempts = j.attempts + 1
         FROM (SELECT org_id, experiment_id FROM analysis_jobs
               WHERE (lease_until IS NULL OR lease_until < now()
                 OR (lease_owner = $1
                     AND NOT (org_id || '/' || experiment_id) = ANY($4::text[])))${sql}
               ORDER BY source = 'upgrade', offered_at LIMIT $3
               FOR UPDATE SKIP LOCKED) c
         WHERE j.org_id = c.org_id AND j.experiment_id = c.experiment_id
         RETURNING j.*`,
        [owner, leaseSeconds, limit, [...running], ...params],
      )).rows.map(toJob);
    },
    renew: async (owner, job, leaseSeconds) =>
      ((await db.query(
        `UPDATE analysis_jobs SET lease_until = now() + $1::integer * interval '1 second'
         WHERE org_id = $2 AND experiment_id = $3 AND lease_owner = $4`,
        [leaseSeconds, job.orgId, job.experimentId, owner],
      )).rowCount ?? 0) > 0,
    complete: async (owner, job) => {
      const removed = await db.query(
        `DELETE FROM analysis_jobs
         WHERE org_id = $1 AND experiment_id = $2 AND lease_owner = $3 AND generation = $4`,
        [job.orgId, job.experimentId, owner, job.generation],
      );
      if ((removed.rowCount ?? 0) > 0) return;
      // Offered again meanwhile (a newer delivery, a settings change): claimable at once.
      await db.query(
        `UPDATE analysis_jobs SET lease_owner = NULL, lease_until = NULL
         WHERE org_id = $1 AND experiment_id = $2 AND lease_owner = $3`,
        [job.orgId, job.experimentId, owner],
      );
    },
    postpone: async (owner, job, delaySeconds) => {
      await db.query(
        `UPDATE analysis_jobs SET lease_owner = NULL,
           lease_until = now() + $1::integer * interval '1 second',
           attempts = greatest(attempts - 1, 0)
         WHERE org_id = $2 AND experiment_id = $3 AND lease_owner = $4`,
        [delaySeconds, job.orgId, job.experimentId, owner],
      );
    },
  };
}

/** The conditions of a claim's `select`, as SQL after the others (parameters from `$first`). */
function selection(
  select: AnalysisJobSelection,
  first: number,
): { sql: string; params: unknown[] } {
  const conditions: string[] = [];
  const params: unknown[] = [];
  const param = (value: unknown) => {
    params.push(value);
    return `$${first + params.length - 1}`;
  };
  if (select.maxBytes !== undefined) conditions.push(`size_bytes <= ${param(select.maxBytes)}`);
  if (select.overBytes !== undefined) conditions.push(`size_bytes > ${param(select.overBytes)}`);
  if (select.offeredAgoMs !== undefined) {
    conditions.push(
      `offered_at <= now() - ${param(select.offeredAgoMs)}::integer * interval '1 millisecond'`,
    );
  }
  if (select.upgrades === "exclude") conditions.push("source <> 'upgrade'");
  if (select.upgrades === "only") conditions.push("source = 'upgrade'");
  return { sql: conditions.map((c) => `\n                 AND ${c}`).join(""), params };
}
