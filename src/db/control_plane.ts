/**
 * The control plane: what the service keeps besides the datasets themselves (organizations, API
 * keys, settings, analysis results, the dataset catalog and upload grants, each experiment's
 * history of snapshots and the summary of its previous delivery, signing secrets). One interface,
 * two drivers: SQLite (`sqlite/`, the embedded default for one host) and PostgreSQL (`postgres/`,
 * several instances sharing one bucket). Every method is asynchronous so both drivers fit; the
 * SQLite driver answers at once.
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
  /** `ANALYSIS_VERSION` of the run that made the result; null before it was recorded. */
  analysis_version: number | null;
}

/** A finished analysis run. */
export interface AnalysisOutcome {
  status: "ready" | "failed";
  error: string | null;
  rows: number | null;
  result: unknown;
  /** `ANALYSIS_VERSION` of the run; default null. */
  version?: number;
}

/**
 * The values a saved outcome writes, in the order both drivers' `UPDATE analyses SET status,
 * error, rows, result, started_at, finished_at, analysis_version` takes them.
 */
export function outcomeValues(
  outcome: AnalysisOutcome,
  startedAt: string,
): [string, string | null, number | null, string | null, string, string, number | null] {
  return [
    outcome.status,
    outcome.error,
    outcome.rows,
    outcome.result === null ? null : JSON.stringify(outcome.result),
    startedAt,
    nowIso(),
    outcome.version ?? null,
  ];
}

/** A ready analysis made by an older version of the analysis, to run again. */
export interface OutdatedAnalysis {
  org_id: string;
  experiment_id: string;
  etag: string;
  size_bytes: number;
  delivered_at: string;
}

/** One snapshot of an experiment's history, as stored. */
export interface HistorySnapshot {
  /** Its place in the experiment's history: 1, 2, … in the order they were kept. */
  seq: number;
  /** SHA-256 of the delivered content (hex): one snapshot per content. */
  sha256: string;
  etag: string;
  delivered_at: string;
  analysed_at: string;
  /** The snapshot's figures, a JSON object as text (`analysis/history/snapshot.ts`). */
  figures: string;
}

/** What `HistoryRepo.record` did with a snapshot. */
export type RecordOutcome = "added" | "replaced" | "unchanged";

/** What a ready result adds to its experiment's history (`AnalysisRepo.saveResult`). */
export interface ResultHistory {
  /** The delivery's summary, replacing the experiment's; null keeps the one saved (the same). */
  summary: DeliverySummaryRow | null;
  /** The snapshot, recorded as `HistoryRepo.record` does. */
  snapshot: Omit<HistorySnapshot, "seq">;
  /** Snapshots kept per experiment. */
  keep: number;
}

