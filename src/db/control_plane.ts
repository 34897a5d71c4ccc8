/**
 * The control plane: what the service keeps besides the datasets themselves (organizations, API
 * keys, settings, analysis results, the dataset catalog and upload grants, each experiment's
 * history of snapshots and the summary of its previous delivery, analysis jobs, webhook
 * endpoints and their outbox, signing secrets, the audit trail). One interface; each repository is written once (`repos/`) over a small dialect
 * (`dialect.ts`) with two engines: SQLite (`sqlite/`, the embedded default for one host) and
 * PostgreSQL (`postgres/`, several instances sharing one bucket). Every method is asynchronous
 * so both fit; SQLite answers at once.
 *
 * What scale-out needs is part of the interface, so callers never ask which engine they hold:
 * `secrets` (shared by every instance of one database), `withTimerLock` (timer work on one
 * instance at a time) and `jobs` (analysis jobs claimed with a lease; on one host the lease is
 * simply held).
 *
 * An engine reports failures that pass with time or an operator's fix (a lock held too long, a
 * read-only or full disk, a database that cannot be reached) as `DatabaseUnavailable`: the HTTP
 * layer answers them 503 with `Retry-After`, background writers skip and retry later.
 */
import type { OrgRepo } from "./repos/orgs.ts";
import type { KeyRepo } from "./repos/keys.ts";
import type { SettingsRepo } from "./repos/settings.ts";
import type { AnalysisRepo } from "./repos/analyses.ts";
import type { DatasetRepo } from "./repos/catalog.ts";
import type { GrantRepo } from "./repos/grants.ts";
import type { HistoryRepo } from "./repos/history.ts";
import type { DeliverySummaryRepo } from "./repos/summaries.ts";
import type { AnalysisJobRepo } from "./repos/jobs.ts";
import type { SecretRepo } from "./repos/secrets.ts";
import type { AuditRepo } from "./repos/audit.ts";
import type { WebhookRepo } from "./repos/webhooks.ts";

export type { Org, OrgRepo } from "./repos/orgs.ts";
export type {
  ApiKeyInfo,
  CreatedKey,
  KeyOwner,
  KeyRepo,
  KeyStatus,
  NewKeyOptions,
  RevokeResult,
  RotateResult,
} from "./repos/keys.ts";
export type { SettingsRepo } from "./repos/settings.ts";
export type {
  AnalysisOutcome,
  AnalysisRepo,
  AnalysisRow,
  AnalysisStatus,
  OutdatedAnalysis,
  ResultHistory,
} from "./repos/analyses.ts";
export type { DatasetEntry, DatasetPageOptions, DatasetRepo, DatasetRow } from "./repos/catalog.ts";
export type { Grant, GrantRepo } from "./repos/grants.ts";
export type { HistoryRepo, HistorySnapshot, RecordOutcome } from "./repos/history.ts";
export type { DeliverySummaryRepo, DeliverySummaryRow } from "./repos/summaries.ts";
export type {
  AnalysisJob,
  AnalysisJobOffer,
  AnalysisJobRepo,
  AnalysisJobSelection,
  DeliverySource,
} from "./repos/jobs.ts";
export type { SecretRepo } from "./repos/secrets.ts";
export type {
  AuditAction,
  AuditEvent,
  AuditPageOptions,
  AuditPosition,
  AuditRepo,
} from "./repos/audit.ts";
export type {
  ClaimedDelivery,
  DeliveryState,
  DisabledEndpoint,
  EndpointChange,
  SettledAttempt,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookRepo,
} from "./repos/webhooks.ts";
export { DatabaseOpenError, DatabaseUnavailable, nowIso } from "./errors.ts";

export interface ControlPlane {
  readonly driver: "sqlite" | "postgres";
  readonly orgs: OrgRepo;
  readonly keys: KeyRepo;
  readonly settings: SettingsRepo;
  readonly analyses: AnalysisRepo;
  readonly datasets: DatasetRepo;
  readonly grants: GrantRepo;
  readonly history: HistoryRepo;
  readonly deliverySummaries: DeliverySummaryRepo;
  /** Analysis jobs, claimed with a lease (`analysis/queue.ts` runs them). */
  readonly jobs: AnalysisJobRepo;
  /** Webhook endpoints and the outbox of their deliveries (`jobs/webhook_sender.ts` sends). */
  readonly webhooks: WebhookRepo;
  /** Secrets that sign list cursors and local upload URLs. */
  readonly secrets: SecretRepo;
  /** The audit trail of each organization. */
  readonly audit: AuditRepo;
  /**
   * Runs `fn` while this instance holds the lock `name`, so that timer work runs on one instance
   * at a time; answers undefined without running `fn` when another instance holds it.
   */
  withTimerLock<T>(name: string, fn: () => Promise<T>): Promise<T | undefined>;
  /** True when the database answers a trivial query. */
  reachable(): Promise<boolean>;
  close(): Promise<void>;
}
