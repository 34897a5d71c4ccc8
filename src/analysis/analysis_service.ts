/**
 * What the routes ask of the analysis, in their terms: the analysis of a stored delivery (its run
 * started when it has none yet, e.g. a two-step delivery the timer has not noticed), a run again
 * after a settings change, and the variants and columns of the stored delivery's data once its
 * analysis settled (what settings naming the data are checked against). Behind it the analysis
 * queue (`AnalysisScheduler`) runs the analyses; the routes see only this.
 */
import type { AnalysisRow, ControlPlane } from "../db/control_plane.ts";
import type { Delivery } from "../deliveries.ts";
import { datasetKey, type ObjectInfo } from "../storage/object_store.ts";
import type { AnalysisScheduler } from "./queue.ts";
import type { DatasetFacts } from "./dataset_columns.ts";
import type { AnalysisReport } from "./report.ts";

/** How long `dataOf` waits for an analysis to settle, by default: a large file's takes seconds. */
export const SETTLE_TIMEOUT_MS = 20_000;

export interface AnalysisServiceOptions {
  db: ControlPlane;
  /** The queue that runs the analyses. */
  scheduler: AnalysisScheduler;
  /** See `SETTLE_TIMEOUT_MS`. */
  settleTimeoutMs?: number;
}

/** The analysis of a stored delivery, as `GET …/analysis/` serves it. */
export interface AnalysisView {
  /** `pending` until the result of this delivery (its ETag) is saved. */
  status: "ready" | "pending" | "failed";
  /** Why it failed (a refusal of the data, or settings that do not fit it); else null. */
  error: string | null;
  /** Data rows read; null until ready. */
  rows: number | null;
  /** The analysis JSON of a ready analysis; else null. */
  result: AnalysisReport | null;
  /** When the analysis was saved; null while pending. */
  analysedAt: string | null;
}

export class AnalysisService {
  readonly #db: ControlPlane;
  readonly #scheduler: AnalysisScheduler;
  readonly #settleTimeoutMs: number;

  constructor(options: AnalysisServiceOptions) {
    this.#db = options.db;
    this.#scheduler = options.scheduler;
    this.#settleTimeoutMs = options.settleTimeoutMs ?? SETTLE_TIMEOUT_MS;
  }

  /**
   * The analysis of the stored delivery `info`; unless its result is saved, its run is under way
   * after this (joined if it already was).
   */
  async ensure(orgId: string, experimentId: string, info: ObjectInfo): Promise<AnalysisView> {
    const row = await this.#db.analyses.get(orgId, experimentId);
    if (row === null || row.etag !== info.etag || row.status === "pending") {
      this.#run(orgId, experimentId, info, "scan");
    }
    if (row === null || row.etag !== info.etag) {
      return { status: "pending", error: null, rows: null, result: null, analysedAt: null };
    }
    return {
      status: row.status,
      error: row.status === "failed" ? row.error : null,
      rows: row.rows,
      result: row.status === "ready" ? resultOf(row) : null,
      analysedAt: row.finished_at,
    };
  }

  /** Runs the analysis of the stored delivery `info` again, after its running one (settings). */
  rerun(orgId: string, experimentId: string, info: ObjectInfo): void {
    this.#run(orgId, experimentId, info, "settings");
  }

  /**
   * The variants and columns of the stored delivery `info`'s data, once its analysis settled (its
   * run started if it was not under way): null when it failed. If it does not settle within the
   * timeout, those of the experiment's analysis if that is still a ready one of an earlier
   * delivery, else null.
   */
  async dataOf(
    orgId: string,
    experimentId: string,
    info: ObjectInfo,
  ): Promise<DatasetFacts | null> {
    const row = await this.#settledRow(orgId, experimentId, info);
    const result = row?.status === "ready" ? resultOf(row) : null;
    const columns = result?.dataset?.columns;
    if (result === null || columns === undefined) return null; // none, or of an older version
    return { variants: result.variants.map((v) => v.name), columns };
  }

  /**
   * The experiment's analysis row once the analysis of `info` settled in it (ready or failed),
   * or as it is when the timeout passes: the queue tells when the run ends, here or on another
   * instance (`AnalysisScheduler.settled`).
   */
  async #settledRow(
    orgId: string,
    experimentId: string,
    info: ObjectInfo,
  ): Promise<AnalysisRow | null> {
    const row = await this.#db.analyses.get(orgId, experimentId);
    if (row !== null && row.etag === info.etag && row.status !== "pending") return row;
    this.#run(orgId, experimentId, info, "scan");
    await this.#scheduler.settled(orgId, experimentId, info.etag, this.#settleTimeoutMs);
    return await this.#db.analyses.get(orgId, experimentId);
  }

  #run(orgId: string, experimentId: string, info: ObjectInfo, source: Delivery["source"]): void {
    const key = datasetKey(orgId, experimentId);
    this.#scheduler.enqueue({ orgId, experimentId, key, info, validated: false, source });
  }
}

/**
 * The analysis JSON of a ready row. A result saved by analysis version 3 carried a private copy
 * of its aggregate (`_data`) for the settings check; it is not served (such results are run
 * again at start-up, see `rerunOutdated`).
 */
function resultOf(row: AnalysisRow): AnalysisReport | null {
  if (row.result === null) return null;
  const { _data: _, ...result } = JSON.parse(row.result);
  return result as AnalysisReport;
}
