/**
 * The controls of the settings form, filled in from the analysis and the saved settings, and the
 * groups that lay them out: key metric and control, the expected split, the target sample (from
 * an MDE or a number of users), the inference the page leads with, and the per-metric settings.
 */
import { h } from "./dom.js";

/**
 * @typedef {object} MetricFields
 * @property {string} name the metric
 * @property {HTMLInputElement} lower "lower is better"
 * @property {HTMLInputElement} covariate the CUPED covariate column
 * @property {HTMLInputElement | null} cap the winsorizing percentile (numeric metrics only)
 */

/**
 * @typedef {object} SettingsFields
 * @property {string[]} variants
 * @property {HTMLSelectElement} keyMetric
 * @property {HTMLSelectElement} control
 * @property {HTMLInputElement[]} shares one per variant: its expected share in %
 * @property {HTMLInputElement} modeMde the radio for a target from an MDE
 * @property {HTMLInputElement} modeUsers the radio for a fixed number of users
 * @property {HTMLInputElement} mde in % relative
 * @property {HTMLInputElement} target users per variant
 * @property {HTMLSelectElement} inference
 * @property {HTMLInputElement} tuning the sequential tuning, in users
 * @property {MetricFields[]} perMetric one per metric
 */

/**
 * @param {number} x
 * @param {number} digits
 */
export function round(x, digits) {
  return Number(x.toFixed(digits));
}

/**
 * Every control of the form, showing the saved settings (or what the analysis used).
 * @param {any} a a ready analysis
 * @param {Record<string, any>} saved the saved settings
 * @returns {SettingsFields}
 */
export function settingsFields(a, saved) {
  const variants = (a.variants ?? []).map((/** @type {any} */ v) => /** @type {string} */ (v.name));
  return {
    variants,
    ...choiceFields(a, variants),
    shares: shareFields(variants, a.srm?.expected_split ?? {}),
    ...targetFields(a, saved),
    ...inferenceFields(saved),
    perMetric: metricFields(a.metrics ?? [], saved),
  };
}

/**
 * The key metric and control pickers, on the analysis' choice.
 * @param {any} a
 * @param {string[]} variants
 */
function choiceFields(a, variants) {
  const keyMetric = h(
    "select",
    { id: "set-key-metric", name: "key_metric" },
    (a.metrics ?? []).map((/** @type {any} */ m) =>
      h("option", { value: m.name, selected: m.name === a.key_metric }, `${m.name} (${m.kind})`)
    ),
  );
  const control = h(
    "select",
    { id: "set-control", name: "control" },
    variants.map((v) => h("option", { value: v, selected: v === a.control }, v)),
  );
  return { keyMetric, control };
}

/**
 * One share input per variant, in %: the expected split, or an equal one.
 * @param {string[]} variants
 * @param {Record<string, unknown>} expected shares of 1 by variant
 */
function shareFields(variants, expected) {
  return variants.map((v, i) => {
    const share = expected[v];
    return h("input", {
      id: `set-split-${i}`,
      type: "number",
      inputmode: "decimal",
      min: 0,
      max: 100,
      step: "any",
      required: true,
      value: typeof share === "number" ? round(share * 100, 4) : round(100 / variants.length, 4),
      dataset: { variant: v },
    });
  });
}

/**
 * The two ways to set the target sample, each a radio with its input; only the chosen input
 * is enabled.
 * @param {any} a
 * @param {Record<string, any>} saved
 */
function targetFields(a, saved) {
  const hasTarget = typeof saved.target_users_per_variant === "number";
  const modeMde = h("input", {
    type: "radio",
    name: "target_mode",
    id: "set-mode-mde",
    value: "mde",
    checked: !hasTarget,
  });
  const modeUsers = h("input", {
    type: "radio",
    name: "target_mode",
    id: "set-mode-users",
    value: "users",
    checked: hasTarget,
  });
  const mde = h("input", {
    id: "set-mde",
    type: "number",
    inputmode: "decimal",
    min: 0,
    max: 1000,
    step: "any",
    value: round((typeof saved.mde === "number" ? saved.mde : 0.05) * 100, 4),
    "aria-describedby": "set-mde-hint",
  });
  const target = h("input", {
    id: "set-target",
    type: "number",
    inputmode: "numeric",
    min: 1,
    step: 1,
    value: saved.target_users_per_variant ?? a.sample?.target_users_per_variant ?? "",
    "aria-describedby": "set-target-hint",
  });
  const syncMode = () => {
    mde.disabled = !modeMde.checked;
    target.disabled = !modeUsers.checked;
  };
  modeMde.addEventListener("change", syncMode);
  modeUsers.addEventListener("change", syncMode);
  syncMode();
  return { modeMde, modeUsers, mde, target };
}

/**
 * The view the page leads with and the sequential tuning.
 * @param {Record<string, any>} saved
 */
function inferenceFields(saved) {
  const inference = h(
    "select",
    { id: "set-inference", name: "inference", "aria-describedby": "set-inference-hint" },
    [
      ["sequential", "Always-valid decision (safe at every look)"],
      ["frequentist", "Fixed-horizon test (one look, at the planned sample)"],
      ["bayesian", "Chance to beat the control (Bayesian)"],
    ].map(([value, text]) =>
      h("option", { value, selected: value === (saved.inference ?? "sequential") }, text)
    ),
  );
  const tuning = h("input", {
    id: "set-tuning",
    type: "number",
    inputmode: "numeric",
    min: 1,
    step: "any",
    placeholder: "5000",
    value: saved.sequential_tuning ?? "",
    "aria-describedby": "set-tuning-hint",
  });
  return { inference, tuning };
}

