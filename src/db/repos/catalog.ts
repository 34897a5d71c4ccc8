/**
 * The dataset catalog: an index of storage, which stays the source of truth. Rows are written at
 * every commit the service makes and by what notices objects in storage (the scan of open
 * grants, bucket events, reconciliation), and repaired by reconciliation. Each row mirrors the
 * status of the analysis of its ETag (`analyses.ts` keeps it whenever a result changes).
 *
 * `put` writes a batch in one statement. The analysis status of a row's ETag is read with the
 * analyses rows locked for reading (PostgreSQL): a result saved at the same moment waits for this
 * statement and then mirrors its status into the row just written, so the catalog cannot keep a
 * status read before that result was saved. On SQLite writes take turns anyway.
 */
import type { Dialect } from "../dialect.ts";
import { int, rowsParam } from "../dialect.ts";
import type { AnalysisStatus } from "./analyses.ts";
import type { OutboxEvent, WebhookOutbox } from "./webhook_outbox.ts";
import { selects } from "../../webhooks/events.ts";

/** One stored dataset as the catalog knows it. */
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
  /**
   * True for an object this process has just written (a commit): a new object, so its
   * `dataset.delivered` event needs no comparison with the row it replaces. Not stored.
   */
  committed?: boolean;
}

/** A catalog row with the status of the analysis of its object. */
export interface DatasetRow extends DatasetEntry {
  /**
   * The status of the analysis of this ETag: that of the saved analysis when it is of this ETag,
   * else `pending`. Kept whenever either side changes.
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
  /** One organization's rows in experiment_id byte order. */
  page(orgId: string, options: DatasetPageOptions): Promise<DatasetRow[]>;
  /**
   * Rows in storage-key order whose key is after `afterKey` (exclusive) and up to `throughKey`
   * (inclusive; `null`: to the end), at most `limit`: reconciliation compares them with one page
   * of a storage listing.
   */
  keyRange(afterKey: string, throughKey: string | null, limit: number): Promise<DatasetRow[]>;
  /**
   * The bytes one organization's datasets take in storage (the sum of their sizes): what its
   * storage quota is held to. Reads the organization's rows along the primary key.
   */
  storedBytes(orgId: string): Promise<number>;
  /** Rows over `sizeBytes` (the clean-up deletes those datasets), at most `limit`. */
  larger(sizeBytes: number, limit: number): Promise<DatasetRow[]>;
  /**
   * Rows whose analysis is `pending`, of objects up to `maxBytes`, observed before
   * `observedBefore`, at most `limit` (the timer offers them to the analysis again).
   */
  pending(maxBytes: number, observedBefore: string, limit: number): Promise<DatasetRow[]>;
}

/** The catalog's columns and their types (the copy from SQLite reads them too). */
export const DATASET_COLUMN_TYPES = {
  org_id: "text",
  experiment_id: "text",
  key: "text",
  size_bytes: "integer",
  etag: "text",
  delivered_at: "time",
  observed_at: "time",
  analysis_status: "text",
} as const;

/** An entry of `put`, numbered (`n`) in the order its rows are written. */
const { analysis_status: _, ...ENTRY_COLUMNS } = DATASET_COLUMN_TYPES;
const ENTRY = { n: "integer", ...ENTRY_COLUMNS } as const;

function toRow(row: DatasetRow): DatasetRow {
  return { ...row, size_bytes: int(row.size_bytes) };
}

/**
 * One entry per dataset, as one-by-one upserts would leave it: the latest observation, the later
 * entry of equal ones (one statement cannot change a row twice). Sorted by dataset, so that
 * concurrent batches lock their rows in the same order.
 */
function latestPerDataset(entries: readonly DatasetEntry[]): DatasetEntry[] {
  const latest = new Map<string, DatasetEntry>();
  for (const e of entries) {
    const id = `${e.org_id}\u0000${e.experiment_id}`;
    const seen = latest.get(id);
    if (!seen || Date.parse(e.observed_at) >= Date.parse(seen.observed_at)) latest.set(id, e);
  }
  return [...latest.entries()].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0).map(([, e]) => e);
}

