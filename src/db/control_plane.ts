/**
 * The control plane: what the service keeps besides the datasets themselves (organizations, API
 * keys, settings, analysis results, signing secrets). One interface, two drivers: SQLite
 * (`sqlite/`, the embedded default for one host) and PostgreSQL (`postgres/`, several instances
 * sharing one bucket). Every method is asynchronous so both drivers fit; the SQLite driver answers
 * at once.
 *
 * What scale-out needs is part of the interface, so callers never ask which driver they hold:
 * `secrets` (shared by every instance of one database), `withTimerLock` (timer work on one
 * instance at a time) and the optional `jobs` (analysis jobs claimed with a lease; absent on
 * SQLite, where one process owns the database and the analysis queue lives in memory).
 *
 * A driver reports failures that pass with time or an operator's fix (a lock held too long, a
 * read-only or full disk, a database that cannot be reached) as `DatabaseUnavailable`: the HTTP
 * layer answers them 503 with `Retry-After`, background writers skip and retry later.
 */

export interface Org {
  id: string;
  name: string;
  active: boolean;
  created_at: string;
}

export interface ApiKeyInfo {
  key_id: string;
  org_id: string;
  /** The key's first characters (`abn_` + 6), to tell keys apart. */
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  active: boolean;
}

/** The organization behind a key hash, as authentication needs it. */
export interface KeyOwner {
  keyId: string;
  orgId: string;
  orgActive: boolean;
  revoked: boolean;
}

export type AnalysisStatus = "pending" | "ready" | "failed";

/** One analysis result per (organization, experiment), keyed by the stored object's ETag. */
export interface AnalysisRow {
  org_id: string;
  experiment_id: string;
  etag: string;
  size_bytes: number;
  status: AnalysisStatus;
  error: string | null;
  rows: number | null;
  /** The analysis JSON, as text. */
  result: string | null;
  delivered_at: string;
  started_at: string | null;
  finished_at: string | null;
}

/** A finished analysis run. */
export interface AnalysisOutcome {
  status: "ready" | "failed";
  error: string | null;
  rows: number | null;
  result: unknown;
}

export interface OrgRepo {
  /** Throws `RangeError` for a name that is empty or longer than 200 characters. */
  create(name: string): Promise<Org>;
  get(id: string): Promise<Org | null>;
  /** The oldest organization of that name. */
  findByName(name: string): Promise<Org | null>;
  list(): Promise<Org[]>;
  /** False when there is no such organization. */
  setActive(id: string, active: boolean): Promise<boolean>;
}

export interface KeyRepo {
  /** Stores the hash of a new key and answers the key, shown once. */
  create(orgId: string): Promise<{ api_key: string; info: ApiKeyInfo }>;
  list(orgId: string): Promise<ApiKeyInfo[]>;
  /** False when there is no such key. */
  revoke(keyId: string): Promise<boolean>;
  ownerByHash(hash: string): Promise<KeyOwner | null>;
  /** Records when keys were last used (ISO times), in one write. */
  touch(lastUsed: ReadonlyMap<string, string>): Promise<void>;
}

export interface SettingsRepo {
  get(orgId: string, experimentId: string): Promise<Record<string, unknown> | null>;
  /** Replaces the saved object. */
  save(orgId: string, experimentId: string, settings: Record<string, unknown>): Promise<void>;
}

export interface AnalysisRepo {
  get(orgId: string, experimentId: string): Promise<AnalysisRow | null>;
  /** The status of the analysis of the object with `etag`: `pending` until its result is saved. */
  status(orgId: string, experimentId: string, etag: string): Promise<AnalysisStatus>;
  /** Records that the object with `etag` awaits analysis (replacing an older delivery's result). */
  markPending(
    orgId: string,
    experimentId: string,
    etag: string,
    sizeBytes: number,
    deliveredAt: string,
  ): Promise<void>;
  /**
   * Saves a finished run, unless a newer delivery replaced the object meanwhile (false then, or
   * when the database cannot be written: the row stays `pending` and the scan runs it again).
   */
  saveResult(
    orgId: string,
    experimentId: string,
    etag: string,
    outcome: AnalysisOutcome,
    startedAt: string,
  ): Promise<boolean>;
  delete(orgId: string, experimentId: string): Promise<void>;
  /** `org/experiment` → ETag of every analysis row. */
  etags(): Promise<Map<string, string>>;
  /** `org/experiment` of every row still pending. */
  pending(): Promise<Set<string>>;
}

