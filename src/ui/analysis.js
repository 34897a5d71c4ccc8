/**
 * The analysis of one experiment as the page shows it: dataset facts, the decision on the key
 * metric, the SRM verdict, the accumulated sample against its target, every metric's lift over
 * the control with its intervals, the win probability, charts over time, the per-metric table,
 * and the states before and around it (loading, pending, failed, the errors of the analysis page:
 * 404 no dataset, 400 over the limit).
 */
import { ApiError, datasetPath, download } from "./api.js";
import { colorOf } from "./charts.js";
import { comparisonsCard } from "./comparisons_card.js";
import { decisionCard } from "./decision_card.js";
import { h, replace } from "./dom.js";
import { formatDateTime, formatInteger, formatSize } from "./format.js";
import { breakdownCard, healthCard } from "./health_card.js";
import { historyCard } from "./history_card.js";
import { metricsCard } from "./metrics_card.js";
import { overTimeCard } from "./over_time_card.js";
import { sampleCard } from "./sample_card.js";
import { resetSettingsButton, settingsCard } from "./settings.js";
import { srmCard } from "./srm_card.js";
import { statusBadge } from "./widgets.js";
import { winCard } from "./win_card.js";

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
      h(
        "div",
        { class: "progress indeterminate", "aria-hidden": "true" },
        h("div", { class: "progress-fill" }),
      ),
    ),
  );
}

/**
 * The analysis errors (404 no dataset, 400 over the limit) and the rest, in words.
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
      h(
        "h2",
        { class: "error-title" },
        "No dataset for this experiment_id — check that the PUT finished with 200",
      ),
      h(
        "p",
        {},
        "Nothing is stored for “",
        h("code", {}, id),
        "”. A two-step delivery is stored only when the PUT to the upload URL answers 200 (a direct upload answers 201). " +
          "Check the spelling of the experiment_id and that the delivery used this organization's key.",
      ),
      h(
        "p",
        { class: "muted" },
        "This page keeps watching: the analysis appears here by itself once the dataset arrives.",
      ),
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
        h(
          "li",
          {},
          "or split it over several experiment_ids (for instance one per period) and deliver each part.",
        ),
      ),
      h(
        "p",
        { class: "muted" },
        "Files over the limit are not analysed and are deleted automatically within 6 hours.",
      ),
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
    h("div", {
      class: "card problem",
      role: "alert",
      dataset: { status: String(e.status), code: e.code },
    }, body),
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
    h(
      "div",
      { class: "result-title" },
      h("h2", { id: "result-title" }, a.experiment_id),
      statusBadge(a.status),
    ),
    h(
      "dl",
      { class: "facts" },
      fact("Size", formatSize(d.size_bytes), "size"),
      fact("Rows", formatInteger(d.rows), "rows"),
      fact(
        "Delivered",
        d.delivered_at
          ? h(
            "time",
            { datetime: d.delivered_at, title: d.delivered_at },
            formatDateTime(d.delivered_at),
          )
          : "—",
        "delivered",
      ),
      a.status === "ready" ? fact("Users", formatInteger(a.sample?.total_users), "users") : null,
      a.status === "ready" ? fact("Key metric", a.key_metric ?? "—", "key-metric") : null,
      a.status === "ready" ? fact("Control", a.control ?? "—", "control") : null,
    ),
  );
}

/**
 * The download buttons of the two CSV exports; a failure is said next to them.
 * @param {any} a a ready analysis
 */
function downloads(a) {
  const status = h("span", { class: "download-status muted small", role: "status" });
  /**
   * @param {string} id
   * @param {string} label
   * @param {string} path
   */
  const button = (id, label, path) =>
    h("button", {
      id,
      type: "button",
      class: "quiet",
      onclick: async () => {
        status.textContent = "";
        try {
          const name = await download(`${datasetPath(a.experiment_id)}${path}`);
          status.textContent = `Downloaded ${name}`;
        } catch (error) {
          status.textContent = `The download failed: ${
            error instanceof Error ? error.message : String(error)
          }`;
        }
      },
    }, label);
  return h(
    "div",
    { class: "downloads", role: "group", "aria-label": "Downloads" },
    button("download-analysis", "Analysis as CSV", "analysis/?format=csv"),
    button("download-history", "History as CSV", "history/?format=csv"),
    status,
  );
}

