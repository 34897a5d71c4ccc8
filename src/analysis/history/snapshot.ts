/**
 * What an experiment's history keeps of each ready analysis (docs/api.md, "GET /datasets/ID/history/"):
 * the delivery's rows, users per variant, the SRM p-value, per metric and variant the lift, its
 * fixed-horizon and sequential intervals, the p-value and the chance to beat the control (and the
 * key metric's decision), and what changed since the previous delivery. The delivery's identity
 * (ETag, times) is stored beside these figures, so `GET …/history/` joins them without parsing.
 */
import type { Changes } from "./delivery_summary.ts";
import type { AnalysisReport } from "../report.ts";

/** One comparison as the history keeps it. */
export interface SnapshotComparison {
  name: string;
  lift: number | null;
  ci: [number, number] | null;
  sequential_ci: [number, number] | null;
  p_value: number | null;
  chance_to_beat_control: number | null;
  /** Key metric only. */
  decision?: string | null;
}

/** The figures of one snapshot. */
export interface SnapshotFigures {
  rows: number;
  control: string | null;
  key_metric: string | null;
  variants: { name: string; users: number }[];
  srm_p_value: number;
  metrics: { name: string; comparisons: SnapshotComparison[] }[];
  changes: Changes | null;
}

/** A snapshot as `GET …/history/` answers it: identity, then figures. */
export interface Snapshot extends SnapshotFigures {
  etag: string;
  delivered_at: string;
  analysed_at: string;
}

/** The figures of a ready analysis of `rows` rows. */
export function snapshotFigures(report: AnalysisReport, rows: number): SnapshotFigures {
  return {
    rows,
    control: report.control,
    key_metric: report.key_metric,
    variants: report.variants,
    srm_p_value: report.srm.p_value,
    metrics: report.metrics.map((metric) => ({
      name: metric.name,
      comparisons: metric.comparisons.map((c): SnapshotComparison => ({
        name: c.name,
        lift: c.lift,
        ci: c.ci,
        sequential_ci: c.sequential_ci,
        p_value: c.p_value,
        chance_to_beat_control: c.chance_to_beat_control ?? null,
        ...(c.decision === undefined ? {} : { decision: c.decision }),
      })),
    })),
    changes: report.changes,
  };
}

/**
 * The JSON text of a stored snapshot for the history endpoint: its identity fields, then the
 * stored figures (already JSON), joined as text.
 */
export function snapshotJson(
  row: { etag: string; delivered_at: string; analysed_at: string; figures: string },
): string {
  const head = `{"etag":${JSON.stringify(row.etag)},"delivered_at":${
    JSON.stringify(row.delivered_at)
  },"analysed_at":${JSON.stringify(row.analysed_at)}`;
  return row.figures === "{}" ? `${head}}` : `${head},${row.figures.slice(1)}`;
}
