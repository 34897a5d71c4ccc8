/**
 * The analysis of one experiment as the page shows it: dataset facts, the SRM verdict, the
 * accumulated sample against its target, the win probability on the key metric, charts over
 * time, the per-metric table, and the states before and around it (loading, pending, failed,
 * the errors of spec 7.4).
 */
import { ApiError } from "./api.js";
import { colorOf, legend, lineChart } from "./charts.js";
import { h, replace } from "./dom.js";
import {
  formatDateTime,
  formatInteger,
  formatLift,
  formatPercent,
  formatPValue,
  formatShare,
  formatSize,
  formatStat,
} from "./format.js";
import { resetSettingsButton, settingsCard } from "./settings.js";

const STATUS_TEXT = /** @type {Record<string, string>} */ ({
  ready: "ready",
  pending: "analysing",
  failed: "failed",
  too_large: "too large",
});

/**
 * A small label for an analysis status.
 * @param {string} status
 */
export function statusBadge(status) {
  const known = status in STATUS_TEXT ? status : "unknown";
  return h("span", { class: `badge badge-${known}` }, STATUS_TEXT[status] ?? status);
}

/**
 * A table wrapped so it scrolls sideways on a narrow screen instead of the page.
 * @param {string} label
 * @param {HTMLTableElement} table
 */
function scrollTable(label, table) {
  return h("div", { class: "table-wrap", role: "region", "aria-label": label, tabindex: "0" }, table);
}

/**
 * @param {string} title
 * @param {string} id
 * @param {...import("./dom.js").Child} children
 */
function card(title, id, ...children) {
  return h("section", { class: "card", "aria-labelledby": id }, h("h3", { id }, title), children);
}

/** @param {HTMLElement} root */
export function renderEmpty(root) {
  replace(
    root,
    h(
      "div",
      { class: "card placeholder" },
      h("h2", {}, "No experiment loaded"),
      h(
        "p",
        { class: "muted" },
        "Pick an experiment from the list, or enter its experiment_id and press Load. " +
          "Every new delivery is analysed by itself: the traffic split (SRM), the accumulated " +
          "sample and the win probability on the key metric.",
      ),
    ),
  );
}

/**
 * @param {HTMLElement} root
 * @param {string} id
 */
export function renderLoading(root, id) {
  replace(
    root,
    h(
      "div",
      { class: "card placeholder", "aria-busy": "true" },
      h("h2", {}, id),
      h("p", { class: "muted" }, "Loading the analysis…"),
      h("div", { class: "progress indeterminate", "aria-hidden": "true" }, h("div", { class: "progress-fill" })),
    ),
  );
}

/**
 * The errors of spec 7.4 and the rest, in words.
 * @param {HTMLElement} root
 * @param {string} id
 * @param {unknown} error
 */
export function renderLoadError(root, id, error) {
  const e = error instanceof ApiError ? error : new ApiError(0, "error", String(error), null);
  /** @type {import("./dom.js").Child[]} */
  let body;
  if (e.status === 404) {
    body = [
      h("h2", { class: "error-title" }, "No dataset for this experiment_id — check that the PUT finished with 200"),
      h(
        "p",
        {},
        "Nothing is stored for “",
        h("code", {}, id),
        "”. A two-step delivery is stored only when the PUT to the upload URL answers 200 (a direct upload answers 201). " +
          "Check the spelling of the experiment_id and that the delivery used this organization's key.",
      ),
      h("p", { class: "muted" }, "This page keeps watching: the analysis appears here by itself once the dataset arrives."),
    ];
  } else if (e.code === "dataset_too_large") {
    body = [
      h("h2", { class: "error-title" }, `The file exceeds ${sizeLimit(e.message)}`),
      h("p", { class: "server-message" }, e.message),
      h("p", {}, "What to do:"),
      h(
        "ul",
        {},
        h("li", {}, "shrink the dataset (fewer rows, for instance a shorter period);"),
        h("li", {}, "drop the columns the analysis does not need;"),
        h("li", {}, "or split it over several experiment_ids (for instance one per period) and deliver each part."),
      ),
      h("p", { class: "muted" }, "Files over the limit are not analysed and are deleted automatically within 6 hours."),
    ];
  } else if (e.status === 0 || e.status >= 500) {
    body = [
      h("h2", { class: "error-title" }, "The analysis could not be loaded"),
      h("p", {}, e.message),
      e.requestId ? h("p", { class: "muted" }, `Request id: ${e.requestId}`) : null,
      h("p", { class: "muted" }, "Retrying in a few seconds…"),
    ];
  } else {
    body = [
      h("h2", { class: "error-title" }, "The analysis could not be loaded"),
      h("p", { class: "server-message" }, e.message),
    ];
  }
  replace(
    root,
    h("div", { class: "card problem", role: "alert", dataset: { status: String(e.status), code: e.code } }, body),
  );
}

