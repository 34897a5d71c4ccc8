/**
 * The analysis of a large direct upload, begun while the upload still streams. A body piped into
 * its local file (the `spool` path of `ingest.ts`) is read back here as the file grows and
 * aggregated as an analysis would aggregate the stored object; once the upload is stored, its
 * analysis run (`analyse_delivery.ts`) takes the aggregate instead of reading the file again.
 * Over a network that delivers the bytes slower than the aggregation reads them, the analysis
 * is then ready moments after the 201.
 *
 * The aggregate is of the very bytes stored: the same file (its descriptor, opened when the
 * upload began, outlives the rename into place), read to exactly the final size the upload
 * stored and hashed; a file that ends short or grows past that size gives no aggregate. Only an
 * upload that passed every check and was stored hands its aggregate over, under its ETag; a
 * refused, failed or replaced one is dropped, and so is one whose settings changed before its
 * run (the run aggregates again with the new ones).
 *
 * An upload is followed only once it arrives slower than `maxBytesPerSecond` (from the sizes the
 * upload reports as its file grows, over three windows of `PACE_MS` in a row), and reading pauses
 * while it arrives faster: the two processors are then busy receiving, checking and hashing, and
 * an aggregation beside them would slow the upload more than it saves (the benchmarks' loopback clients send some 400 MB/s). An
 * upload that ends before it was found slow is analysed after it is stored, as if it had not been
 * followed; nothing is loaded for it. At most one upload is followed at a time, so an analysis of
 * another experiment running meanwhile makes two at most.
 */
import type { ControlPlane } from "../db/control_plane.ts";
import type { Logger } from "../log.ts";
import { describeError } from "../log.ts";
import type { DatasetTarget, UploadFollower, UploadFollowers } from "../ingest/ingest.ts";
import { aggregateCsv, datesFitNarrowDays, DaysOutOfRange } from "./aggregate/aggregate.ts";
import type { Aggregate, AggregateOptions } from "./aggregate/aggregate_types.ts";
import type { TallyWorkers } from "./aggregate/tally_workers.ts";
import { READ_BYTES } from "./body_chunks.ts";
import { type Settings, validateSettings } from "./settings.ts";
import { readSummaryHead, summaryDates, summaryUserCount } from "./history/delivery_summary.ts";
import { largeBuffer, releaseBuffers } from "../buffers.ts";

/** The aggregation options a run takes from the experiment's settings and last delivery. */
export type RunAggregation = Pick<
  AggregateOptions,
  "metricKinds" | "covariates" | "winsorize" | "keyMetric" | "expectedUsers" | "wideDays"
>;

/** What `analyseDelivery` and a follower both aggregate with: the same settings, the same sums. */
export function runAggregation(settings: Settings, previousSummary?: Uint8Array): RunAggregation {
  return {
    metricKinds: settings.metric_kinds,
    covariates: settings.covariates,
    winsorize: settings.winsorize,
    keyMetric: settings.key_metric,
    // Deliveries of an experiment grow night by night: the last one's users size the tables.
    expectedUsers: previousSummary ? summaryUserCount(previousSummary) : undefined,
    // A date the last delivery held outside 16-bit days is likely there again: read with 32 bits
    // at once, rather than twice.
    wideDays: previousSummary ? !datesFitNarrowDays(summaryDates(previousSummary)) : undefined,
  };
}

/**
 * The part of `RunAggregation` the figures depend on (the expected users only size tables, and
 * the days' width only stores them).
 */
function figuresKey(options: RunAggregation): string {
  const { metricKinds, covariates, winsorize, keyMetric } = options;
  return JSON.stringify([metricKinds, covariates, winsorize, keyMetric ?? null]);
}

/** Uploads arriving faster than this are aggregated after they are stored (see above). */
export const FOLLOW_MAX_BYTES_PER_SECOND = 150 * 1024 * 1024;
/** The shortest window over which the upload's rate is measured. */
const PACE_MS = 100;
/** Windows in a row that must find an upload slow before it is followed. */
const SLOW_WINDOWS = 3;
/** How long a stored upload's aggregate waits for its run before it is dropped. */
const KEEP_MS = 30_000;

