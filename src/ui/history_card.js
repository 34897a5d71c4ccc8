/**
 * The History card: what changed since the last delivery (rows and users added, users who
 * switched variant or vanished, restated dates, a provisional newest date), and, per delivery,
 * the key metric's lift with its always-valid interval and each variant's chance to beat the
 * control, as charts and as a table. The history is fetched by the card itself.
 */
import { api, datasetPath } from "./api.js";
import { legend } from "./charts.js";
import { h, replace } from "./dom.js";
import {
  formatDateTime,
  formatInteger,
  formatLift,
  formatLiftInterval,
  formatShare,
} from "./format.js";
import { historyChart } from "./history_chart.js";
import { scrollTable } from "./widgets.js";

/**
 * The "since the last delivery" list.
 * @param {any} a
 */
function sinceLast(a) {
  const c = a.changes;
  if (!c) {
    return h(
      "p",
      { class: "muted", id: "since-last" },
      "The first delivery of this experiment: nothing to compare with yet.",
    );
  }
  /** @type {[string, import("./dom.js").Child, boolean][]} */
  const items = [
    [
      "rows",
      `${c.rows_added >= 0 ? "+" : "−"}${formatInteger(Math.abs(c.rows_added))} rows`,
      false,
    ],
    ["users-added", `+${formatInteger(c.users_added)} users`, false],
    [
      "switched",
      `${formatInteger(c.users_switched_variant)} users switched variant`,
      c.users_switched_variant > 0,
    ],
    ["vanished", `${formatInteger(c.users_vanished)} users vanished`, c.users_vanished > 0],
    [
      "restated",
      c.restated_dates.length > 0
        ? `history restated on ${c.restated_dates.join(", ")}`
        : "no past date restated",
      c.restated_dates.length > 0,
    ],
    [
      "provisional",
      c.provisional_date
        ? `${c.provisional_date} looks incomplete (provisional)`
        : "the newest date looks complete",
      Boolean(c.provisional_date),
    ],
  ];
  return h(
    "div",
    { id: "since-last" },
    h(
      "p",
      { class: "muted small" },
      "Since the delivery of ",
      h("time", { datetime: c.previous_delivered_at }, formatDateTime(c.previous_delivered_at)),
      ":",
    ),
    h(
      "ul",
      { class: "since-list" },
      items.map(([key, text, notable]) =>
        h("li", { class: notable ? "notable" : "", dataset: { change: key } }, text)
      ),
    ),
  );
}

/**
 * @param {any} a the analysis
 * @param {any[]} snapshots oldest first
 * @param {Map<string, string>} colors
 */
function historyBody(a, snapshots, colors) {
  /** @type {string[]} */
  const others = (a.variants ?? []).map((/** @type {any} */ v) => v.name).filter((
    /** @type {string} */ n,
  ) => n !== a.control);
  return [
    legend(others.map((name) => ({ name, color: colors.get(name) ?? "#333" }))),
    historyCharts(a, snapshots, others, colors),
    h(
      "details",
      { class: "daily" },
      h("summary", {}, "The history as a table"),
      scrollTable("History", historyTable(a.key_metric, snapshots, others)),
    ),
  ];
}

/**
 * A variant's comparison with the control on a metric at one delivery, or null.
 * @param {any} snapshot
 * @param {string} metric
 * @param {string} name the variant
 */
function comparisonOf(snapshot, metric, name) {
  return (snapshot.metrics ?? []).find((/** @type {any} */ m) => m.name === metric)?.comparisons
    ?.find((/** @type {any} */ c) => c.name === name) ?? null;
}

/**
 * The two charts: the key metric's lift with its always-valid band, and the chance to beat the
 * control, per delivery.
 * @param {any} a
 * @param {any[]} snapshots
 * @param {string[]} others the variants besides the control
 * @param {Map<string, string>} colors
 */