/**
 * The limit the service names in its message (it is configurable), 200 MB when it names none.
 * @param {string} message
 */
function sizeLimit(message) {
  return /above the ([0-9.,]+ MB) limit/.exec(message)?.[1] ?? "200 MB";
}

/**
 * The title row: experiment, status and the dataset's facts.
 * @param {any} a the analysis JSON
 */
function head(a) {
  const d = a.dataset ?? {};
  /**
   * @param {string} term
   * @param {import("./dom.js").Child} value
   * @param {string} field
   */
  const fact = (term, value, field) =>
    h("div", { class: "fact" }, h("dt", {}, term), h("dd", { dataset: { field } }, value));
  return h(
    "header",
    { class: "result-head" },
    h("div", { class: "result-title" }, h("h2", { id: "result-title" }, a.experiment_id), statusBadge(a.status)),
    h(
      "dl",
      { class: "facts" },
      fact("Size", formatSize(d.size_bytes), "size"),
      fact("Rows", formatInteger(d.rows), "rows"),
      fact(
        "Delivered",
        d.delivered_at ? h("time", { datetime: d.delivered_at, title: d.delivered_at }, formatDateTime(d.delivered_at)) : "—",
        "delivered",
      ),
      a.status === "ready" ? fact("Users", formatInteger(a.sample?.total_users), "users") : null,
      a.status === "ready" ? fact("Key metric", a.key_metric ?? "—", "key-metric") : null,
      a.status === "ready" ? fact("Control", a.control ?? "—", "control") : null,
    ),
  );
}

/**
 * @param {HTMLElement} root
 * @param {any} a a pending analysis
 * @param {any} previous the last ready analysis of the same experiment, or null
 */
export function renderPending(root, a, previous) {
  if (previous && previous.experiment_id === a.experiment_id) {
    const view = readyView(previous, null);
    view.classList.add("stale");
    replace(
      root,
      h(
        "div",
        { class: "banner", role: "status" },
        h("div", { class: "progress indeterminate", "aria-hidden": "true" }, h("div", { class: "progress-fill" })),
        h("p", {}, h("strong", {}, "Re-analysing… "), "the figures below are from the previous analysis and update by themselves."),
      ),
      view,
    );
    return;
  }
  replace(
    root,
    head(a),
    h(
      "div",
      { class: "card placeholder", "aria-busy": "true" },
      h("h3", {}, "Analysing the latest delivery"),
      h("div", { class: "progress indeterminate", "aria-hidden": "true" }, h("div", { class: "progress-fill" })),
      h("p", { class: "muted" }, "This usually takes a second or two for a small file; the result appears here by itself."),
    ),
  );
}

/**
 * @param {HTMLElement} root
 * @param {any} a a failed analysis
 * @param {{ saved: Record<string, unknown>, onSaved: (message: string) => void }} options
 */
export function renderFailed(root, a, options) {
  const hasSettings = Object.keys(options.saved ?? {}).length > 0;
  replace(
    root,
    head(a),
    h(
      "div",
      { class: "card problem", role: "alert" },
      h("h3", { class: "error-title" }, "The analysis failed"),
      h("p", { class: "server-message", id: "analysis-error" }, a.error ?? "No reason was given."),
      h(
        "p",
        { class: "muted" },
        hasSettings
          ? "Fix the file and deliver it again, or, when the message is about the settings, reset them to the defaults."
          : "Fix the file and deliver it again: it is analysed by itself after every delivery.",
      ),
      hasSettings ? resetSettingsButton(a.experiment_id, options.onSaved) : null,
    ),
  );
}

/**
 * @param {HTMLElement} root
 * @param {any} a a ready analysis
 * @param {{ saved: Record<string, unknown>, flash: string, onSaved: (message: string) => void }} options
 */
