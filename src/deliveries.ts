/**
 * The post-delivery hook: every route that stores a dataset (direct upload, the local upload URL,
 * the timer's scan, bucket notifications) announces it here; the analysis subscribes.
 */
import type { ObjectInfo } from "./storage/object_store.ts";
import type { Logger } from "./log.ts";

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
   * How the delivery was noticed; `upgrade`: a ready result made by an older analysis, run again
   * in the background.
   */
  source: "upload" | "presigned_put" | "scan" | "event" | "settings" | "upgrade";
}

export type DeliveryListener = (delivery: Delivery) => void;

export class DeliveryHub {
  #listeners: DeliveryListener[] = [];
  readonly #log: Logger;

  constructor(log: Logger) {
    this.#log = log;
  }

  subscribe(listener: DeliveryListener): () => void {
    this.#listeners.push(listener);
    return () => {
      this.#listeners = this.#listeners.filter((l) => l !== listener);
    };
  }

  /** Calls every listener; a listener's failure never reaches the delivering request. */
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

/** Parses `org/{org}/experiments/{id}/latest.csv`; null for any other key. */
export function parseDatasetKey(key: string): { orgId: string; experimentId: string } | null {
  const m = /^org\/([^/]+)\/experiments\/([A-Za-z0-9._-]{1,128})\/latest\.csv$/.exec(key);
  return m ? { orgId: m[1], experimentId: m[2] } : null;
}
