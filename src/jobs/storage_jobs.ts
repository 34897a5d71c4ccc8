/**
 * The embedded timer's jobs. Scan (every `ABN_SCAN_INTERVAL_SECONDS`): `head`s the keys of open
 * upload grants for two-step deliveries (`catalog/grant_scan.ts`) and offers the analysis again
 * the datasets whose analysis is still pending (a transient failure, a crash); its cost follows
 * open grants and pending analyses, not stored datasets. Clean-up: deletes datasets above the
 * size limit (read from the catalog, so none survives 6 hours; each deletion is audited), sweeps
 * leftovers of interrupted writes, forgets closed grants and deletes audit events past their
 * retention. Reconciliation (`catalog/reconcile.ts`) is the only job that lists storage. All are
 * idempotent, so several instances sharing one bucket stay correct.
 */
import type { ObjectStore } from "../storage/object_store.ts";
import type { DeliveryHub } from "../deliveries.ts";
import type { ControlPlane } from "../db/control_plane.ts";
import { nowIso } from "../db/control_plane.ts";
import type { Metrics } from "../metrics.ts";
import { scanGrants } from "../catalog/grant_scan.ts";
import { infoOfRow, openGrantsSince } from "../catalog/dataset_catalog.ts";
import type { AuditLog } from "../audit/audit_log.ts";

/** A pending analysis is offered again once its row is this old (its first run had its chance). */
const PENDING_GRACE_MS = 1_000;
/** Rows read per run by the scan and the clean-up. */
const BATCH = 1000;

export interface ScanDeps {
  store: ObjectStore;
  db: ControlPlane;
  deliveries: DeliveryHub;
  /** Where the two-step deliveries noticed are audited; default nowhere. */
  audit?: AuditLog;
  maxUploadBytes: number;
  /** Answers true when a delivery with this ETag is already queued or running here. */
  inFlight?: (orgId: string, experimentId: string, etag: string) => boolean;
}

/** Heads open grants, then offers pending analyses that nothing runs to the analysis again. */
export async function scanDeliveries(
  deps: ScanDeps,
): Promise<{ grants: number; noticed: number; retried: number }> {
  const { grants, noticed } = await scanGrants(deps);
  const before = new Date(Date.now() - PENDING_GRACE_MS).toISOString();
  let retried = 0;
  for (const row of await deps.db.datasets.pending(deps.maxUploadBytes, before, BATCH)) {
    if (deps.inFlight?.(row.org_id, row.experiment_id, row.etag)) continue;
    retried++;
    deps.deliveries.publish({
      orgId: row.org_id,
      experimentId: row.experiment_id,
      key: row.key,
      info: infoOfRow(row),
      validated: false,
      source: "scan",
    });
  }
  return { grants, noticed, retried };
}

export interface CleanupDeps {
  store: ObjectStore;
  db: ControlPlane;
  metrics: Metrics;
  maxUploadBytes: number;
  /** Where deletions are audited; default nowhere. */
  audit?: AuditLog;
  /** Audit events older than this many days are deleted; default none. */
  auditRetentionDays?: number;
}

const DAY_MS = 86_400_000;

/**
 * Deletes datasets above the limit (as the catalog lists them), sweeps temporaries and stale
 * multipart uploads, forgets grants closed for good and prunes the audit trail.
 */
export async function cleanup(
  deps: CleanupDeps,
): Promise<{ deleted: number; swept: number; grantsPruned: number; auditPruned: number }> {
  let deleted = 0;
  for (const row of await deps.db.datasets.larger(deps.maxUploadBytes, BATCH)) {
    // Look again right before deleting: a valid re-delivery may have replaced it since.
    const observedAt = nowIso();
    const now = await deps.store.head(row.key);
    if (now && (now.etag !== row.etag || now.size <= deps.maxUploadBytes)) continue;
    if (now) {
      await deps.store.delete(row.key);
      await deps.db.analyses.delete(row.org_id, row.experiment_id);
      await deps.db.history.delete(row.org_id, row.experiment_id);
      await deps.db.deliverySummaries.delete(row.org_id, row.experiment_id);
      deleted++;
      deps.metrics.cleanupDeletions.inc();
      deps.audit?.record({
        orgId: row.org_id,
        action: "dataset.deleted",
        experimentId: row.experiment_id,
        details: { reason: "over_limit", size_bytes: now.size, etag: now.etag },
      });
    }
    await deps.db.datasets.remove(row.org_id, row.experiment_id, observedAt);
  }
  const swept = await deps.store.sweep();
  const grantsPruned = await deps.db.grants.prune(openGrantsSince());
  const auditPruned = deps.auditRetentionDays === undefined ? 0 : await deps.db.audit.prune(
    new Date(Date.now() - deps.auditRetentionDays * DAY_MS).toISOString(),
  );
  return { deleted, swept, grantsPruned, auditPruned };
}

/** Counts stored datasets above the limit, as the catalog knows them (start-up warns). */
export async function countOversize(db: ControlPlane, maxUploadBytes: number): Promise<number> {
  return (await db.datasets.larger(maxUploadBytes, BATCH)).length;
}
