/**
 * The comparisons card: for every metric, each variant against the control as an interval chart
 * and as numbers (lift, always-valid interval and p-value, fixed-horizon interval, p-value and
 * its Holm adjustment across the variants, and on the key metric the decision), with CUPED and
 * capping named where they were used.
 */
import { h } from "./dom.js";
import { formatLift, formatLiftInterval, formatPValue, formatShare, formatStat } from "./format.js";
import { intervalChart, intervalLegend } from "./interval_chart.js";
import { scrollTable } from "./widgets.js";

const DECISION_TEXT = /** @type {Record<string, string>} */ ({
  better: "better",
  worse: "worse",
  inconclusive: "no decision yet",
  too_early: "too early",
});

/**
 * The confidence as a percentage: `95 %`.
 * @param {any} a
 */
export function levelText(a) {
  const level = typeof a.confidence_level === "number" ? a.confidence_level : 0.95;
  return `${Number((level * 100).toPrecision(4))} %`;
}

/**
 * The tags of a metric: CUPED, capping, lower is better.
 * @param {any} m
 */
export function metricTags(m) {
  const cap = m.winsorized;
  return [
    m.covariate
      ? h("span", { class: "tag tag-cuped", dataset: { tag: "cuped" } }, `CUPED: ${m.covariate}`)
      : null,
    cap
      ? h(
        "span",
        { class: "tag tag-capped", dataset: { tag: "capped" } },
        `capped at p${Number((cap.percentile * 100).toPrecision(4))} = ${formatStat(cap.cap)}`,
      )
      : null,
    m.lower_is_better ? h("span", { class: "tag" }, "lower is better") : null,
  ];
}

/**
 * An interval that may wrap between its ends on a narrow screen.
 * @param {[number, number] | null} ci
 */
function intervalCell(ci) {
  if (!Array.isArray(ci)) return "—";
  return [
    h("span", { class: "nowrap" }, formatLift(ci[0])),
    " to ",
    h("span", { class: "nowrap" }, formatLift(ci[1])),
  ];
}

/**
 * @param {any} c a comparison
 */
function cupedText(c) {
  if (!c.cuped) return "—";
  return `θ ${formatStat(c.cuped.theta)}, variance cut ${
    formatShare(c.cuped.variance_reduction, 0)
  }`;
}

/**
 * @param {any} a the analysis
 * @param {any} m one entry of `metrics`
 * @param {Map<string, string>} colors
 */
function metricBlock(a, m, colors) {
  const comparisons = m.comparisons ?? [];
  const isKey = m.name === a.key_metric;
  const hasCuped = comparisons.some((/** @type {any} */ c) => c.cuped);
  const level = levelText(a);
  const id = `comparison-${m.name.replace(/[^A-Za-z0-9_-]/g, "_")}`;
  return h(
    "div",
    { class: "metric-comparison", dataset: { metric: m.name } },
    h(
      "h4",
      { id },
      h("span", { class: "metric-name" }, m.name),
      h("span", { class: "tag" }, m.kind),
      isKey ? h("span", { class: "tag tag-key" }, "key metric") : null,
      metricTags(m),
    ),
    comparisons.length > 0
      ? intervalChart({
        label: `${m.name}: lift of each variant over ${a.control} with its ${level} intervals, ` +
          comparisons.map((/** @type {any} */ c) =>
            `${c.name} ${formatLift(c.lift)} (always valid ${
              formatLiftInterval(c.sequential_ci)
            }, fixed horizon ${formatLiftInterval(c.ci)})`
          ).join("; "),
        rows: comparisons.map((/** @type {any} */ c) => ({
          name: c.name,
          color: colors.get(c.name) ?? "#333",
          lift: c.lift,
          fixed: c.ci,
          sequential: c.sequential_ci,
        })),
      })
      : h("p", { class: "muted" }, "No variant to compare with the control."),
    comparisons.length > 0
      ? scrollTable(
        `${m.name}: comparisons with the control`,
        h(
          "table",
          { class: "numbers comparisons-table" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              h("th", { scope: "col" }, "Variant"),
              h("th", { scope: "col" }, "Lift"),
              h("th", { scope: "col" }, `Always valid, ${level}`),
              h("th", { scope: "col" }, "p (always valid)"),
              h("th", { scope: "col" }, `Fixed horizon, ${level}`),
              h("th", { scope: "col" }, "p"),
              h("th", { scope: "col" }, "p (Holm)"),
              hasCuped ? h("th", { scope: "col" }, "CUPED") : null,
              isKey ? h("th", { scope: "col" }, "Decision") : null,
            ),
          ),
          h(
            "tbody",
            {},
            comparisons.map((/** @type {any} */ c) =>
              h(
                "tr",
                { dataset: { variant: c.name } },
                h("th", { scope: "row" }, c.name),
                h("td", { dataset: { cell: "lift" } }, formatLift(c.lift)),
                h(
                  "td",
                  { class: "interval", dataset: { cell: "sequential-ci" } },
                  intervalCell(c.sequential_ci),
                ),
                h("td", { dataset: { cell: "sequential-p" } }, formatPValue(c.sequential_p_value)),
                h("td", { class: "interval", dataset: { cell: "ci" } }, intervalCell(c.ci)),
                h("td", { dataset: { cell: "p" } }, formatPValue(c.p_value)),
                h("td", { dataset: { cell: "p-holm" } }, formatPValue(c.p_value_adjusted)),
                hasCuped ? h("td", { dataset: { cell: "cuped" } }, cupedText(c)) : null,
                isKey
                  ? h(
                    "td",
                    {
                      class: `decision-cell decision-${c.decision ?? "none"}`,
                      dataset: { cell: "decision" },
                    },
                    DECISION_TEXT[c.decision] ?? "—",
                  )
                  : null,
              )
            ),
          ),
        ),
      )
      : null,
  );
}

/**
 * @param {any} a
 * @param {Map<string, string>} colors
 */
export function comparisonsCard(a, colors) {
  const metrics = a.metrics ?? [];
  // An analysis made before comparisons existed (analysis_version 1) has none to show.
  const compared = metrics.some((/** @type {any} */ m) => Array.isArray(m.comparisons));
  if (!compared || (a.variants ?? []).length < 2) return null;
  return h(
    "section",
    { class: "card comparisons", "aria-labelledby": "comparisons-title" },
    h(
      "div",
      { class: "card-head" },
      h("h3", { id: "comparisons-title" }, `Lift over the control ${a.control ?? ""}`),
      intervalLegend(),
    ),
    h(
      "p",
      { class: "muted small" },
      "The always-valid interval may be read after every delivery: when it leaves 0, the " +
        "difference is real at any look. The fixed-horizon interval and p-value hold only " +
        "at the sample planned in advance; p (Holm) corrects for comparing several variants.",
    ),
    metrics.map((/** @type {any} */ m) => metricBlock(a, m, colors)),
  );
}
