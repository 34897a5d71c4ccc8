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
 * Per request this costs memory reads: the quota is read once a second per organization, the
 * usage once per `refreshMs` (one sum over the organization's catalog rows) and kept up to date
 * in between by the uploads this process stores; a deletion or a dataset noticed in storage
 * (`forget`) makes the next request read it again. Only with a quota is the size of the
 * dataset an upload replaces read (one catalog row).
 *
 * @module
 */
import { ServiceError } from "../errors.ts";
import { megabytes } from "../http/errors.ts";
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
}

function bytesText(bytes: number): string {
  return bytes >= 1048576 ? `${bytes} bytes (${megabytes(bytes, 1)} MB)` : `${bytes} bytes`;
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
    const [usage, current] = await Promise.all([
      this.#usageOf(orgId),
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
    return this.#hold(orgId, quota, usage, current, declaredBytes === null, growth);
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
    const usage = await this.#usageOf(target.orgId);
    const current = sizeBytes === undefined ? 0 : await this.#currentSize(target);
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

  async #usageOf(orgId: string): Promise<Usage> {
    let usage = this.#usage.get(orgId);
    if (usage && performance.now() - usage.readAt < this.#refreshMs) return usage;
    if (!usage) {
      usage = { bytes: 0, readAt: -Infinity, loading: null, since: 0 };
      this.#usage.set(orgId, usage);
    }
    usage.loading ??= this.#read(orgId, usage);
    await usage.loading;
    return usage;
  }

  async #read(orgId: string, usage: Usage): Promise<void> {
    const readAt = performance.now();
    usage.since = 0;
    try {
      const bytes = await this.#db.datasets.storedBytes(orgId);
      // An upload stored while the sum was read may or may not be in it: counted once more.
      usage.bytes = bytes + usage.since;
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

  #hold(
    orgId: string,
    quota: number,
    usage: Usage,
    current: number,
    chunked: boolean,
    growth: number,
  ): QuotaHold {
    let reserved = Math.max(0, growth);
    this.#reserve(orgId, reserved);
    const release = () => {
      this.#reserve(orgId, -reserved);
      reserved = 0;
    };
    return {
      see: (total) => {
        const grown = total - current;
        if (!chunked || grown <= reserved) return;
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
        usage.bytes += bytes - current;
        if (usage.loading) usage.since += bytes - current;
        release();
      },
      release,
    };
  }
}