function historyCharts(a, snapshots, others, colors) {
  const metric = a.key_metric;
  const deliveries = snapshots.map((snapshot) => snapshot.delivered_at);
  /**
   * One figure of a variant's comparison per delivery.
   * @param {string} name
   * @param {(c: any) => any} pick
   */
  const perDelivery = (name, pick) =>
    snapshots.map((snapshot) => pick(comparisonOf(snapshot, metric, name)) ?? null);
  const series = others.map((name) => ({
    name,
    color: colors.get(name) ?? "#333",
    values: perDelivery(name, (c) => c?.lift),
    bands: perDelivery(name, (c) => c?.sequential_ci),
  }));
  const chances = others.map((name) => ({
    name,
    color: colors.get(name) ?? "#333",
    values: perDelivery(name, (c) => c?.chance_to_beat_control),
  }));
  return h(
    "div",
    { class: "chart-pair" },
    h(
      "figure",
      {},
      h("figcaption", {}, `${metric}: lift per delivery, always-valid interval`),
      historyChart({
        label:
          `Lift of each variant over ${a.control} on ${metric} at each of ${snapshots.length} deliveries, with the always-valid interval as a band`,
        kind: "lift",
        deliveries,
        series,
      }),
    ),
    h(
      "figure",
      {},
      h("figcaption", {}, "Chance to beat the control per delivery"),
      historyChart({
        label:
          `Chance of each variant to beat ${a.control} on ${metric} at each of ${snapshots.length} deliveries`,
        kind: "chance",
        deliveries,
        series: chances,
      }),
    ),
  );
}

/**
 * The history as a table: per delivery, its rows and each variant's lift, always-valid interval
 * and chance to beat the control.
 * @param {string} metric the key metric
 * @param {any[]} snapshots
 * @param {string[]} others the variants besides the control
 */
function historyTable(metric, snapshots, others) {
  return h(
    "table",
    { class: "numbers history-table" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col" }, "Delivered"),
        h("th", { scope: "col" }, "Rows"),
        others.map((name) => [
          h("th", { scope: "col" }, `${name} lift`),
          h("th", { scope: "col" }, `${name} always valid`),
          h("th", { scope: "col" }, `${name} chance to beat`),
        ]),
      ),
    ),
    h(
      "tbody",
      {},
      snapshots.map((snapshot, i) =>
        h(
          "tr",
          { dataset: { delivery: String(i) } },
          h("th", { scope: "row" }, formatDateTime(snapshot.delivered_at)),
          h("td", {}, formatInteger(snapshot.rows)),
          others.map((name) => {
            const c = comparisonOf(snapshot, metric, name);
            return [
              h("td", {}, formatLift(c?.lift)),
              h("td", {}, formatLiftInterval(c?.sequential_ci)),
              h("td", {}, formatShare(c?.chance_to_beat_control)),
            ];
          }),
        )
      ),
    ),
  );
}

/**
 * @param {any} a
 * @param {Map<string, string>} colors
 */
export function historyCard(a, colors) {
  const body = h(
    "div",
    { class: "history-body", "aria-busy": "true" },
    h("p", { class: "muted" }, "Loading the history…"),
  );
  const card = h(
    "section",
    { class: "card history", "aria-labelledby": "history-title" },
    h("h3", { id: "history-title" }, "History"),
    h("h4", {}, "Since the last delivery"),
    sinceLast(a),
    h("h4", {}, "Per delivery"),
    body,
  );
  api(`${datasetPath(a.experiment_id)}history/`).then((answer) => {
    const snapshots = answer?.snapshots ?? [];
    body.removeAttribute("aria-busy");
    body.dataset.deliveries = String(snapshots.length);
    if (snapshots.length === 0) {
      replace(body, h("p", { class: "muted" }, "No delivery has been analysed yet."));
    } else {
      replace(body, historyBody(a, snapshots, colors));
    }
  }, (error) => {
    body.removeAttribute("aria-busy");
    replace(
      body,
      h("p", { class: "form-error" }, `The history could not be loaded: ${error.message}`),
    );
  });
  return card;
}