export interface SecretRepo {
  /**
   * The secret called `name`, stored on first use (`initial`, else 32 random bytes): every
   * instance sharing the database gets the same bytes.
   */
  getOrCreate(name: string, initial?: Uint8Array): Promise<Uint8Array>;
  /** The secret called `name`, or null when none was made yet. */
  get(name: string): Promise<Uint8Array | null>;
}

/** What a delivery offers the shared analysis queue. */
export interface AnalysisJobOffer {
  orgId: string;
  experimentId: string;
  /** The dataset's storage key. */
  key: string;
  etag: string;
  sizeBytes: number;
  /** ISO time the object was stored. */
  deliveredAt: string;
  /** True when the bytes were validated on the way in (direct upload). */
  validated: boolean;
  /** How the delivery was noticed; `settings` asks for one more run of the same object. */
  source: "upload" | "presigned_put" | "scan" | "event" | "settings";
}

/** A claimed analysis job: the newest delivery of one dataset. */
export interface AnalysisJob extends AnalysisJobOffer {
  /** Grows with every offer that changes the job; `complete` compares it. */
  generation: number;
  /** Claims so far, this one included (postponed claims do not count). */
  attempts: number;
}

/**
 * Analysis jobs shared by every instance: one row per dataset, claimed with a lease that the
 * running instance renews; a lease that runs out (the instance died) makes the job claimable
 * again.
 */
export interface AnalysisJobRepo {
  /**
   * Records that a delivery awaits analysis. The object already offered joins that job (nothing
   * changes) unless the source is `settings`, which queues one more run; another object replaces
   * the job's (newest wins) and is run after the current run, if any, finished.
   */
  offer(job: AnalysisJobOffer): Promise<void>;
  /**
   * Claims up to `limit` jobs for `leaseSeconds`, oldest offer first: jobs nobody holds, and
   * jobs `owner` holds but does not run (`running` lists the `org/experiment` it runs): a claim
   * or a release whose answer was lost in a database outage is taken back at once instead of
   * waiting for its lease to run out.
   */
  claim(
    owner: string,
    leaseSeconds: number,
    limit: number,
    running?: readonly string[],
  ): Promise<AnalysisJob[]>;
  /** Extends the lease; false when `owner` no longer holds the job. */
  renew(owner: string, job: AnalysisJob, leaseSeconds: number): Promise<boolean>;
  /**
   * Ends a run: the job is removed, unless an offer changed it meanwhile; then it is released, to
   * be claimed again at once.
   */
  complete(owner: string, job: AnalysisJob): Promise<void>;
  /** Releases the job after a transient failure, claimable again in `delaySeconds`. */
  postpone(owner: string, job: AnalysisJob, delaySeconds: number): Promise<void>;
}

export interface ControlPlane {
  readonly driver: "sqlite" | "postgres";
  readonly orgs: OrgRepo;
  readonly keys: KeyRepo;
  readonly settings: SettingsRepo;
  readonly analyses: AnalysisRepo;
  /** Secrets that sign list cursors and local upload URLs. */
  readonly secrets: SecretRepo;
  /** Analysis jobs claimed with a lease, when several instances share the database. */
  readonly jobs?: AnalysisJobRepo;
  /**
   * Runs `fn` while this instance holds the lock `name`, so that timer work runs on one instance
   * at a time; answers undefined without running `fn` when another instance holds it.
   */
  withTimerLock<T>(name: string, fn: () => Promise<T>): Promise<T | undefined>;
  /** True when the database answers a trivial query. */
  reachable(): Promise<boolean>;
  close(): Promise<void>;
}

/** A failure that passes with time or an operator's fix; answered 503 with `Retry-After`. */
export class DatabaseUnavailable extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "DatabaseUnavailable";
  }
}

/**
 * The database cannot be used at all (unreachable at start-up, a wrong password, no such
 * database, missing permissions): start-up stops with this one line, which never holds a
 * password.
 */
export class DatabaseOpenError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "DatabaseOpenError";
  }
}

/** Current time as an ISO-8601 string, the format every timestamp column uses. */
export function nowIso(): string {
  return new Date().toISOString();
}