const COLUMNS = Object.keys(DATASET_COLUMN_TYPES).join(", ");

/** The facts of a `dataset.delivered` event of a written row. */
function deliveredEvent(row: Record<string, unknown>): OutboxEvent {
  return {
    type: "dataset.delivered",
    orgId: String(row.org_id),
    experimentId: String(row.experiment_id),
    facts: {
      etag: String(row.etag),
      size_bytes: int(row.size_bytes),
      delivered_at: new Date(String(row.delivered_at)).toISOString(),
    },
  };
}

/** The upsert of a batch of entries (`rowsParam` of numbered entries), and the entries' rows. */
function putStatement(db: Dialect): { PUT: string; entryRows: string } {
  const entryRows = db.rows("r", ENTRY);
  /** The upsert of a batch (see `put`), one parameter: the numbered entries. */
  const PUT = `WITH e AS (SELECT * FROM ${entryRows}),
    a AS (
      SELECT a.org_id, a.experiment_id, a.etag, a.status FROM analyses a
      JOIN e ON a.org_id = e.org_id AND a.experiment_id = e.experiment_id${db.forShare("a")})
    INSERT INTO datasets (${COLUMNS})
    SELECT e.org_id, e.experiment_id, e.key, e.size_bytes, e.etag, e.delivered_at,
      e.observed_at, COALESCE(a.status, 'pending')
    FROM e LEFT JOIN a
      ON a.org_id = e.org_id AND a.experiment_id = e.experiment_id AND a.etag = e.etag
    WHERE true ORDER BY e.n
    ON CONFLICT (org_id, experiment_id) DO UPDATE SET
      key = excluded.key, size_bytes = excluded.size_bytes, etag = excluded.etag,
      delivered_at = excluded.delivered_at, observed_at = excluded.observed_at,
      analysis_status = excluded.analysis_status
    WHERE excluded.observed_at >= datasets.observed_at`;
  return { PUT, entryRows };
}

/**
 * Writes the newest entry of each dataset in `entries` (an older observation never replaces a
 * newer one) and, in the same transaction, a `dataset.delivered` event for each dataset that is
 * new or another object (a commit's entry is, by itself), when its organization has an endpoint
 * for it.
 */
async function putDatasets(
  db: Dialect,
  outbox: WebhookOutbox,
  { PUT, entryRows }: { PUT: string; entryRows: string },
  entries: Parameters<DatasetRepo["put"]>[0],
): Promise<void> {
  const batch = latestPerDataset(entries);
  if (batch.length === 0) return;
  const numbered = (rows: DatasetEntry[]) =>
    rowsParam(rows.map(({ committed: _, ...e }, n) => ({ n, ...e })));
  const param = numbered(batch);
  const queued = await db.transaction(async (tx) => {
    // Without a subscriber (one indexed read) the upsert runs as it would without webhooks.
    const subscribers = await outbox.subscribers(tx, batch.map((e) => e.org_id));
    if (!subscribers.some((s) => selects(s.events, "dataset.delivered"))) {
      await tx.run(PUT, [param]);
      return 0;
    }
    // The rows an observation may leave as they were; a commit's object is new by itself.
    const observed = batch.filter((e) => !e.committed);
    const before = new Map(
      observed.length === 0 ? [] : (await tx.all<Record<string, unknown>>(
        `SELECT d.org_id, d.experiment_id, d.etag, d.delivered_at FROM datasets d
           WHERE (d.org_id, d.experiment_id) IN (SELECT org_id, experiment_id FROM ${entryRows})`,
        [numbered(observed)],
      )).map((r) => [`${r.org_id}\u0000${r.experiment_id}`, r]),
    );
    const committed = new Set(
      batch.filter((e) => e.committed).map((e) => `${e.org_id}\u0000${e.experiment_id}`),
    );
    const written = await tx.returning<Record<string, unknown>>(
      `${PUT} RETURNING org_id, experiment_id, etag, size_bytes, delivered_at`,
      [param],
    );
    const changed = written.filter((row) => {
      const id = `${row.org_id}\u0000${row.experiment_id}`;
      if (committed.has(id)) return true;
      const was = before.get(id);
      return was === undefined || was.etag !== row.etag ||
        Date.parse(String(was.delivered_at)) !== Date.parse(String(row.delivered_at));
    });
    return changed.length === 0
      ? 0
      : (await outbox.write(tx, subscribers, changed.map(deliveredEvent))).length;
  });
  if (queued > 0) outbox.wake();
}

