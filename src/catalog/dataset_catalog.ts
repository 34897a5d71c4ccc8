/**
 * The dataset catalog as the service uses it: an index of storage in the control plane, so that
 * listing, showing and cleaning up datasets costs what is asked for, not what is stored. Storage
 * stays the source of truth: a stored object whose catalog write failed is logged, never turned
 * into an error, and the next reconciliation (`reconcile.ts`) restores its row; until the first
 * reconciliation after start-up has finished, the list reads storage (`ready`).
 */
import type { ControlPlane, DatasetEntry, DatasetRow } from "../db/control_plane.ts";
import { parseDatasetKey } from "../storage/object_store.ts";
import type { Logger } from "../log.ts";
import { describeError } from "../log.ts";
import type { ObjectInfo } from "../storage/object_store.ts";
import { GroupWrite } from "../group_write.ts";

/**
 * How long an upload grant stays open after its URL expired: storage checks the signature when
 * a PUT starts, so a slow PUT (or a clock ahead of storage's) may end later.
 */
export const GRANT_MARGIN_MS = 30 * 60 * 1000;

/** The catalog entry of a stored dataset object; null for a key that is not a dataset's. */
export function entryOf(
  info: ObjectInfo,
  observedAt: string,
  committed = false,
): DatasetEntry | null {
  const target = parseDatasetKey(info.key);
  if (!target) return null;
  return {
    org_id: target.orgId,
    experiment_id: target.experimentId,
    key: info.key,
    size_bytes: info.size,
    etag: info.etag,
    delivered_at: info.lastModified.toISOString(),
    observed_at: observedAt,
    ...(committed ? { committed } : {}),
  };
}

/** The stored object a catalog row describes, as the store would answer a `head` of it. */
export function infoOfRow(row: DatasetRow): ObjectInfo {
  return {
    key: row.key,
    size: row.size_bytes,
    etag: row.etag,
    lastModified: new Date(row.delivered_at),
  };
}

/** The earliest expiry of a grant that is still open at `now` (ISO). */
export function openGrantsSince(now = Date.now()): string {
  return new Date(now - GRANT_MARGIN_MS).toISOString();
}

export interface DatasetCatalogOptions {
  db: ControlPlane;
  log: Logger;
}

export class DatasetCatalog {
  readonly #db: ControlPlane;
  readonly #log: Logger;
  #ready = false;

  constructor(options: DatasetCatalogOptions) {
    this.#db = options.db;
    this.#log = options.log;
  }

  /** True once a reconciliation has finished since start-up: the catalog is complete. */
  get ready(): boolean {
    return this.#ready;
  }

  /** Called when a reconciliation finished. */
  markReady(): void {
    this.#ready = true;
  }

  /**
   * Records objects seen in storage at `observedAt` (`committed`: written by this process just
   * now, see `DatasetEntry.committed`). A failure is logged and answered false,
   * never thrown: the objects are stored, and reconciliation repairs the rows.
   *
   * One write is under way at a time; records that arrive meanwhile wait and go together in the
   * next one (a group commit: with PostgreSQL, concurrent tiny uploads would otherwise each pay a
   * round trip and queue on the same rows' locks). Each caller's promise resolves once the write
   * holding its entries is done.
   */
  record(infos: readonly ObjectInfo[], observedAt: string, committed = false): Promise<boolean> {
    const entries = infos.flatMap((info) => entryOf(info, observedAt, committed) ?? []);
    if (entries.length === 0) return Promise.resolve(true);
    return this.#writes.add(...entries).then(() => true, () => false);
  }

  readonly #writes = new GroupWrite<DatasetEntry>(async (entries) => {
    try {
      await this.#db.datasets.put(entries);
    } catch (error) {
      this.#log.error("catalog not updated; the next reconciliation repairs it", {
        keys: entries.slice(0, 5).map((e) => e.key),
        count: entries.length,
        error: describeError(error),
      });
      throw error;
    }
  });
}
