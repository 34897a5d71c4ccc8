/**
 * The over-time card: cumulative users and the key metric's cumulative mean per variant by date,
 * as charts and, for reading aloud or copying, as a table.
 */
import { legend, lineChart } from "./charts.js";
import { h } from "./dom.js";
import { formatInteger, formatShare, formatStat } from "./format.js";
import { scrollTable } from "./widgets.js";

/**
 * @param {any} a
 * @param {Map<string, string>} colors
 */
export function overTimeCard(a, colors) {
  const daily = a.daily ?? [];
  if (daily.length === 0) return null;
  /** @type {string[]} */
  const names = (a.variants ?? []).map((/** @type {any} */ v) => v.name);
  const conversion =
    (a.metrics ?? []).find((/** @type {any} */ m) => m.name === a.key_metric)?.kind ===
      "conversion";
  // The table reads as the chart does (a conversion rate in %), two decimals more precise.
  const tableMean = conversion
    ? (/** @type {number | null | undefined} */ y) => formatShare(y, 2)
    : formatStat;
  return h(
    "section",
    { class: "card", "aria-labelledby": "charts-title" },
    h(
      "div",
      { class: "card-head" },
      h("h3", { id: "charts-title" }, "Over time"),
      legend(names.map((name) => ({ name, color: colors.get(name) ?? "#333" }))),
    ),
    overTimeCharts(a, names, colors, conversion),
    h(
      "details",
      { class: "daily" },
      h("summary", {}, "Daily figures as a table"),
      scrollTable("Daily figures", dailyTable(daily, names, tableMean)),
    ),
  );
}

/**
 * A variant's figure on each date, or null on a date without it.
 * @param {any[]} daily
 * @param {string} name
 * @param {"cumulative_users" | "mean"} field
 * @returns {(number | null)[]}
 */
function valuesOf(daily, name, field) {
  return daily.map((d) => {
    const v = (d.variants ?? []).find((/** @type {any} */ x) => x.name === name);
    return v && typeof v[field] === "number" ? v[field] : null;
  });
}

/**
 * The two charts: cumulative users, and the key metric's cumulative mean.
 * @param {any} a
 * @param {string[]} names the variants
 * @param {Map<string, string>} colors
 * @param {boolean} conversion whether the key metric is a conversion (its mean a rate in %)
 */
function overTimeCharts(a, names, colors, conversion) {
  const daily = a.daily;
  const dates = daily.map((/** @type {any} */ d) => /** @type {string} */ (d.date));
  const series = (/** @type {"cumulative_users" | "mean"} */ field) =>
    names.map((name) => ({
      name,
      color: colors.get(name) ?? "#333",
      values: valuesOf(daily, name, field),
    }));
  const meanFormat = conversion
    ? (/** @type {number} */ y) => formatShare(y, y < 0.1 && y > 0 ? 1 : 0)
    : formatStat;
  const metricLabel = a.key_metric ?? "key metric";
  return h(
    "div",
    { class: "chart-pair" },
    h(
      "figure",
      {},
      h("figcaption", {}, "Cumulative users per variant"),
      lineChart({
        label: `Cumulative users per variant by date, ${dates[0]} to ${dates[dates.length - 1]}`,
        dates,
        series: series("cumulative_users"),
        format: (y) => formatInteger(y),
      }),
    ),
    h(
      "figure",
      {},
      h("figcaption", {}, `${metricLabel}: mean per variant, cumulative`),
      lineChart({
        label: `Mean of ${metricLabel} per variant by date, over the users seen so far`,
        dates,
        series: series("mean"),
        format: meanFormat,
      }),
    ),
  );
}

/**
 * The daily figures as a table: per date, each variant's cumulative users and mean.
 * @param {any[]} daily
 * @param {string[]} names the variants
 * @param {(y: number | null | undefined) => string} mean
 */
function dailyTable(daily, names, mean) {
  return h(
    "table",
    { class: "numbers" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col" }, "Date"),
        names.map((n) => [
          h("th", { scope: "col" }, `${n} users`),
          h("th", { scope: "col" }, `${n} mean`),
        ]),
      ),
    ),
    h(
      "tbody",
      {},
      daily.map((d) =>
        h(
          "tr",
          {},
          h("th", { scope: "row" }, d.provisional ? `${d.date} (provisional)` : d.date),
          names.map((n) => {
            const v = (d.variants ?? []).find((/** @type {any} */ x) => x.name === n);
            return [h("td", {}, formatInteger(v?.cumulative_users)), h("td", {}, mean(v?.mean))];
          }),
        )
      ),
    ),
  );
}