/**
 * @param {HTMLElement} root
 * @param {any} a a pending analysis
 * @param {any} previous the last ready analysis of the same experiment, or null
 */
export function renderPending(root, a, previous) {
  keepDirtyForm(root, a.experiment_id);
  if (previous && previous.experiment_id === a.experiment_id) {
    const view = readyView({ ...previous, status: "pending" }, null);
    view.classList.add("stale");
    replace(
      root,
      h(
        "div",
        { class: "banner", role: "status" },
        h(
          "div",
          { class: "progress indeterminate", "aria-hidden": "true" },
          h("div", { class: "progress-fill" }),
        ),
        h(
          "p",
          {},
          h("strong", {}, "Re-analysing… "),
          "the figures below are from the previous analysis and update by themselves.",
        ),
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
      h(
        "div",
        { class: "progress indeterminate", "aria-hidden": "true" },
        h("div", { class: "progress-fill" }),
      ),
      h(
        "p",
        { class: "muted" },
        "This usually takes a second or two for a small file; the result appears here by itself.",
      ),
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
 * A settings form with unsaved edits, kept while the re-analysing view (without a form) is shown,
 * for the ready view that follows.
 * @type {HTMLFormElement | null}
 */
let keptForm = null;

/**
 * @param {HTMLElement} root
 * @param {string} experimentId
 */
function keepDirtyForm(root, experimentId) {
  const form = root.querySelector("form.settings-form");
  if (form instanceof HTMLFormElement && form.dataset.dirty === "true") keptForm = form;
  else if (keptForm?.dataset.experiment !== experimentId) keptForm = null;
}

/**
 * @param {HTMLElement} root
 * @param {any} a a ready analysis
 * @param {{ saved: Record<string, unknown>, flash: string, onSaved: (message: string) => void }} options
 */
export function renderReady(root, a, options) {
  // A re-render (new delivery, settings saved) keeps unsaved edits and the reader's place, also
  // across the re-analysing view between them, which has no form.
  const oldForm = root.querySelector("form.settings-form") ?? keptForm;
  keptForm = null;
  const sameExperiment = oldForm instanceof HTMLFormElement &&
    oldForm.dataset.experiment === a.experiment_id;
  const focusedId = root.contains(document.activeElement) ? document.activeElement?.id : "";
  const view = readyView(a, options);
  if (sameExperiment && oldForm.dataset.dirty === "true") {
    view.querySelector("form.settings-form")?.replaceWith(oldForm);
  }
  replace(root, view);
  if (focusedId) {
    /** @type {HTMLElement | null} */ (root.querySelector(`#${CSS.escape(focusedId)}`))?.focus();
  }
}

/**
 * @param {any} a
 * @param {{ saved: Record<string, unknown>, flash: string, onSaved: (message: string) => void } | null} options
 *   null for a view without the settings form (while re-analysing)
 */
function readyView(a, options) {
  const colors = new Map(
    (a.variants ?? []).map((/** @type {any} */ v, /** @type {number} */ i) => [v.name, colorOf(i)]),
  );
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
    downloads(a),
    decisionCard(a),
    h("div", { class: "cards" }, srmCard(a), sampleCard(a, options?.saved ?? {})),
    healthCard(a),
    breakdownCard(a),
    // The Bayesian view puts the chances before the intervals.
    a.inference === "bayesian"
      ? [winCard(a), comparisonsCard(a, colors)]
      : [comparisonsCard(a, colors), winCard(a)],
    overTimeCard(a, colors),
    historyCard(a, colors),
    metricsCard(a),
    options ? settingsCard(a, options.saved, options.flash, options.onSaved) : null,
  );
}