/**
 * Per metric: lower is better, the covariate column and, for a numeric metric, the cap.
 * @param {any[]} metrics
 * @param {Record<string, any>} saved
 * @returns {MetricFields[]}
 */
function metricFields(metrics, saved) {
  /** @type {Record<string, string>} */
  const covariates = saved.covariates ?? {};
  /** @type {Record<string, number>} */
  const caps = saved.winsorize ?? {};
  /** @type {string[]} */
  const lower = saved.lower_is_better ?? [];
  return metrics.map((m, i) => ({
    name: /** @type {string} */ (m.name),
    lower: h("input", { type: "checkbox", id: `set-lower-${i}`, checked: lower.includes(m.name) }),
    covariate: h("input", {
      id: `set-covariate-${i}`,
      type: "text",
      spellcheck: "false",
      autocomplete: "off",
      value: Object.hasOwn(covariates, m.name) ? covariates[m.name] : "",
      placeholder: m.covariate ? `${m.covariate} (found)` : "none",
    }),
    cap: m.kind === "numeric"
      ? h("input", {
        id: `set-cap-${i}`,
        type: "number",
        inputmode: "decimal",
        min: 50,
        max: 100,
        step: "any",
        placeholder: "off",
        value: Object.hasOwn(caps, m.name) ? round(caps[m.name] * 100, 6) : "",
      })
      : null,
  }));
}

/**
 * A labelled control, with a hint below it when there is one.
 * @param {string} label
 * @param {HTMLElement} control
 * @param {string} id
 * @param {string} [hint]
 */
function field(label, control, id, hint) {
  return h(
    "div",
    { class: "field" },
    h("label", { for: id }, label),
    control,
    hint ? h("p", { class: "hint", id: `${id}-hint` }, hint) : null,
  );
}

/**
 * A radio or a checkbox with its label.
 * @param {HTMLInputElement} input
 * @param {string} label
 */
function choice(input, label) {
  return h("div", { class: "choice" }, input, h("label", { for: input.id }, label));
}

/**
 * A control nested under a choice, with its label and, when there is one, its hint.
 * @param {HTMLInputElement} input
 * @param {string} label
 * @param {string} [hint]
 */
function nested(input, label, hint) {
  return h(
    "div",
    { class: "field nested" },
    h("label", { for: input.id }, label),
    input,
    hint ? h("p", { class: "hint", id: `${input.id}-hint` }, hint) : null,
  );
}

/**
 * The form's groups, laid out on the settings grid.
 * @param {SettingsFields} fields
 */
export function settingsGrid(fields) {
  return h(
    "div",
    { class: "settings-grid" },
    field("Key metric", fields.keyMetric, "set-key-metric"),
    field("Control variant", fields.control, "set-control"),
    splitGroup(fields),
    targetGroup(fields),
    inferenceGroup(fields),
    perMetricGroup(fields.perMetric),
  );
}

/** @param {SettingsFields} fields */
function splitGroup(fields) {
  return h(
    "fieldset",
    { class: "split" },
    h("legend", {}, "Expected split, % of users"),
    h(
      "div",
      { class: "split-inputs" },
      fields.variants.map((v, i) =>
        h(
          "div",
          { class: "split-input" },
          h("label", { for: `set-split-${i}` }, v),
          fields.shares[i],
        )
      ),
    ),
  );
}

/** @param {SettingsFields} fields */
function targetGroup(fields) {
  return h(
    "fieldset",
    { class: "target" },
    h("legend", {}, "Target sample"),
    choice(fields.modeMde, "From a minimum detectable effect"),
    nested(
      fields.mde,
      "MDE, % relative",
      "The smallest relative change worth detecting: 5 means ±5 % of the control's mean.",
    ),
    choice(fields.modeUsers, "A fixed number of users"),
    nested(
      fields.target,
      "Target users per variant",
      "Used as it is, instead of a power calculation.",
    ),
  );
}

/** @param {SettingsFields} fields */
function inferenceGroup(fields) {
  return h(
    "fieldset",
    { class: "inference" },
    h("legend", {}, "Inference"),
    field(
      "Lead with",
      fields.inference,
      "set-inference",
      "What the page shows first. Only the always-valid decision may be read after every " +
        "delivery; the fixed-horizon test holds at the planned sample alone.",
    ),
    field(
      "Sequential tuning, users",
      fields.tuning,
      "set-tuning",
      "The total number of users where the always-valid interval is narrowest (default " +
        "5000): larger makes it narrower late and wider early.",
    ),
  );
}

/** @param {MetricFields[]} perMetric */
function perMetricGroup(perMetric) {
  return h(
    "fieldset",
    { class: "per-metric wide" },
    h("legend", {}, "Per metric"),
    perMetric.map((p) =>
      h(
        "div",
        { class: "metric-settings", dataset: { metric: p.name } },
        h("p", { class: "metric-settings-name" }, p.name),
        choice(p.lower, "Lower is better"),
        nested(p.covariate, "CUPED covariate column"),
        p.cap ? nested(p.cap, "Cap at percentile, %") : null,
      )
    ),
    h(
      "p",
      { class: "hint" },
      "A column named <metric>_pre is that metric's covariate unless another is named here; " +
        "a cap (e.g. 99) replaces each user's value above that percentile of all users by it.",
    ),
  );
}
