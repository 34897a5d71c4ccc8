/**
 * The control plane over a dialect: every repository once, whichever engine runs it. The
 * engines (`../sqlite/sqlite_control_plane.ts`, `../postgres/postgres_control_plane.ts`) add how
 * they open, migrate and keep their secrets.
 */
import type { ControlPlane } from "../control_plane.ts";
import type { Dialect } from "../dialect.ts";
import { orgRepo } from "./orgs.ts";
import { keyRepo } from "./keys.ts";
import { settingsRepo } from "./settings.ts";
import { analysisRepo } from "./analyses.ts";
import { catalogRepo } from "./catalog.ts";
import { grantRepo } from "./grants.ts";
import { historyRepo } from "./history.ts";
import { summaryRepo } from "./summaries.ts";
import { jobRepo } from "./jobs.ts";
import type { SecretRepo } from "./secrets.ts";
import { auditRepo } from "./audit.ts";
import { webhookRepo } from "./webhooks.ts";
import { WebhookOutbox } from "./webhook_outbox.ts";

export interface SqlControlPlaneOptions {
  /** The service's external base URL, for the `links` of webhook events. */
  publicUrl?: string;
}

export class SqlControlPlane implements ControlPlane {
  readonly driver: Dialect["engine"];
  readonly orgs: ControlPlane["orgs"];
  readonly keys: ControlPlane["keys"];
  readonly settings: ControlPlane["settings"];
  readonly analyses: ControlPlane["analyses"];
  readonly datasets: ControlPlane["datasets"];
  readonly grants: ControlPlane["grants"];
  readonly history: ControlPlane["history"];
  readonly deliverySummaries: ControlPlane["deliverySummaries"];
  readonly jobs: ControlPlane["jobs"];
  readonly webhooks: ControlPlane["webhooks"];
  readonly secrets: SecretRepo;
  readonly audit: ControlPlane["audit"];
  readonly #sql: Dialect;

  constructor(sql: Dialect, secrets: SecretRepo, options: SqlControlPlaneOptions = {}) {
    this.#sql = sql;
    this.driver = sql.engine;
    const outbox = new WebhookOutbox(sql, { publicUrl: options.publicUrl });
    this.orgs = orgRepo(sql);
    this.keys = keyRepo(sql);
    this.settings = settingsRepo(sql);
    this.analyses = analysisRepo(sql, outbox);
    this.datasets = catalogRepo(sql, outbox);
    this.grants = grantRepo(sql);
    this.history = historyRepo(sql);
    this.deliverySummaries = summaryRepo(sql);
    this.jobs = jobRepo(sql);
    this.webhooks = webhookRepo(sql, outbox);
    this.secrets = secrets;
    this.audit = auditRepo(sql);
  }

  withTimerLock<T>(name: string, fn: () => Promise<T>): Promise<T | undefined> {
    return this.#sql.withLock(name, fn);
  }

  reachable(): Promise<boolean> {
    return this.#sql.reachable();
  }

  close(): Promise<void> {
    return this.#sql.close();
  }
}
