/**
 * The metrics card: users, mean and variance of every metric per variant (capped values where
 * the metric is capped; CUPED and capping named by tags).
 */
import { h } from "./dom.js";
import { formatInteger, formatShare, formatStat } from "./format.js";
import { card, scrollTable } from "./widgets.js";
import { metricTags } from "./comparisons_card.js";

/** @param {any} a */
export function metricsCard(a) {
  const metrics = a.metrics ?? [];
  return card(
    "Metrics",
    "metrics-title",
    scrollTable(
      "Metrics per variant",
      h(
        "table",
        { class: "numbers metrics-table" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            h("th", { scope: "col" }, "Variant"),
            h("th", { scope: "col" }, "Users"),
            h("th", { scope: "col" }, "Mean"),
            h("th", { scope: "col" }, "Variance"),
          ),
        ),
        metrics.map((/** @type {any} */ m) =>
          h(
            "tbody",
            { dataset: { metric: m.name } },
            h(
              "tr",
              { class: "metric-row" },
              h(
                "th",
                { scope: "colgroup", colspan: 4 },
                h("span", { class: "metric-name" }, m.name),
                h("span", { class: "tag" }, m.kind),
                m.name === a.key_metric ? h("span", { class: "tag tag-key" }, "key metric") : null,
                metricTags(m),
              ),
            ),
            (m.variants ?? []).map((/** @type {any} */ v) =>
              h(
                "tr",
                { dataset: { variant: v.name } },
                h("th", { scope: "row" }, v.name),
                h("td", { dataset: { cell: "users" } }, formatInteger(v.users)),
                h(
                  "td",
                  { dataset: { cell: "mean" } },
                  m.kind === "conversion" ? formatShare(v.mean, 2) : formatStat(v.mean),
                ),
                h("td", { dataset: { cell: "variance" } }, formatStat(v.variance)),
              )
            ),
          )
        ),
      ),
    ),
  );
}