export interface UploadFollowersOptions {
  db: ControlPlane;
  log: Logger;
  /** Where the aggregation's worker waits between runs (shared with the analysis queue). */
  tallyWorkers?: TallyWorkers;
  /** See `FOLLOW_MAX_BYTES_PER_SECOND`; tests lower or raise it. */
  maxBytesPerSecond?: number;
}

/** An aggregate made while its upload streamed, and the settings it was made with. */
interface Followed {
  aggregate: Aggregate;
  key: string;
}

/** Frees what a followed aggregate holds that a collection would free late (its user hashes). */
function dropFollowed(followed: Followed | null): void {
  if (followed !== null) releaseBuffers(followed.aggregate.userSummary?.hi);
}

/** A stored upload's aggregate (under way or made), and the timer that drops it unclaimed. */
interface StoredEntry {
  result: Promise<Followed | null>;
  timer: ReturnType<typeof setTimeout>;
}

export class AnalysisFollowers implements UploadFollowers {
  readonly #o: UploadFollowersOptions;
  /** Uploads followed now (at most one). */
  #following = 0;
  /** Stored uploads' aggregates, by dataset and ETag, until their run takes them. */
  readonly #stored = new Map<string, StoredEntry>();

  constructor(options: UploadFollowersOptions) {
    this.#o = options;
  }

  /** Starts following the file at `path` (a `declared`-byte body for `target`), or null. */
  follow(target: DatasetTarget, path: string, declared: number): UploadFollower | null {
    if (this.#following > 0) return null;
    let file: Deno.FsFile;
    try {
      file = Deno.openSync(path, { read: true });
    } catch {
      return null;
    }
    this.#following++;
    const progress = new FollowProgress(this.#o.maxBytesPerSecond);
    const result = this.#aggregate(target, file, declared, progress);
    result.finally(() => this.#following--);
    // Once stored, the aggregate is of the stored bytes whatever happens to the request after.
    let committed = false;
    return {
      grew: (size) => progress.grew(size),
      end: (size) => progress.end(size),
      abort: () => {
        if (committed) return;
        progress.abort();
        result.then(dropFollowed);
      },
      commit: (etag) => {
        if (progress.aborted) return;
        committed = true;
        const id = storedId(target.orgId, target.experimentId, etag);
        const earlier = this.#stored.get(id);
        if (earlier) this.#drop(id, earlier);
        const timer = setTimeout(() => {
          const entry = this.#stored.get(id);
          if (entry) this.#drop(id, entry);
        }, KEEP_MS);
        Deno.unrefTimer(timer);
        this.#stored.set(id, { result, timer });
      },
    };
  }

  /**
   * The aggregate of the stored upload `etag`, when one was followed and made with the figures'
   * settings of `options`; null otherwise (an aggregate of other settings is dropped).
   */
  async take(
    orgId: string,
    experimentId: string,
    etag: string,
    options: RunAggregation,
  ): Promise<Aggregate | null> {
    const id = storedId(orgId, experimentId, etag);
    const entry = this.#stored.get(id);
    if (entry === undefined) return null;
    this.#stored.delete(id);
    clearTimeout(entry.timer);
    const followed = await entry.result;
    if (followed === null) return null;
    if (followed.key !== figuresKey(options)) {
      dropFollowed(followed);
      return null;
    }
    return followed.aggregate;
  }

  /** Stored uploads' aggregates waiting for their run (tests). */
  get waiting(): number {
    return this.#stored.size;
  }

  #drop(id: string, entry: StoredEntry): void {
    this.#stored.delete(id);
    clearTimeout(entry.timer);
    entry.result.then(dropFollowed);
  }

  async #aggregate(
    target: DatasetTarget,
    file: Deno.FsFile,
    declared: number,
    progress: FollowProgress,
  ): Promise<Followed | null> {
    try {
      // Nothing is loaded or read until the upload turns out slower than the aggregation.
      if (!(await progress.slowBeforeEnd())) return null;
      const { db, tallyWorkers } = this.#o;
      const { orgId, experimentId } = target;
      const settings = validateSettings((await db.settings.get(orgId, experimentId)) ?? {});
      const previous = await readSummaryHead(db.deliverySummaries, orgId, experimentId);
      const options = runAggregation(settings, previous?.summary);
      // Freed now rather than at a collection an idle service skips.
      releaseBuffers(previous?.summary);
      const chunks = followFile(file, progress);
      const aggregate = await aggregateCsv(chunks, {
        ...options,
        sizeBytes: declared,
        tallyWorkers,
        userSummary: true,
      });
      return { aggregate, key: figuresKey(options) };
    } catch (error) {
      if (!progress.aborted) {
        // A date outside 16-bit days is the data's, not a fault: the run reads it with 32 bits.
        const level = error instanceof DaysOutOfRange ? "info" : "warn";
        this.#o.log[level]("the aggregation beside an upload stopped; its run reads the file", {
          org_id: target.orgId,
          experiment_id: target.experimentId,
          error: describeError(error),
        });
      }
      return null;
    } finally {
      file.close();
    }
  }
}

