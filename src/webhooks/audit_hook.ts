/**
 * Where the webhook actions go in the audit trail: every state change of an endpoint
 * (`webhook.created`, `webhook.updated`, `webhook.deleted`, `webhook.enabled`,
 * `webhook.disabled`, `webhook.secret_rotated`) and the requests that send (`webhook.test_sent`,
 * `webhook.delivery_retried`). The routes and the sender call one `WebhookAudit`; the wiring
 * binds it to where the trail is kept. `auditLog` writes each event as an `audit` log line.
 *
 * @module
 */
import type { Logger } from "../log.ts";

/** The webhook actions of the audit trail. */
export type WebhookAuditAction =
  | "webhook.created"
  | "webhook.updated"
  | "webhook.deleted"
  | "webhook.enabled"
  | "webhook.disabled"
  | "webhook.secret_rotated"
  | "webhook.test_sent"
  | "webhook.delivery_retried";

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

/** A `WebhookAudit` that writes each event as one `audit` log line. */
export function auditLog(log: Logger): WebhookAudit {
  return {
    record: (event) => {
      log.info("audit", {
        org_id: event.orgId,
        key_id: event.keyId,
        action: event.action,
        details: event.details,
      });
      return Promise.resolve();
    },
  };
}
