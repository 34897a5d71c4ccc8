/**
 * Notices two-step deliveries on S3: `head`s the key of every open upload grant (open until its
 * expiry plus `GRANT_MARGIN_MS`) and delivers what changed since the catalog last saw it. The cost
 * is one `head` per open grant, whatever is stored; with no open grant, one indexed query. Each
 * delivery noticed is audited with the key that asked for its grant.
 */
import type { ControlPlane, Grant } from "../db/control_plane.ts";
import type { DeliveryHub } from "../deliveries.ts";
import { nowIso } from "../db/control_plane.ts";
import type { ObjectStore } from "../storage/object_store.ts";
import { openGrantsSince } from "./dataset_catalog.ts";
import type { AuditLog } from "../audit/audit_log.ts";
import { auditTwoStep } from "../audit/two_step_audit.ts";

/** Heads under way at once. */
const HEADS_AT_ONCE = 8;

export interface GrantScanDeps {
  store: ObjectStore;
  db: ControlPlane;
  deliveries: DeliveryHub;
  /** Where the deliveries noticed are audited (with the key of their grant); default nowhere. */
  audit?: AuditLog;
}

/** Heads the keys of `grants` (a few at a time) and delivers new objects; answers how many. */
export async function headGrants(deps: GrantScanDeps, grants: readonly Grant[]): Promise<number> {
  let next = 0;
  let noticed = 0;
  const worker = async () => {
    while (next < grants.length) {
      const grant = grants[next++];
      const observedAt = nowIso();
      const info = await deps.store.head(grant.key);
      if (info && await deps.deliveries.notice(info, observedAt, "scan")) {
        noticed++;
        const target = { orgId: grant.org_id, experimentId: grant.experiment_id, info };
        if (deps.audit) auditTwoStep(deps.audit, target, grant);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(HEADS_AT_ONCE, grants.length) }, worker));
  return noticed;
}

/** One scan of the open grants (of every organization). */
export async function scanGrants(
  deps: GrantScanDeps,
): Promise<{ grants: number; noticed: number }> {
  const grants = await deps.db.grants.open(openGrantsSince());
  if (grants.length === 0) return { grants: 0, noticed: 0 };
  return { grants: grants.length, noticed: await headGrants(deps, grants) };
}
