/**
 * The control plane: what the service keeps besides the datasets themselves (organizations, API
 * keys, settings, analysis results). One interface, two drivers: SQLite (`sqlite/`, the embedded
 * default for one host) and PostgreSQL (several instances sharing one bucket). Every method is
 * asynchronous so both drivers fit; the SQLite driver answers at once.
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

export interface ControlPlane {
  readonly driver: "sqlite" | "postgres";
  readonly orgs: OrgRepo;
  readonly keys: KeyRepo;
  readonly settings: SettingsRepo;
  readonly analyses: AnalysisRepo;
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

/** Current time as an ISO-8601 string, the format every timestamp column uses. */
export function nowIso(): string {
  return new Date().toISOString();
}