/** Removes a dataset's row and, in the same transaction, writes its `dataset.deleted` event. */
async function removeDataset(
  db: Dialect,
  outbox: WebhookOutbox,
  orgId: string,
  experimentId: string,
  observedBefore: string,
): Promise<boolean> {
  let queued = 0;
  const removed = await db.transaction(async (tx) => {
    const gone = await tx.returning<{ etag: string }>(
      `DELETE FROM datasets WHERE org_id = ? AND experiment_id = ? AND observed_at <= ?
         RETURNING etag`,
      [orgId, experimentId, observedBefore],
    );
    if (gone.length === 0) return false;
    queued = await outbox.send(tx, [{
      type: "dataset.deleted",
      orgId,
      experimentId,
      facts: { etag: gone[0].etag },
    }]);
    return true;
  });
  if (queued > 0) outbox.wake();
  return removed;
}

export function catalogRepo(db: Dialect, outbox: WebhookOutbox): DatasetRepo {
  const statement = putStatement(db);
  const rows = async (sql: string, params: (string | number)[]) =>
    (await db.all<DatasetRow>(sql, params)).map(toRow);
  return {
    put: (entries) => putDatasets(db, outbox, statement, entries),
    remove: (orgId, experimentId, observedBefore) =>
      removeDataset(db, outbox, orgId, experimentId, observedBefore),

    get: async (orgId, experimentId) =>
      (await rows(`SELECT ${COLUMNS} FROM datasets WHERE org_id = ? AND experiment_id = ?`, [
        orgId,
        experimentId,
      ]))[0] ?? null,
    page: (orgId, { after, limit }) =>
      after === null || after === undefined
        ? rows(`SELECT ${COLUMNS} FROM datasets WHERE org_id = ? ORDER BY experiment_id LIMIT ?`, [
          orgId,
          limit,
        ])
        : rows(
          `SELECT ${COLUMNS} FROM datasets WHERE org_id = ? AND experiment_id > ?
           ORDER BY experiment_id LIMIT ?`,
          [orgId, after, limit],
        ),
    keyRange: (afterKey, throughKey, limit) =>
      throughKey === null
        ? rows(`SELECT ${COLUMNS} FROM datasets WHERE key > ? ORDER BY key LIMIT ?`, [
          afterKey,
          limit,
        ])
        : rows(
          `SELECT ${COLUMNS} FROM datasets WHERE key > ? AND key <= ? ORDER BY key LIMIT ?`,
          [afterKey, throughKey, limit],
        ),
    storedBytes: async (orgId) =>
      int(
        (await db.get<{ bytes: unknown }>(
          "SELECT COALESCE(SUM(size_bytes), 0) AS bytes FROM datasets WHERE org_id = ?",
          [orgId],
        ))?.bytes ?? 0,
      ),
    // A scan of the table (no index to keep up at every delivery): the clean-up asks every
    // ABN_CLEANUP_INTERVAL_SECONDS, about a millisecond per 10,000 rows.
    larger: (sizeBytes, limit) =>
      rows(
        `SELECT ${COLUMNS} FROM datasets WHERE size_bytes > ? ORDER BY size_bytes DESC LIMIT ?`,
        [sizeBytes, limit],
      ),
    pending: (maxBytes, observedBefore, limit) =>
      rows(
        `SELECT ${COLUMNS} FROM datasets
         WHERE analysis_status = 'pending' AND observed_at < ? AND size_bytes <= ?
         ORDER BY observed_at DESC LIMIT ?`,
        [observedBefore, maxBytes, limit],
      ),
  };
}
