/**
 * Reconciliation: one full listing of storage, page by page with the store's own cursor, compared
 * with the catalog rows of the same key range. It adds objects written by anyone else (and
 * delivers them to the analysis), replaces rows of objects changed behind the service's back and
 * removes rows of objects deleted behind it. It runs at start-up and then rarely
 * (`ABN_RECONCILE_INTERVAL_SECONDS`): deliveries through the service, grants and bucket events
 * keep the catalog current in between.
 *
 * A row observed after a page was listed is left alone (a commit made while the listing ran is
 * newer than what the listing saw), so reconciliation never undoes a delivery.
 */
import type { ControlPlane, DatasetRow } from "../db/control_plane.ts";
import { nowIso } from "../db/control_plane.ts";
import type { Delivery, DeliveryHub } from "../deliveries.ts";
import type { ObjectStore } from "../storage/object_store.ts";
import { parseDatasetKey } from "../storage/object_store.ts";

/** Objects per listing page (the most S3 answers). */
const PAGE = 1000;

export interface ReconcileDeps {
  store: ObjectStore;
  db: ControlPlane;
  deliveries: DeliveryHub;
  /** Objects per listing page; default 1000 (the most S3 answers). */
  pageSize?: number;
}

export interface ReconcileResult {
  /** Dataset objects listed. */
  listed: number;
  /** Rows added or replaced (objects the catalog did not know as they are). */
  delivered: number;
  /** Rows removed (objects no longer in storage). */
  removed: number;
}

/** Catalog rows with keys in (`after`, `through`] (`through` null: to the end), in key order. */
async function* catalogRange(
  db: ControlPlane,
  after: string,
  through: string | null,
): AsyncGenerator<DatasetRow> {
  let from = after;
  for (;;) {
    const rows = await db.datasets.keyRange(from, through, PAGE);
    yield* rows;
    if (rows.length < PAGE) return;
    from = rows[rows.length - 1].key;
  }
}

export async function reconcile(deps: ReconcileDeps): Promise<ReconcileResult> {
  const { store, db, deliveries } = deps;
  const limit = deps.pageSize ?? PAGE;
  const result: ReconcileResult = { listed: 0, delivered: 0, removed: 0 };
  let cursor: string | null = null;
  let after = "";
  do {
    const listedAt = nowIso();
    const page = await store.list("org/", { limit, cursor });
    cursor = page.nextCursor;
    // The key range this page answers for: after the previous one, through its last key (or to
    // the end on the last page).
    const last = page.objects.at(-1)?.key ?? after;
    const through = cursor === null ? null : last;
    const listed = new Map<string, Delivery>();
    for (const info of page.objects) {
      const target = parseDatasetKey(info.key);
      if (!target) continue;
      listed.set(info.key, {
        ...target,
        key: info.key,
        info,
        validated: false,
        source: "reconcile",
      });
    }
    result.listed += listed.size;
    const changed: Delivery[] = [];
    const removals: Promise<boolean>[] = [];
    const known = new Set<string>();
    for await (const row of catalogRange(db, after, through)) {
      known.add(row.key);
      const delivery = listed.get(row.key);
      if (delivery === undefined) {
        removals.push(db.datasets.remove(row.org_id, row.experiment_id, listedAt));
      } else if (delivery.info.etag !== row.etag || delivery.info.size !== row.size_bytes) {
        changed.push(delivery);
      }
    }
    for (const [key, delivery] of listed) if (!known.has(key)) changed.push(delivery);
    await deliveries.deliverAll(changed, listedAt);
    result.delivered += changed.length;
    result.removed += (await Promise.all(removals)).filter(Boolean).length;
    after = last;
  } while (cursor !== null);
  return result;
}
