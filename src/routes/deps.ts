/**
 * What the wiring hands the application and every route: typed fields, one per dependency, so a
 * route that needs something the wiring does not provide is a compile error.
 */
import type { Config } from "../config.ts";
import type { ControlPlane } from "../db/control_plane.ts";
import type { LastUsedRecorder } from "../db/api_keys.ts";
import type { DeliveryHub } from "../deliveries.ts";
import type { DatasetCatalog } from "../catalog/dataset_catalog.ts";
import type { GrantRecorder } from "../catalog/grant_recorder.ts";
import type { UrlSigner } from "../crypto/url_signer.ts";
import type { Access, Ctx, Handler, Route, RouteTable } from "../http/context.ts";
import type { RateLimiter } from "../http/rate_limiter.ts";
import type { AnalysisService } from "../analysis/analysis_service.ts";
import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics.ts";
import type { ObjectStore } from "../storage/object_store.ts";
import type { Uploads } from "../upload/upload.ts";
import type { AuditLog } from "../audit/audit_log.ts";
import type { StorageQuotas } from "../upload/quota.ts";
import type { WebhookAudit } from "../webhooks/audit_hook.ts";

export interface AppDeps {
  config: Readonly<Config>;
  db: ControlPlane;
  store: ObjectStore;
  metrics: Metrics;
  /** Records when keys were last used, in batches. */
  recorder: LastUsedRecorder;
  /** Records stored datasets in the catalog and announces them (the analysis listens). */
  deliveries: DeliveryHub;
  /** The dataset catalog (whether it is complete yet). */
  catalog: DatasetCatalog;
  /** Records upload grants (S3 only: local upload URLs are PUT through this process). */
  grants?: GrantRecorder;
  /** Signs local upload URLs and list cursors. */
  signer: UrlSigner;
  /** Receives datasets: direct uploads and local upload URLs. */
  uploads: Uploads;
  /** The organizations' storage quotas (uploads are admitted under them; grants checked). */
  quotas: StorageQuotas;
  /** The analyses of stored deliveries, as reads and settings changes need them. */
  analysis: AnalysisService;
  /** The audit trail, written in batches. */
  audit: AuditLog;
  /** Per-key request limit; absent: none. */
  rateLimiter?: RateLimiter;
  /** Where webhook actions are recorded for the audit trail. */
  webhookAudit: WebhookAudit;
  log: Logger;
}

export type AppCtx = Ctx<AppDeps>;
export type AppHandlerFn = Handler<AppDeps>;
export type AppRoutes = RouteTable<AppDeps>;

/** A route of the application (`Route`, typed for its dependencies). */
export function route(
  method: string,
  path: string,
  access: Access,
  handler: AppHandlerFn,
): Route<AppDeps> {
  return { method, path, access, handler };
}
