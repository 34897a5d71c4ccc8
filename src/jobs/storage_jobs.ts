/**
 * The embedded timer's two jobs. Scan: notices new or changed datasets (by ETag) that arrived by
 * the two-step route and hands them to the post-delivery hook. Clean-up: deletes datasets above
 * the size limit (so none survives 6 hours) and sweeps leftovers of interrupted writes.
 * Both are idempotent, so several instances sharing one bucket stay correct.
 */
import type { ObjectInfo, ObjectStore } from "../storage/object_store.ts";
import type { DeliveryHub } from "../deliveries.ts";
import { parseDatasetKey } from "../deliveries.ts";
import type { ControlPlane } from "../db/control_plane.ts";
import type { Metrics } from "../metrics.ts";

/** Every stored dataset object, page by page. */
export async function* allDatasets(store: ObjectStore): AsyncGenerator<ObjectInfo> {
  let cursor: string | null = null;
  do {
    const page = await store.list("org/", { limit: 1000, cursor });
    for (const info of page.objects) if (parseDatasetKey(info.key)) yield info;
    cursor = page.nextCursor;
  } while (cursor);
}

export interface ScanDeps {
  store: ObjectStore;
  db: ControlPlane;
  deliveries: DeliveryHub;
  maxUploadBytes: number;
  /** Answers true when a delivery with this ETag is already queued or running here. */
  inFlight?: (orgId: string, experimentId: string, etag: string) => boolean;
}

/** Publishes every dataset whose ETag has no analysis yet (or only a pending one not running). */
export async function scanDeliveries(deps: ScanDeps): Promise<{ noticed: number }> {
  const known = await deps.db.analyses.etags();
  const pending = await deps.db.analyses.pending();
  let noticed = 0;
  for await (const info of allDatasets(deps.store)) {
    if (info.size > deps.maxUploadBytes) continue;
    const { orgId, experimentId } = parseDatasetKey(info.key)!;
    const id = `${orgId}/${experimentId}`;
    const etag = known.get(id);
    const stale = etag !== info.etag;
    const stuck = !stale && pending.has(id) && !(deps.inFlight?.(orgId, experimentId, info.etag));
    if (!stale && !stuck) continue;
    noticed++;
    deps.deliveries.publish({
      orgId,
      experimentId,
      key: info.key,
      info,
      validated: false,
      source: "scan",
    });
  }
  return { noticed };
}

export interface CleanupDeps {
  store: ObjectStore;
  db: ControlPlane;
  metrics: Metrics;
  maxUploadBytes: number;
}

/** Deletes datasets above the limit and sweeps temporaries / stale multipart uploads. */
export async function cleanup(deps: CleanupDeps): Promise<{ deleted: number; swept: number }> {
  let deleted = 0;
  for await (const info of allDatasets(deps.store)) {
    if (info.size <= deps.maxUploadBytes) continue;
    // Look again right before deleting: a valid re-delivery may have replaced it since the listing.
    const now = await deps.store.head(info.key);
    if (!now || now.etag !== info.etag || now.size <= deps.maxUploadBytes) continue;
    await deps.store.delete(info.key);
    const { orgId, experimentId } = parseDatasetKey(info.key)!;
    await deps.db.analyses.delete(orgId, experimentId);
    deleted++;
    deps.metrics.cleanupDeletions.inc();
  }
  const swept = await deps.store.sweep();
  return { deleted, swept };
}

/** Counts stored datasets above the limit (start-up warns about them). */
export async function countOversize(store: ObjectStore, maxUploadBytes: number): Promise<number> {
  let n = 0;
  for await (const info of allDatasets(store)) if (info.size > maxUploadBytes) n++;
  return n;
}
