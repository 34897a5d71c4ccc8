/**
 * Storage quotas: the bytes an organization's datasets may take in storage (its
 * `orgs.quota_bytes`, else `ABN_ORG_QUOTA_BYTES`; neither: no limit). Its usage is the sum of
 * its datasets' `latest.csv` sizes in the catalog; a replacement counts only its growth (its
 * length less the size of the dataset it replaces), and an upload that does not grow the usage
 * always passes.
 *
 * - A body with a declared length is refused (403 `quota_exceeded`) before it is read when its
 *   growth would take the usage over the quota; a body without one at the byte that crosses it.
 * - While a body streams, its growth is reserved: uploads of one organization arriving together
 *   cannot jointly pass its quota on this instance. With several instances, each sees the
 *   others' stored uploads within `refreshMs` and not their uploads in flight.
 * - A grant (`POST /datasets/initiate/`) is refused while the usage is at or over the quota, or
 *   when its declared `size_bytes` would take it over.
 *
 * Per request the check reads memory: the quota once a second per organization, the usage (one
 * sum over its catalog rows) once per `refreshMs`, kept up to date by this process's uploads in
 * between; `forget` (a deletion, a dataset noticed in storage) makes the next request read it.
 * Only an upload near the quota, or without a declared length, reads the size of the dataset it
 * replaces, and a refusal is decided on a usage read again: a point read on every upload cost
 * more than the rest of the check (docs/performance.md, "Ideas tried").
 *
 * @module
 */
import { megabytes, ServiceError } from "../errors.ts";
import type { DatasetRepo, OrgRepo } from "../db/control_plane.ts";

/** What quotas read of the control plane. */
export interface QuotaDb {
  orgs: Pick<OrgRepo, "get">;
  datasets: Pick<DatasetRepo, "get" | "storedBytes">;
}

/** Options of `StorageQuotas`. */
export interface StorageQuotasOptions {
  db: QuotaDb;
  /** The quota of an organization without one of its own, in bytes; absent: none. */
  defaultQuotaBytes?: number;
  /** How long a usage read from the catalog is used before it is read again; default 10 000 ms. */
  refreshMs?: number;
  /** How long an organization's quota is used before it is read again; default 1 000 ms. */
  quotaCacheMs?: number;
}

/** An upload admitted under its organization's quota, while it streams. */
export interface QuotaHold {
  /** A body without a declared length has received `total` bytes: throws at the crossing. */
  see(total: number): void;
  /** The body was stored with `bytes`: its growth joins the usage and its reservation ends. */
  stored(bytes: number): void;
  /** Ends the reservation (safe after `stored`, and twice). */
  release(): void;
}

const NO_QUOTA: QuotaHold = { see() {}, stored() {}, release() {} };

/** An organization's usage as this process knows it. */
interface Usage {
  bytes: number;
  /** When it was read from the catalog (`performance.now()`); -Infinity: to be read again. */
  readAt: number;
  loading: Promise<void> | null;
  /** Growth stored while a read was under way (added to what it answers). */
  since: number;
  /**
   * False once it counts a stored upload whole that may have replaced a dataset (one admitted
   * without reading the size it replaces): then it may be above the catalog's sum, and is read
   * again before an upload is refused.
   */
  exact: boolean;
  /** Whether what `since` holds was exact. */
  sinceExact: boolean;
}

function bytesText(bytes: number): string {
  const text = `${bytes} byte${bytes === 1 ? "" : "s"}`;
  return bytes >= 1048576 ? `${text} (${megabytes(bytes, 1)} MB)` : text;
}

const WHAT_TO_DO =
  "delete datasets it no longer needs (DELETE /api/v1/datasets/{experiment_id}/) or ask the operator to raise its quota";

function takesText(quota: number, stored: number, inFlight: number): string {
  const arriving = inFlight > 0 ? `, and other uploads now arriving ${bytesText(inFlight)}` : "";
  return `the organization's datasets take ${bytesText(stored)} of its storage quota of ${
    bytesText(quota)
  }${arriving}`;
}

