/**
 * Where the webhook actions go in the audit trail: every state change of an endpoint
 * (`webhook.created`, `webhook.updated`, `webhook.deleted`, `webhook.enabled`,
 * `webhook.disabled`, `webhook.secret_rotated`) and the requests that send (`webhook.test_sent`,
 * `webhook.delivery_retried`). The routes and the sender call one `WebhookAudit`; the wiring
 * binds it to the audit trail (`auditTrail`).
 *
 * @module
 */
import type { AuditLog } from "../audit/audit_log.ts";
import type { AuditAction } from "../db/control_plane.ts";

/** The webhook actions of the audit trail. */
export type WebhookAuditAction = Extract<AuditAction, `webhook.${string}`>;

/** One audit event of a webhook endpoint. */
export interface WebhookAuditEvent {
  orgId: string;
  /** The key that asked; null when the service acted itself (a 410, 50 failures in a row). */
  keyId: string | null;
  action: WebhookAuditAction;
  /** `webhook_id` and what changed (never a secret). */
  details: Record<string, unknown>;
}

/** Records webhook audit events; a failure to record is the recorder's to log. */
export interface WebhookAudit {
  record(event: WebhookAuditEvent): Promise<void>;
}

/** A `WebhookAudit` that writes each event to the organization's audit trail. */
export function auditTrail(audit: AuditLog): WebhookAudit {
  return {
    record: async (event) => {
      await audit.write({
        orgId: event.orgId,
        keyId: event.keyId,
        action: event.action,
        details: event.details,
      });
    },
  };
}
