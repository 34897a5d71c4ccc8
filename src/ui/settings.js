/**
 * The analysis settings of an experiment (`PUT /datasets/{experiment_id}/settings/`): key metric,
 * control, expected split, the target sample from an MDE or as a number of users, the view the
 * page leads with and the sequential tuning, and per metric: lower is better, a CUPED covariate
 * column and a cap. Fields the form does not show (alpha, power, metric kinds) are kept as they
 * were saved; a field the reader left at its default is not pinned.
 */
import { api, ApiError, datasetPath } from "./api.js";
import { h } from "./dom.js";

/**
 * @param {number} x
 * @param {number} digits
 */
function round(x, digits) {
  return Number(x.toFixed(digits));
}

/**
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
 * @param {string} experimentId
 * @param {Record<string, unknown>} body
 */
function save(experimentId, body) {
  return api(`${datasetPath(experimentId)}settings/`, { method: "PUT", body });
}

/**
 * A button that puts the default settings back.
 * @param {string} experimentId
 * @param {(message: string) => void} onSaved
 */
export function resetSettingsButton(experimentId, onSaved) {
  const message = h("p", { class: "form-error", role: "alert" });
  const button = h("button", {
    type: "button",
    class: "quiet",
    onclick: async () => {
      button.disabled = true;
      try {
        await save(experimentId, {});
        onSaved("Settings reset to the defaults.");
      } catch (error) {
        message.textContent = error instanceof ApiError ? error.message : String(error);
        button.disabled = false;
      }
    },
  }, "Reset the settings to the defaults");
  return h("div", { class: "actions" }, button, message);
}

/**
 * @param {any} a a ready analysis
 * @param {Record<string, any>} saved the saved settings (`GET …/settings/`)
 * @param {string} flash a message to show (after a save), or ""
 * @param {(message: string) => void} onSaved
 */