export class StorageQuotas {
  readonly #db: QuotaDb;
  readonly #default: number | null;
  readonly #refreshMs: number;
  readonly #quotaCacheMs: number;
  readonly #quotas = new Map<string, { quota: number | null; readAt: number }>();
  readonly #quotaReads = new Map<string, Promise<number | null>>();
  readonly #usage = new Map<string, Usage>();
  /** The growth reserved by each organization's uploads streaming now. */
  readonly #reserved = new Map<string, number>();

  constructor(options: StorageQuotasOptions) {
    this.#db = options.db;
    this.#default = options.defaultQuotaBytes ?? null;
    this.#refreshMs = options.refreshMs ?? 10_000;
    this.#quotaCacheMs = options.quotaCacheMs ?? 1_000;
  }

  /**
   * Admits an upload of `declaredBytes` (null: none declared) to an organization's experiment,
   * or throws 403 `quota_exceeded`; answers the hold to keep while its body streams.
   */
  async admit(
    target: { orgId: string; experimentId: string },
    declaredBytes: number | null,
  ): Promise<QuotaHold> {
    const { orgId } = target;
    const quota = await this.quotaOf(orgId);
    if (quota === null) return NO_QUOTA;
    const known = await this.#usageOf(orgId);
    if (
      declaredBytes !== null &&
      known.bytes + (this.#reserved.get(orgId) ?? 0) + declaredBytes <= quota
    ) {
      // It fits even as a new dataset: admitted without reading the size of the one it may
      // replace, and counted whole.
      return this.#hold(orgId, quota, known, null, declaredBytes);
    }
    const [usage, current] = await Promise.all([
      this.#usageOf(orgId, true),
      this.#currentSize(target),
    ]);
    // From here on nothing waits: the check and the reservation see the same figures.
    const growth = declaredBytes === null ? 0 : declaredBytes - current;
    const others = this.#reserved.get(orgId) ?? 0;
    if (growth > 0 && usage.bytes + others + growth > quota) {
      throw new ServiceError(
        "quota_exceeded",
        `Storage quota exceeded: ${takesText(quota, usage.bytes, others)}, and this upload of ${
          bytesText(declaredBytes!)
        } would add ${bytesText(growth)}; nothing was stored: ${WHAT_TO_DO}`,
      );
    }
    return this.#hold(orgId, quota, usage, current, Math.max(0, growth));
  }

  /**
   * Throws 403 `quota_exceeded` when an organization may not be granted an upload URL: its
   * usage is at or over its quota, or `sizeBytes` (when declared) would take it over.
   */
  async refuseGrant(
    target: { orgId: string; experimentId: string },
    sizeBytes?: number,
  ): Promise<void> {
    const quota = await this.quotaOf(target.orgId);
    if (quota === null) return;
    const known = await this.#usageOf(target.orgId);
    if (known.bytes + (this.#reserved.get(target.orgId) ?? 0) + (sizeBytes ?? 0) < quota) return;
    const [usage, current] = await Promise.all([
      this.#usageOf(target.orgId, true),
      sizeBytes === undefined ? 0 : this.#currentSize(target),
    ]);
    const others = this.#reserved.get(target.orgId) ?? 0;
    if (usage.bytes + others >= quota) {
      throw new ServiceError(
        "quota_exceeded",
        `Storage quota reached: ${
          takesText(quota, usage.bytes, others)
        }; no upload URL is granted until it is below: ${WHAT_TO_DO}`,
      );
    }
    const growth = sizeBytes === undefined ? 0 : sizeBytes - current;
    if (growth > 0 && usage.bytes + others + growth > quota) {
      throw new ServiceError(
        "quota_exceeded",
        `Storage quota exceeded: ${
          takesText(quota, usage.bytes, others)
        }, and size_bytes ${sizeBytes!} would add ${bytesText(growth)}: ${WHAT_TO_DO}`,
      );
    }
  }

  /** The organization's quota in bytes, or null when it has none (read at most once a second). */
  quotaOf(orgId: string): Promise<number | null> {
    const known = this.#quotas.get(orgId);
    if (known && performance.now() - known.readAt < this.#quotaCacheMs) {
      return Promise.resolve(known.quota);
    }
    let read = this.#quotaReads.get(orgId);
    if (!read) {
      const readAt = performance.now();
      read = this.#db.orgs.get(orgId).then((org) => {
        const quota = org?.quota_bytes ?? this.#default;
        this.#quotas.set(orgId, { quota, readAt });
        return quota;
      }).finally(() => this.#quotaReads.delete(orgId));
      this.#quotaReads.set(orgId, read);
    }
    return read;
  }

  /**
   * The organization's usage is to be read again from the catalog at its next upload (a dataset
   * was deleted, or one was noticed in storage).
   */
  forget(orgId: string): void {
    const usage = this.#usage.get(orgId);
    if (usage) usage.readAt = -Infinity;
  }

  async #currentSize(target: { orgId: string; experimentId: string }): Promise<number> {
    return (await this.#db.datasets.get(target.orgId, target.experimentId))?.size_bytes ?? 0;
  }

  /** The organization's usage, read again when older than `refreshMs` (or not `exact`). */
  async #usageOf(orgId: string, exact = false): Promise<Usage> {
    let usage = this.#usage.get(orgId);
    if (!usage) {
      usage = {
        bytes: 0,
        readAt: -Infinity,
        loading: null,
        since: 0,
        exact: true,
        sinceExact: true,
      };
      this.#usage.set(orgId, usage);
    }
    for (let reads = 0; reads < 2; reads++) {
      const fresh = performance.now() - usage.readAt < this.#refreshMs;
      if (fresh && (usage.exact || !exact)) break;
      usage.loading ??= this.#read(orgId, usage);
      await usage.loading;
    }
    return usage;
  }

  async #read(orgId: string, usage: Usage): Promise<void> {
    const readAt = performance.now();
    usage.since = 0;
    usage.sinceExact = true;
    try {
      const bytes = await this.#db.datasets.storedBytes(orgId);
      // An upload stored while the sum was read may or may not be in it: counted once more.
      usage.bytes = bytes + usage.since;
      usage.exact = usage.sinceExact;
      usage.readAt = readAt;
    } finally {
      usage.loading = null;
    }
  }

