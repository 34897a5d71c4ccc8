/**
 * The analysis and the history as CSV (docs/api.md, the `format=csv` answers): one row per
 * metric × variant (the control too, its comparison cells empty), numbers in their shortest
 * round-trip form (what `String(number)` writes, so a reader gets the JSON's doubles back), no
 * value an empty cell, RFC 4180 quoting, CRLF line ends. A text cell that a spreadsheet would read
 * as a formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage return) is prefixed with `'`.
 */
import type { ComparisonReport } from "./comparisons.ts";
import type { Snapshot } from "./history/snapshot.ts";

/** The columns of `GET …/analysis/?format=csv`. */
export const ANALYSIS_CSV_COLUMNS = [
  "metric",
  "variant",
  "users",
  "mean",
  "lift",
  "lift_se",
  "ci_low",
  "ci_high",
  "p_value",
  "p_value_adjusted",
  "sequential_ci_low",
  "sequential_ci_high",
  "sequential_p_value",
  "chance_to_beat_control",
  "decision",
] as const;

/** The columns of `GET …/history/?format=csv`: the delivery, then the analysis CSV's figures. */
export const HISTORY_CSV_COLUMNS = [
  "delivered_at",
  "etag",
  "analysed_at",
  "rows",
  "srm_p_value",
  "metric",
  "variant",
  "users",
  "lift",
  "ci_low",
  "ci_high",
  "sequential_ci_low",
  "sequential_ci_high",
  "p_value",
  "chance_to_beat_control",
  "decision",
] as const;

type Cell = string | number | null | undefined;

const FORMULA = /^[=+\-@\t\r]/;
const QUOTED = /[",\r\n]/;

/** One cell: a finite number as `String` writes it, text guarded and quoted, else empty. */
export function csvCell(value: Cell): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : "";
  const text = FORMULA.test(value) ? `'${value}` : value;
  return QUOTED.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

function line(cells: readonly Cell[]): string {
  return cells.map(csvCell).join(",") + "\r\n";
}

/** The parts of the analysis JSON the CSV reads. */
export interface CsvAnalysis {
  control: string | null;
  metrics: {
    name: string;
    variants: { name: string; users: number; mean: number | null }[];
    comparisons: Omit<ComparisonReport, "cuped">[];
  }[] | null;
}

/** The analysis as CSV: the header, then one row per metric × variant (none until ready). */
export function analysisCsv(analysis: CsvAnalysis): string {
  let out = line(ANALYSIS_CSV_COLUMNS);
  for (const metric of analysis.metrics ?? []) {
    for (const v of metric.variants) {
      const c = metric.comparisons.find((x) => x.name === v.name);
      out += line([
        metric.name,
        v.name,
        v.users,
        v.mean,
        c?.lift,
        c?.lift_se,
        c?.ci?.[0],
        c?.ci?.[1],
        c?.p_value,
        c?.p_value_adjusted,
        c?.sequential_ci?.[0],
        c?.sequential_ci?.[1],
        c?.sequential_p_value,
        c?.chance_to_beat_control,
        c?.decision,
      ]);
    }
  }
  return out;
}

/** The header of the history CSV. */
export function historyCsvHeader(): string {
  return line(HISTORY_CSV_COLUMNS);
}

/** The rows of one snapshot: one per metric × variant of the delivery. */
export function historyCsvRows(snapshot: Snapshot): string {
  let out = "";
  for (const metric of snapshot.metrics) {
    for (const v of snapshot.variants) {
      const c = metric.comparisons.find((x) => x.name === v.name);
      out += line([
        snapshot.delivered_at,
        snapshot.etag,
        snapshot.analysed_at,
        snapshot.rows,
        snapshot.srm_p_value,
        metric.name,
        v.name,
        v.users,
        c?.lift,
        c?.ci?.[0],
        c?.ci?.[1],
        c?.sequential_ci?.[0],
        c?.sequential_ci?.[1],
        c?.p_value,
        c?.chance_to_beat_control,
        c?.decision,
      ]);
    }
  }
  return out;
}