export function settingsCard(a, saved, flash, onSaved) {
  const variants = (a.variants ?? []).map((/** @type {any} */ v) => v.name);
  const metrics = a.metrics ?? [];
  const keyMetric = h(
    "select",
    { id: "set-key-metric", name: "key_metric" },
    metrics.map((/** @type {any} */ m) =>
      h("option", { value: m.name, selected: m.name === a.key_metric }, `${m.name} (${m.kind})`)
    ),
  );
  const control = h(
    "select",
    { id: "set-control", name: "control" },
    variants.map((/** @type {string} */ v) =>
      h("option", { value: v, selected: v === a.control }, v)
    ),
  );
  const expected = a.srm?.expected_split ?? {};
  const shareInputs = variants.map((/** @type {string} */ v, /** @type {number} */ i) =>
    h("input", {
      id: `set-split-${i}`,
      type: "number",
      inputmode: "decimal",
      min: 0,
      max: 100,
      step: "any",
      required: true,
      value: typeof expected[v] === "number"
        ? round(expected[v] * 100, 4)
        : round(100 / variants.length, 4),
      dataset: { variant: v },
    })
  );
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
  /** @type {Record<string, string>} */
  const savedCovariates = saved.covariates ?? {};
  /** @type {Record<string, number>} */
  const savedCaps = saved.winsorize ?? {};
  /** @type {string[]} */
  const savedLower = saved.lower_is_better ?? [];
  /** @type {{ name: string, lower: HTMLInputElement, covariate: HTMLInputElement, cap: HTMLInputElement | null }[]} */
  const perMetric = metrics.map((/** @type {any} */ m, /** @type {number} */ i) => ({
    name: /** @type {string} */ (m.name),
    lower: h("input", {
      type: "checkbox",
      id: `set-lower-${i}`,
      checked: savedLower.includes(m.name),
    }),
    covariate: h("input", {
      id: `set-covariate-${i}`,
      type: "text",
      spellcheck: "false",
      autocomplete: "off",
      value: Object.hasOwn(savedCovariates, m.name) ? savedCovariates[m.name] : "",
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
        value: Object.hasOwn(savedCaps, m.name) ? round(savedCaps[m.name] * 100, 6) : "",
      })
      : null,
  }));
  const hasSaved = Object.keys(saved).length > 0;
  const error = h("p", { class: "form-error", role: "alert", id: "settings-error" });
  const ok = h("p", { class: "form-ok", role: "status", id: "settings-status" }, flash);
  const submit = h(
    "button",
    { type: "submit", class: "primary", id: "settings-save" },
    "Save and re-analyse",
  );

  const syncMode = () => {
    mde.disabled = !modeMde.checked;
    target.disabled = !modeUsers.checked;
  };
  modeMde.addEventListener("change", syncMode);
  modeUsers.addEventListener("change", syncMode);
  syncMode();

  /** @returns {Record<string, unknown> | string} the body to save, or what is wrong */
  const build = () => {
    /** @type {Record<string, unknown>} */
    const next = { ...saved };
    if (keyMetric.value !== a.key_metric || "key_metric" in saved) {
      next.key_metric = keyMetric.value;
    }
    if (control.value !== a.control || "control" in saved) next.control = control.value;
    const shares = shareInputs.map((/** @type {HTMLInputElement} */ input) => input.valueAsNumber);
    if (shares.some((/** @type {number} */ x) => !Number.isFinite(x) || x <= 0)) {
      return "Enter a share above 0 for every variant.";
    }
    const sum = shares.reduce((/** @type {number} */ t, /** @type {number} */ x) => t + x, 0);
    if (Math.abs(sum - 100) > 0.01) {
      return `The expected shares add up to ${round(sum, 4)} %, not 100 %.`;
    }
    // Equal as shown: the form writes shares with 4 decimals (33.3333 for three variants).
    const equal = shares.every((/** @type {number} */ x) =>
      Math.abs(x - 100 / shares.length) < 5e-4
    );
    if (!equal || "expected_split" in saved) {
      next.expected_split = Object.fromEntries(
        variants.map((/** @type {string} */ v, /** @type {number} */ i) => [v, shares[i] / sum]),
      );
    }
    if (inference.value !== "sequential" || "inference" in saved) {
      next.inference = inference.value;
    }
    // Text the field cannot read as a number (`12e`) leaves its value empty: refused, not cleared.
    if (tuning.value.trim() === "" && !tuning.validity.badInput) {
      delete next.sequential_tuning;
    } else {
      const value = tuning.valueAsNumber;
      if (!Number.isFinite(value) || value < 1) {
        return "The sequential tuning must be a number of users, 1 or more.";
      }
      next.sequential_tuning = value;
    }
    const listed = new Set(perMetric.map((p) => p.name));
    const lower = perMetric.filter((p) => p.lower.checked).map((p) => p.name);
    const keptLower = savedLower.filter((name) => !listed.has(name));
    if (lower.length + keptLower.length > 0) next.lower_is_better = [...keptLower, ...lower];
    else delete next.lower_is_better;
    /** @type {Record<string, string>} */
    const covariates = {};
    /** @type {Record<string, number>} */
    const caps = {};
    for (const [name, column] of Object.entries(savedCovariates)) {
      if (!listed.has(name)) covariates[name] = column;
    }
    for (const [name, cap] of Object.entries(savedCaps)) if (!listed.has(name)) caps[name] = cap;
    for (const p of perMetric) {
      const column = p.covariate.value.trim();
      if (column !== "") covariates[p.name] = column;
      if (p.cap && (p.cap.value.trim() !== "" || p.cap.validity.badInput)) {
        const percent = p.cap.valueAsNumber;
        if (!Number.isFinite(percent) || percent <= 50 || percent >= 100) {
          return `The cap of ${p.name} must be a percentile above 50 and below 100 (e.g. 99).`;
        }
        caps[p.name] = round(percent / 100, 10);
      }
    }
    if (Object.keys(covariates).length > 0) next.covariates = covariates;
    else delete next.covariates;
    if (Object.keys(caps).length > 0) next.winsorize = caps;
    else delete next.winsorize;
    if (modeMde.checked) {
      const value = mde.valueAsNumber;
      if (!Number.isFinite(value) || value <= 0 || value > 1000) {
        return "The minimum detectable effect must be a percentage above 0 and at most 1000.";
      }
      if ("mde" in saved || Math.abs(value - 5) > 1e-9) next.mde = value / 100;
      delete next.target_users_per_variant;
    } else {
      const value = target.valueAsNumber;
      if (!Number.isSafeInteger(value) || value < 1) {
        return "The target must be a whole number of users, at least 1.";
      }
      next.target_users_per_variant = value;
    }
    return next;
  };

  const form = h(
    "form",
    {
      class: "settings-form",
      dataset: { experiment: a.experiment_id },
      novalidate: true,
      oninput: () => {
        form.dataset.dirty = "true";
        ok.textContent = "";
      },
      onsubmit: async (/** @type {SubmitEvent} */ event) => {
        event.preventDefault();
        error.textContent = "";
        ok.textContent = "";
        const body = build();
        if (typeof body === "string") {
          error.textContent = body;
          return;
        }
        submit.disabled = true;
        submit.textContent = "Saving…";
        try {
          await save(a.experiment_id, body);
          form.dataset.dirty = "false";
          ok.textContent = "Saved. Re-analysing…";
          onSaved("Settings saved: the result above uses them.");
        } catch (e) {
          error.textContent = e instanceof ApiError ? e.message : String(e);
        } finally {
          submit.disabled = false;
          submit.textContent = "Save and re-analyse";
        }
      },
    },
    h(
      "div",
      { class: "settings-grid" },
      field("Key metric", keyMetric, "set-key-metric"),
      field("Control variant", control, "set-control"),
      h(
        "fieldset",
        { class: "split" },
        h("legend", {}, "Expected split, % of users"),
        h(
          "div",
          { class: "split-inputs" },
          variants.map((/** @type {string} */ v, /** @type {number} */ i) =>
            h(
              "div",
              { class: "split-input" },
              h("label", { for: `set-split-${i}` }, v),
              shareInputs[i],
            )
          ),
        ),
      ),
      h(
        "fieldset",
        { class: "target" },
        h("legend", {}, "Target sample"),
        h(
          "div",
          { class: "choice" },
          modeMde,
          h("label", { for: "set-mode-mde" }, "From a minimum detectable effect"),
        ),
        h(
          "div",
          { class: "field nested" },
          h("label", { for: "set-mde" }, "MDE, % relative"),
          mde,
          h(
            "p",
            { class: "hint", id: "set-mde-hint" },
            "The smallest relative change worth detecting: 5 means ±5 % of the control's mean.",
          ),
        ),
        h(
          "div",
          { class: "choice" },
          modeUsers,
          h("label", { for: "set-mode-users" }, "A fixed number of users"),
        ),
        h(
          "div",
          { class: "field nested" },
          h("label", { for: "set-target" }, "Target users per variant"),
          target,
          h(
            "p",
            { class: "hint", id: "set-target-hint" },
            "Used as it is, instead of a power calculation.",
          ),
        ),
      ),
      h(
        "fieldset",
        { class: "inference" },
        h("legend", {}, "Inference"),
        field(
          "Lead with",
          inference,
          "set-inference",
          "What the page shows first. Only the always-valid decision may be read after every " +
            "delivery; the fixed-horizon test holds at the planned sample alone.",
        ),
        field(
          "Sequential tuning, users",
          tuning,
          "set-tuning",
          "The total number of users where the always-valid interval is narrowest (default " +
            "5000): larger makes it narrower late and wider early.",
        ),
      ),
      h(
        "fieldset",
        { class: "per-metric wide" },
        h("legend", {}, "Per metric"),
        perMetric.map((p) =>
          h(
            "div",
            { class: "metric-settings", dataset: { metric: p.name } },
            h("p", { class: "metric-settings-name" }, p.name),
            h(
              "div",
              { class: "choice" },
              p.lower,
              h("label", { for: p.lower.id }, "Lower is better"),
            ),
            h(
              "div",
              { class: "field nested" },
              h("label", { for: p.covariate.id }, "CUPED covariate column"),
              p.covariate,
            ),
            p.cap
              ? h(
                "div",
                { class: "field nested" },
                h("label", { for: p.cap.id }, "Cap at percentile, %"),
                p.cap,
              )
              : null,
          )
        ),
        h(
          "p",
          { class: "hint" },
          "A column named <metric>_pre is that metric's covariate unless another is named here; " +
            "a cap (e.g. 99) replaces each user's value above that percentile of all users by it.",
        ),
      ),
    ),
    h(
      "div",
      { class: "actions" },
      submit,
      hasSaved ? resetSettingsButton(a.experiment_id, onSaved) : null,
      error,
      ok,
    ),
  );
  return h(
    "section",
    { class: "card settings", "aria-labelledby": "settings-title" },
    h("h3", { id: "settings-title" }, "Analysis settings"),
    h(
      "p",
      { class: "muted" },
      hasSaved
        ? "Saved for this experiment; they survive new deliveries."
        : "Defaults: the first variant is the control, the first metric column the key metric, an equal split, MDE 5 %.",
    ),
    form,
  );
}