  #reserve(orgId: string, bytes: number): void {
    const total = (this.#reserved.get(orgId) ?? 0) + bytes;
    if (total === 0) this.#reserved.delete(orgId);
    else this.#reserved.set(orgId, total);
  }

  /**
   * The hold of an admitted upload reserving `reserve` bytes. `current`: the size of the dataset
   * it replaces (0: none); null when not read (a body with a declared length that fits whole).
   */
  #hold(
    orgId: string,
    quota: number,
    usage: Usage,
    current: number | null,
    reserve: number,
  ): QuotaHold {
    let reserved = reserve;
    this.#reserve(orgId, reserved);
    const release = () => {
      this.#reserve(orgId, -reserved);
      reserved = 0;
    };
    return {
      see: (total) => {
        if (current === null) return; // a declared length, admitted whole
        const grown = total - current;
        if (grown <= reserved) return;
        const others = (this.#reserved.get(orgId) ?? 0) - reserved;
        if (usage.bytes + others + grown > quota) {
          const crossing = Math.max(quota - usage.bytes - others + current, current) + 1;
          throw new ServiceError(
            "quota_exceeded",
            `Storage quota exceeded at byte ${crossing} of this upload: ${
              takesText(quota, usage.bytes, others)
            }; nothing was stored: ${WHAT_TO_DO}`,
          );
        }
        this.#reserve(orgId, grown - reserved);
        reserved = grown;
      },
      stored: (bytes) => {
        const growth = bytes - (current ?? 0);
        usage.bytes += growth;
        if (current === null) usage.exact = false;
        if (usage.loading) {
          usage.since += growth;
          if (current === null) usage.sinceExact = false;
        }
        release();
      },
      release,
    };
  }
}