export function renderReady(root, a, options) {
  const oldForm = root.querySelector("form.settings-form");
  const keepForm = oldForm instanceof HTMLFormElement &&
    oldForm.dataset.experiment === a.experiment_id &&
    (oldForm.dataset.dirty === "true" || oldForm.contains(document.activeElement));
  const view = readyView(a, options);
  if (keepForm) view.querySelector("form.settings-form")?.replaceWith(oldForm);
  replace(root, view);
}

/**
 * @param {any} a
 * @param {{ saved: Record<string, unknown>, flash: string, onSaved: (message: string) => void } | null} options
 *   null for a view without the settings form (while re-analysing)
 */
function readyView(a, options) {
  const colors = new Map((a.variants ?? []).map((/** @type {any} */ v, /** @type {number} */ i) => [v.name, colorOf(i)]));
  const warnings = a.warnings ?? [];
  return h(
    "div",
    { class: "ready" },
    head(a),
    warnings.length > 0
      ? h(
        "section",
        { class: "notice", "aria-labelledby": "warnings-title" },
        h("h3", { id: "warnings-title" }, warnings.length === 1 ? "Warning" : "Warnings"),
        h("ul", {}, warnings.map((/** @type {string} */ w) => h("li", {}, w))),
      )
      : null,
    h("div", { class: "cards" }, srmCard(a), sampleCard(a, options?.saved ?? {})),
    winCard(a),
    chartsCard(a, colors),
    metricsCard(a),
    options ? settingsCard(a, options.saved, options.flash, options.onSaved) : null,
  );
}

/** @param {any} a */
function srmCard(a) {
  const srm = a.srm ?? {};
  const variants = a.variants ?? [];
  const total = variants.reduce((/** @type {number} */ n, /** @type {any} */ v) => n + v.users, 0);
  const state = !srm.enough_data ? "unknown" : srm.mismatch ? "bad" : "good";
  const verdict = {
    good: ["✓", "No sample ratio mismatch", "The observed split agrees with the expected one (flagged at p < 0.001)."],
    bad: [
      "!",
      "Sample ratio mismatch",
      "The observed split differs from the expected one (p < 0.001): assignment or logging is probably broken, and the results below may be biased.",
    ],
    unknown: ["…", "Not enough data", "The check needs at least 8 users in every variant."],
  }[state];
  return h(
    "section",
    { class: `card srm srm-${state}`, "aria-labelledby": "srm-title" },
    h("h3", { id: "srm-title" }, "Traffic split (SRM)"),
    h("p", { class: "verdict", id: "srm-verdict" }, h("span", { class: "verdict-icon", "aria-hidden": "true" }, verdict[0]), verdict[1]),
    h("p", { class: "muted" }, verdict[2]),
    scrollTable(
      "Observed and expected split",
      h(
        "table",
        { class: "numbers" },
        h(
          "thead",
          {},
          h("tr", {}, h("th", { scope: "col" }, "Variant"), h("th", { scope: "col" }, "Users"), h("th", { scope: "col" }, "Observed"), h("th", { scope: "col" }, "Expected")),
        ),
        h(
          "tbody",
          {},
          variants.map((/** @type {any} */ v) =>
            h(
              "tr",
              { dataset: { variant: v.name } },
              h("th", { scope: "row" }, v.name),
              h("td", { dataset: { cell: "users" } }, formatInteger(v.users)),
              h("td", { dataset: { cell: "observed" } }, total > 0 ? formatShare(v.users / total) : "—"),
              h("td", { dataset: { cell: "expected" } }, formatShare(srm.expected_split?.[v.name])),
            )
          ),
        ),
      ),
    ),
    h(
      "p",
      { class: "stats" },
      "Chi-square ",
      h("strong", { id: "srm-chi-square" }, typeof srm.chi_square === "number" ? srm.chi_square.toFixed(2) : "—"),
      " · p-value ",
      h("strong", { id: "srm-p-value" }, formatPValue(srm.p_value)),
    ),
  );
}

/**
 * @param {any} a
 * @param {Record<string, unknown>} saved
 */