/** The summary of an experiment's last analysed delivery (what `changes` is computed from). */
export interface DeliverySummaryRow {
  etag: string;
  /** SHA-256 of the delivered content (hex). */
  sha256: string;
  delivered_at: string;
  /** The encoded summary (`analysis/history/delivery_summary.ts`). */
  summary: Uint8Array;
  /** The `changes` JSON (as text) the analysis of this delivery found; null on a first one. */
  changes: string | null;
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

/**
 * One stored dataset as the catalog knows it. The catalog is an index of storage, which stays
 * the source of truth: rows are written at every commit the service makes and by what notices
 * objects in storage (the scan of open grants, bucket events, reconciliation), and repaired by
 * reconciliation.
 */
export interface DatasetEntry {
  org_id: string;
  experiment_id: string;
  /** The storage key (`org/{org}/experiments/{experiment}/latest.csv`). */
  key: string;
  size_bytes: number;
  etag: string;
  /** When storage wrote the object (its last-modified time), ISO-8601. */
  delivered_at: string;
  /**
   * When the service saw the object in storage (after a commit, a head or a listing), ISO-8601.
   * An observation replaces a row only if it is not older than the row's own, so a slow listing
   * cannot undo a commit made while it ran.
   */
  observed_at: string;
}

/** A catalog row with the status of the analysis of its object. */
export interface DatasetRow extends DatasetEntry {
  /**
   * The status of the analysis of this ETag: that of the saved analysis when it is of this ETag,
   * else `pending`. Kept by the driver whenever either side changes.
   */
  analysis_status: AnalysisStatus;
}

export interface DatasetPageOptions {
  /** Rows whose experiment_id comes after this one (byte order); default from the first. */
  after?: string | null;
  /** Most rows to answer. */
  limit: number;
}

export interface DatasetRepo {
  /**
   * Records objects seen in storage, in one transaction: a new row, or a replacement of the row
   * of the same experiment unless that row was observed later. A row whose ETag changes takes
   * the analysis status of that ETag (`pending` unless an analysis of it is saved).
   */
  put(entries: readonly DatasetEntry[]): Promise<void>;
  /**
   * Removes the row of an experiment unless it was observed after `observedBefore` (a commit
   * made after the object was deleted keeps its row); answers whether a row was removed.
   */
  remove(orgId: string, experimentId: string, observedBefore: string): Promise<boolean>;
  get(orgId: string, experimentId: string): Promise<DatasetRow | null>;
  /** One organization's rows in experiment_id byte order (`COLLATE "C"` on PostgreSQL). */
  page(orgId: string, options: DatasetPageOptions): Promise<DatasetRow[]>;
  /**
   * Rows in storage-key order whose key is after `afterKey` (exclusive) and up to `throughKey`
   * (inclusive; `null`: to the end), at most `limit`: reconciliation compares them with one page
   * of a storage listing.
   */
  keyRange(afterKey: string, throughKey: string | null, limit: number): Promise<DatasetRow[]>;
  /** Rows over `sizeBytes` (the clean-up deletes those datasets), at most `limit`. */
  larger(sizeBytes: number, limit: number): Promise<DatasetRow[]>;
  /**
   * Rows whose analysis is `pending`, of objects up to `maxBytes`, observed before
   * `observedBefore`, at most `limit` (the timer offers them to the analysis again).
   */
  pending(maxBytes: number, observedBefore: string, limit: number): Promise<DatasetRow[]>;
}

/** An upload URL handed out by `initiate` (recorded for S3, where the PUT bypasses the service). */
export interface Grant {
  org_id: string;
  experiment_id: string;
  key: string;
  /** When the URL expires, ISO-8601. */
  expires_at: string;
}

export interface GrantRepo {
  /** Records grants, in one transaction; a key keeps the latest expiry it was granted. */
  put(grants: readonly Grant[]): Promise<void>;
  /** Grants expiring at or after `since` (of one organization when given), by key. */
  open(since: string, orgId?: string): Promise<Grant[]>;
  /** Grants of one key expiring at or after `since`, if any. */
  get(key: string, since: string): Promise<Grant | null>;
  /** Deletes grants that expired before `before`; answers how many. */
  prune(before: string): Promise<number>;
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
   * `history`, given with a ready result, is written in the same transaction: whoever reads the
   * result then finds its snapshot too, and a result not saved leaves no history.
   */
  saveResult(
    orgId: string,
    experimentId: string,
    etag: string,
    outcome: AnalysisOutcome,
    startedAt: string,
    history?: ResultHistory,
  ): Promise<boolean>;
  delete(orgId: string, experimentId: string): Promise<void>;
  /** Ready results made by an analysis older than `version` (or by an unrecorded one), newest deliveries first. */
  outdated(version: number): Promise<OutdatedAnalysis[]>;
}

export interface HistoryRepo {
  /**
   * Keeps the snapshot of a ready analysis, keyed by the content's SHA-256: content already kept
   * adds nothing ("unchanged"), except that the latest snapshot's figures and `analysed_at` are
   * replaced when it is that content ("replaced", e.g. a settings re-run). A new one is added
   * ("added") and the oldest beyond `keep` are dropped.
   */
  record(
    orgId: string,
    experimentId: string,
    snapshot: Omit<HistorySnapshot, "seq">,
    keep: number,
  ): Promise<RecordOutcome>;
  /** Snapshots after `afterSeq` (0: from the first), oldest first, at most `limit`. */
  list(
    orgId: string,
    experimentId: string,
    afterSeq: number,
    limit: number,
  ): Promise<HistorySnapshot[]>;
  delete(orgId: string, experimentId: string): Promise<void>;
}

export interface DeliverySummaryRepo {
  /** The experiment's summary: a row (and blob) of the caller's own, which it may free. */
  get(orgId: string, experimentId: string): Promise<DeliverySummaryRow | null>;
  /**
   * The same row with only the first `bytes` bytes of its blob (all of it when shorter): what a
   * run needs before it aggregates (the blob's header) without reading every user's hash.
   */
  head(orgId: string, experimentId: string, bytes: number): Promise<DeliverySummaryRow | null>;
  /** Replaces the experiment's summary (the row's blob is not kept once this resolves). */
  save(orgId: string, experimentId: string, row: DeliverySummaryRow): Promise<void>;
  delete(orgId: string, experimentId: string): Promise<void>;
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
  /** SHA-256 of the bytes (hex) when known on the way in (direct upload). */
  sha256?: string;
  /**
   * How the delivery was noticed; `settings` asks for one more run of the same object; `upgrade`
   * is the re-run of a result made by an older analysis, which never replaces a job.
   */
  source: "upload" | "presigned_put" | "scan" | "event" | "reconcile" | "settings" | "upgrade";
}

/** A claimed analysis job: the newest delivery of one dataset. */
export interface AnalysisJob extends AnalysisJobOffer {
  /** Grows with every offer that changes the job; `complete` compares it. */
  generation: number;
  /** Claims so far, this one included (postponed claims do not count). */
  attempts: number;
}

/** Which jobs a claim takes (every one by default). */
export interface AnalysisJobSelection {
  /** Jobs of objects up to this many bytes only. */
  maxBytes?: number;
  /** Jobs of objects over this many bytes only. */
  overBytes?: number;
  /** Jobs offered at least this many milliseconds ago only (by the database's clock). */
  offeredAgoMs?: number;
  /** `exclude`: no re-runs of older results (`upgrade`); `only`: nothing else. */
  upgrades?: "exclude" | "only";
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
   * the job's (newest wins) and is run after the current run, if any, finished. An `upgrade`
   * only adds a job to a dataset that has none.
   */
  offer(job: AnalysisJobOffer): Promise<void>;
  /**
   * Admits deliveries (at most one per dataset) in one write: for each, unless its object's
   * result is already saved (and the source is not `settings`), the analysis row becomes
   * `pending` for a new object (or for a `settings` re-run; never for an `upgrade`), and the job
   * is offered as `offer` does.
   */
  admit(jobs: readonly AnalysisJobOffer[]): Promise<void>;
  /**
   * Claims up to `limit` jobs for `leaseSeconds` among those `select` names, oldest offer first
   * and re-runs of older results last: jobs nobody holds, and jobs `owner` holds but does not
   * run (`running` lists the `org/experiment` it runs): a claim or a release whose answer was
   * lost in a database outage is taken back at once instead of waiting for its lease to run out.
   */
  claim(
    owner: string,
    leaseSeconds: number,
    limit: number,
    running?: readonly string[],
    select?: AnalysisJobSelection,
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
  readonly datasets: DatasetRepo;
  readonly grants: GrantRepo;
  readonly history: HistoryRepo;
  readonly deliverySummaries: DeliverySummaryRepo;
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
