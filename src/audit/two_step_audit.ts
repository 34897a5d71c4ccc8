/**
 * The audit event of a two-step delivery that bypassed this process (S3: the PUT goes straight
 * to storage), recorded where it is noticed: the scan of open grants, a request's look at an open
 * grant, a bucket notification. It is `dataset.delivered` with `route: "two_step"` and the key
 * that asked for the latest grant of its storage key, when that grant is recorded. Deliveries
 * found only by reconciliation (a repair) are not audited.
 */
import type { ControlPlane, Grant } from "../db/control_plane.ts";
import type { Logger } from "../log.ts";
import { describeError } from "../log.ts";
import type { ObjectInfo } from "../storage/object_store.ts";
import { sha256Hex } from "../crypto/sha256.ts";
import { toBase62 } from "../db/ids.ts";
import type { AuditLog } from "./audit_log.ts";

/** A noticed object and where it belongs. */
export interface NoticedDelivery {
  orgId: string;
  experimentId: string;
  info: ObjectInfo;
}

/**
 * The event id of a stored object's delivery, the same on every instance that notices it: `evt_`,
 * the object's last-modified time in base62 (ids sort by it, as other events' by their own
 * time), then 12 hex digits of the SHA-256 of its key and ETag. The trail keeps one event of an
 * id (a unique index on the organization and id), so two instances noticing one object together
 * record one event.
 */
export function twoStepEventId(info: ObjectInfo): string {
  const digest = sha256Hex(`${info.key}\n${info.etag}`).slice(0, 12);
  return `evt_${toBase62(Math.max(0, info.lastModified.getTime()), 8)}${digest}`;
}

/**
 * Records the delivery, naming the key of `grant` (its storage key's latest grant) if any. One
 * object noticed twice (the scan of open grants and a request's look at the same grant, here or
 * on another instance) is one event: both carry its id.
 */
export function auditTwoStep(
  audit: AuditLog,
  delivery: NoticedDelivery,
  grant: Grant | null,
): void {
  audit.record({
    id: twoStepEventId(delivery.info),
    orgId: delivery.orgId,
    action: "dataset.delivered",
    keyId: grant?.key_id ?? null,
    experimentId: delivery.experimentId,
    details: { route: "two_step", size_bytes: delivery.info.size, etag: delivery.info.etag },
  });
}

/**
 * The stored grant of a storage key, open or not (the clean-up forgets closed ones), for a
 * caller that noticed a delivery without holding its grant; null when none or unreadable.
 */
export function storedGrant(db: ControlPlane, key: string, log: Logger): Promise<Grant | null> {
  return db.grants.get(key, new Date(0).toISOString()).catch((error) => {
    log.warn("the grant of a two-step delivery could not be read for its audit event", {
      key,
      error: describeError(error),
    });
    return null;
  });
}