function sampleCard(a, saved) {
  const sample = a.sample ?? {};
  const users = (a.variants ?? []).map((/** @type {any} */ v) => v.users);
  const smallest = users.length ? Math.min(...users) : 0;
  const pct = sample.percent_of_target;
  const known = typeof pct === "number";
  const fill = h("div", { class: "progress-fill" });
  fill.style.width = `${known ? Math.min(100, Math.max(0, pct)) : 0}%`;
  const reached = known && pct >= 100;
  const source = typeof saved.target_users_per_variant === "number"
    ? "Target set in the settings."
    : `Target from a power calculation on ${a.key_metric ?? "the key metric"}: MDE ${formatShare(typeof saved.mde === "number" ? saved.mde : 0.05, 1)} relative, alpha ${saved.alpha ?? 0.05}, power ${saved.power ?? 0.8}.`;
  return h(
    "section",
    { class: "card sample", "aria-labelledby": "sample-title" },
    h("h3", { id: "sample-title" }, "Accumulated sample"),
    h("p", { class: "big" }, h("span", { id: "sample-total" }, formatInteger(sample.total_users)), " users"),
    h(
      "div",
      {
        class: `progress${reached ? " complete" : ""}`,
        role: "progressbar",
        "aria-labelledby": "sample-title",
        "aria-valuemin": 0,
        "aria-valuemax": 100,
        "aria-valuenow": known ? Math.min(100, Math.round(pct * 10) / 10) : null,
        "aria-valuetext": known ? `${formatPercent(pct)} of the target` : "no target",
      },
      fill,
    ),
    known
      ? h(
        "p",
        {},
        h("strong", { id: "sample-percent" }, formatPercent(pct)),
        " of the target",
        reached ? h("span", { class: "reached" }, " — target reached") : null,
        h("br"),
        h(
          "span",
          { class: "muted" },
          `Smallest variant ${formatInteger(smallest)} of ${formatInteger(sample.target_users_per_variant)} users per variant (${formatInteger(sample.target_users)} in all).`,
        ),
      )
      : h(
        "p",
        {},
        h("strong", { id: "sample-percent" }, "No target"),
        h("br"),
        h("span", { class: "muted" }, "No target sample could be computed (see the warnings); set a target in the settings below."),
      ),
    known ? h("p", { class: "muted small" }, source) : null,
  );
}

/**
 * A chance as text over a bar.
 * @param {number | null | undefined} x
 */
function chanceCell(x) {
  if (typeof x !== "number") return "—";
  const bar = h("span", { class: "chance-fill" });
  bar.style.width = `${Math.max(0, Math.min(1, x)) * 100}%`;
  return h("span", { class: "chance" }, h("span", { class: "chance-bar", "aria-hidden": "true" }, bar), formatShare(x));
}

/** @param {any} a */
function winCard(a) {
  const win = a.win_probability ?? { variants: [] };
  const rows = win.variants ?? [];
  const challengers = rows.filter((/** @type {any} */ v) => typeof v.chance_to_beat_control === "number");
  const best = challengers.reduce(
    (/** @type {any} */ top, /** @type {any} */ v) => (top === null || v.chance_to_beat_control > top.chance_to_beat_control ? v : top),
    null,
  );
  return h(
    "section",
    { class: "card win", "aria-labelledby": "win-title" },
    h("h3", { id: "win-title" }, "Win probability on ", h("span", { class: "metric-name" }, win.metric ?? a.key_metric ?? "—")),
    best
      ? h(
        "p",
        { class: "summary" },
        h("strong", {}, best.name),
        ` has a ${formatShare(best.chance_to_beat_control)} chance to beat the control ${a.control ?? ""}` +
          (typeof best.lift === "number" ? ` (lift ${formatLift(best.lift)}).` : "."),
      )
      : null,
    scrollTable(
      "Win probability per variant",
      h(
        "table",
        { class: "numbers" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            h("th", { scope: "col" }, "Variant"),
            h("th", { scope: "col" }, "Chance to beat control"),
            h("th", { scope: "col" }, "Chance to be best"),
            h("th", { scope: "col" }, "Lift"),
            h("th", { scope: "col" }, "95 % interval"),
          ),
        ),
        h(
          "tbody",
          {},
          rows.map((/** @type {any} */ v) => {
            const isControl = v.chance_to_beat_control === null || v.chance_to_beat_control === undefined;
            const ci = Array.isArray(v.lift_ci95) ? `${formatLift(v.lift_ci95[0])} to ${formatLift(v.lift_ci95[1])}` : "—";
            return h(
              "tr",
              { dataset: { variant: v.name }, class: isControl ? "control-row" : "" },
              h("th", { scope: "row" }, v.name),
              h("td", { dataset: { cell: "beat" } }, isControl ? h("span", { class: "tag" }, "control") : chanceCell(v.chance_to_beat_control)),
              h("td", { dataset: { cell: "best" } }, chanceCell(v.chance_to_be_best)),
              h("td", { dataset: { cell: "lift" }, class: liftClass(v) }, isControl ? "—" : formatLift(v.lift)),
              h("td", { dataset: { cell: "ci" } }, isControl ? "—" : ci),
            );
          }),
        ),
      ),
    ),
  );
}