function storedId(orgId: string, experimentId: string, etag: string): string {
  return `${orgId}\0${experimentId}\0${etag}`;
}

/**
 * What the upload tells its follower (the file's size as it grows, its final size, or that it
 * failed), and the upload's pace from those sizes: over windows of at least `PACE_MS`, whether it
 * grew faster than the maximum, and how many windows in a row it did not.
 */
class FollowProgress {
  /** The file's size at the upload's last look. */
  grown = 0;
  /** The body's final size, once it ended. */
  size: number | null = null;
  aborted = false;
  /** Whether the last window found the upload faster than the maximum. */
  fast = true;
  /** Windows in a row that found it slower. */
  slowWindows = 0;
  readonly #max: number;
  #windowAt = performance.now();
  #windowSize = 0;
  #wake: (() => void) | null = null;

  constructor(maxBytesPerSecond = FOLLOW_MAX_BYTES_PER_SECOND) {
    this.#max = maxBytesPerSecond;
  }

  grew(size: number): void {
    this.grown = Math.max(this.grown, size);
    const now = performance.now();
    if (now - this.#windowAt >= PACE_MS) {
      this.fast = (this.grown - this.#windowSize) / ((now - this.#windowAt) / 1000) > this.#max;
      this.slowWindows = this.fast ? 0 : this.slowWindows + 1;
      this.#windowAt = now;
      this.#windowSize = this.grown;
    }
    this.#wakeUp();
  }

  end(size: number): void {
    this.size = size;
    this.#wakeUp();
  }

  abort(): void {
    this.aborted = true;
    this.#wakeUp();
  }

  /** Resolves at the next word of the upload (a size, its end, or its failure). */
  next(): Promise<void> {
    return new Promise((resolve) => this.#wake = resolve);
  }

  /**
   * Waits until `SLOW_WINDOWS` windows in a row find the upload slow (true), or until it ends or
   * fails before (false): a fast upload is analysed after it is stored, as if it had not been
   * followed, and a moment's stall of a fast one (its start, a busy machine) does not count.
   */
  async slowBeforeEnd(): Promise<boolean> {
    for (;;) {
      if (this.aborted || this.size !== null) return false;
      if (this.slowWindows >= SLOW_WINDOWS) return true;
      await this.next();
    }
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }
}

/** Thrown into the aggregation when the followed upload failed. */
class UploadFailed extends Error {}

/**
 * The chunks of `file` as it grows, to its final size: each chunk is valid until the next is
 * asked for (one buffer, read again), and none goes past the size the upload reported. While the
 * upload is faster than the maximum, reading pauses until it slows down or ends.
 */
async function* followFile(
  file: Deno.FsFile,
  progress: FollowProgress,
): AsyncGenerator<Uint8Array> {
  const buffer = new Uint8Array(largeBuffer(READ_BYTES), 0, READ_BYTES);
  let offset = 0;
  try {
    for (;;) {
      if (progress.aborted) throw new UploadFailed("The upload failed");
      const end = progress.size;
      const known = end ?? progress.grown;
      if (offset >= known) {
        if (end === null) {
          await progress.next();
          continue;
        }
        if (offset > end || (await file.stat()).size !== end) {
          throw new Error(`The followed file does not hold the stored ${end} bytes`);
        }
        return;
      }
      if (end === null && progress.fast) {
        await progress.next();
        continue;
      }
      const n = await file.read(buffer.subarray(0, Math.min(buffer.length, known - offset)));
      if (n === null || n === 0) {
        throw new Error(`The followed file ended at ${offset} of ${known} bytes`);
      }
      offset += n;
      yield buffer.subarray(0, n);
    }
  } finally {
    releaseBuffers(buffer);
  }
}
