/**
 * The post-delivery hook: every route that stores a dataset (direct upload, the local upload URL)
 * and everything that notices one in storage (the scan of open grants, bucket notifications,
 * reconciliation, a head made by a request) delivers it here: the catalog records it, then the
 * listeners (the analysis) hear of it. Deliveries are events at commit, not found by polling.
 */
import type { ObjectInfo } from "./storage/object_store.ts";
import { parseDatasetKey } from "./storage/object_store.ts";
import type { Logger } from "./log.ts";
import type { ControlPlane, DeliverySource } from "./db/control_plane.ts";
import { nowIso } from "./db/control_plane.ts";

export interface Delivery {
  orgId: string;
  experimentId: string;
  key: string;
  info: ObjectInfo;
  /** True when the bytes were validated on the way in (direct upload). */
  validated: boolean;
  /** SHA-256 of the bytes (hex) when known on the way in (direct upload). */
  sha256?: string;
  /**
   * Whether the checks on the way in found dimension columns (text in a cell, or no value at
   * all; direct upload): false lets the analysis keep no dimension values. Unknown: undefined.
   */
  hasDimensions?: boolean;
  /**
   * How the delivery was noticed; `upgrade`: a ready result made by an older analysis, run again
   * in the background.
   */
  source: DeliverySource;
}

export type DeliveryListener = (delivery: Delivery) => void;

/** Where delivered objects are recorded (the dataset catalog, `catalog/dataset_catalog.ts`). */
export interface DeliveryRecorder {
  /**
   * Records the objects as observed at `observedAt` (`committed`: just written by this process);
   * logs a failure instead of throwing.
   */
  record(infos: readonly ObjectInfo[], observedAt: string, committed?: boolean): Promise<unknown>;
}

export interface DeliveryHubOptions {
  log: Logger;
  /** Records delivered objects; without it deliveries are only announced (tests). */
  catalog?: DeliveryRecorder;
  /** Where `notice` compares with the catalog; needed with `catalog`. */
  db?: ControlPlane;
}

export class DeliveryHub {
  #listeners: DeliveryListener[] = [];
  readonly #log: Logger;
  readonly #catalog: DeliveryRecorder | undefined;
  readonly #db: ControlPlane | undefined;

  constructor(options: DeliveryHubOptions) {
    this.#log = options.log;
    this.#catalog = options.catalog;
    this.#db = options.db;
  }

  subscribe(listener: DeliveryListener): () => void {
    this.#listeners.push(listener);
    return () => {
      this.#listeners = this.#listeners.filter((l) => l !== listener);
    };
  }

  /**
   * A stored object: records it in the catalog (awaited, so that an answer given after this
   * carries a durable row; a failure is logged, never thrown), then announces it.
   */
  async deliver(delivery: Delivery, observedAt: string = nowIso()): Promise<void> {
    const committed = delivery.source === "upload" || delivery.source === "presigned_put";
    await this.#catalog?.record([delivery.info], observedAt, committed);
    this.publish(delivery);
  }

  /** Several stored objects (reconciliation): one catalog write, then one announcement each. */
  async deliverAll(deliveries: readonly Delivery[], observedAt: string): Promise<void> {
    if (deliveries.length === 0) return;
    await this.#catalog?.record(deliveries.map((d) => d.info), observedAt);
    for (const delivery of deliveries) this.publish(delivery);
  }

  /**
   * An object seen in storage (a head): delivered when the catalog has no row for it or one of
   * another object; answers whether it was.
   */
  async notice(
    info: ObjectInfo,
    observedAt: string,
    source: Delivery["source"],
  ): Promise<boolean> {
    const target = parseDatasetKey(info.key);
    if (!target) return false;
    const row = await this.#db?.datasets.get(target.orgId, target.experimentId);
    if (row && row.etag === info.etag && row.size_bytes === info.size) return false;
    await this.deliver({ ...target, key: info.key, info, validated: false, source }, observedAt);
    return true;
  }

  /** Announces a delivery (calls every listener); a listener's failure never reaches the caller. */
  publish(delivery: Delivery): void {
    for (const listener of this.#listeners) {
      try {
        listener(delivery);
      } catch (error) {
        this.#log.error("delivery listener failed", { error: String(error) });
      }
    }
  }
}