/** @param {any} v */
function liftClass(v) {
  if (!Array.isArray(v.lift_ci95)) return "";
  if (v.lift_ci95[0] > 0) return "up";
  if (v.lift_ci95[1] < 0) return "down";
  return "";
}

/**
 * @param {any} a
 * @param {Map<string, string>} colors
 */
function chartsCard(a, colors) {
  const daily = a.daily ?? [];
  if (daily.length === 0) return null;
  const names = (a.variants ?? []).map((/** @type {any} */ v) => v.name);
  const dates = daily.map((/** @type {any} */ d) => d.date);
  /**
   * @param {string} name
   * @param {"cumulative_users" | "mean"} field
   */
  const values = (name, field) =>
    daily.map((/** @type {any} */ d) => {
      const v = (d.variants ?? []).find((/** @type {any} */ x) => x.name === name);
      return v && typeof v[field] === "number" ? v[field] : null;
    });
  const kind = (a.metrics ?? []).find((/** @type {any} */ m) => m.name === a.key_metric)?.kind;
  const meanFormat = kind === "conversion" ? (/** @type {number} */ y) => formatShare(y, y < 0.1 && y > 0 ? 1 : 0) : formatStat;
  const series = (/** @type {"cumulative_users" | "mean"} */ field) =>
    names.map((/** @type {string} */ name) => ({ name, color: colors.get(name) ?? "#333", values: values(name, field) }));
  const metricLabel = a.key_metric ?? "key metric";
  return h(
    "section",
    { class: "card", "aria-labelledby": "charts-title" },
    h("div", { class: "card-head" }, h("h3", { id: "charts-title" }, "Over time"), legend(names.map((/** @type {string} */ name) => ({ name, color: colors.get(name) ?? "#333" })))),
    h(
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
    ),
    h(
      "details",
      { class: "daily" },
      h("summary", {}, "Daily figures as a table"),
      scrollTable(
        "Daily figures",
        h(
          "table",
          { class: "numbers" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              h("th", { scope: "col" }, "Date"),
              names.map((/** @type {string} */ n) => [h("th", { scope: "col" }, `${n} users`), h("th", { scope: "col" }, `${n} mean`)]),
            ),
          ),
          h(
            "tbody",
            {},
            daily.map((/** @type {any} */ d) =>
              h(
                "tr",
                {},
                h("th", { scope: "row" }, d.date),
                names.map((/** @type {string} */ n) => {
                  const v = (d.variants ?? []).find((/** @type {any} */ x) => x.name === n);
                  return [h("td", {}, formatInteger(v?.cumulative_users)), h("td", {}, formatStat(v?.mean))];
                }),
              )
            ),
          ),
        ),
      ),
    ),
  );
}

/** @param {any} a */
function metricsCard(a) {
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
            h("th", { scope: "col" }, "Metric"),
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
            (m.variants ?? []).map((/** @type {any} */ v, /** @type {number} */ i) =>
              h(
                "tr",
                { dataset: { variant: v.name } },
                i === 0
                  ? h(
                    "th",
                    { scope: "rowgroup", rowspan: m.variants.length, class: "metric-cell" },
                    h("span", { class: "metric-name" }, m.name),
                    h("span", { class: "tag" }, m.kind),
                    m.name === a.key_metric ? h("span", { class: "tag tag-key" }, "key") : null,
                  )
                  : null,
                h("td", { class: "variant-cell" }, v.name),
                h("td", { dataset: { cell: "users" } }, formatInteger(v.users)),
                h("td", { dataset: { cell: "mean" } }, m.kind === "conversion" ? formatShare(v.mean, 2) : formatStat(v.mean)),
                h("td", { dataset: { cell: "variance" } }, formatStat(v.variance)),
              )
            ),
          )
        ),
      ),
    ),
  );
}
