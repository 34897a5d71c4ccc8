/**
 * The analysis settings of an experiment (`PUT /datasets/{experiment_id}/settings/`): key metric,
 * control, expected split, the target sample from an MDE or as a number of users, the view the
 * page leads with and the sequential tuning, and per metric: lower is better, a CUPED covariate
 * column and a cap. Fields the form does not show (alpha, power, metric kinds) are kept as they
 * were saved; a field the reader left at its default is not pinned.
 */
import { api, ApiError, datasetPath, keyScopes } from "./api.js";
import { h } from "./dom.js";
import { settingsBody } from "./settings_body.js";
import { settingsFields, settingsGrid } from "./settings_fields.js";

/**
 * @param {string} experimentId
 * @param {Record<string, unknown>} body
 */
function save(experimentId, body) {
  return api(`${datasetPath(experimentId)}settings/`, { method: "PUT", body });
}

/** The line that says why the settings cannot be changed with this key. */
function needsWrite() {
  return h(
    "p",
    { class: "muted", id: "settings-scope" },
    "Changing settings needs a key with the write scope; this key may ",
    keyScopes().join(", ") || "do nothing",
    ".",
  );
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
    disabled: !keyScopes().includes("write"),
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
  return h(
    "section",
    { class: "card settings", "aria-labelledby": "settings-title" },
    h("h3", { id: "settings-title" }, "Analysis settings"),
    h(
      "p",
      { class: "muted" },
      Object.keys(saved).length > 0
        ? "Saved for this experiment; they survive new deliveries."
        : "Defaults: the first variant is the control, the first metric column the key metric, an equal split, MDE 5 %.",
    ),
    settingsForm(a, saved, flash, onSaved),
  );
}

/**
 * @typedef {object} FormParts
 * @property {HTMLFormElement} form
 * @property {HTMLButtonElement} submit
 * @property {HTMLElement} error where what is wrong is shown
 * @property {HTMLElement} ok where a save is confirmed
 */

/**
 * The form: its fields, and the save button with what it answered.
 * @param {any} a
 * @param {Record<string, any>} saved
 * @param {string} flash
 * @param {(message: string) => void} onSaved
 */
function settingsForm(a, saved, flash, onSaved) {
  const fields = settingsFields(a, saved);
  const error = h("p", { class: "form-error", role: "alert", id: "settings-error" });
  const ok = h("p", { class: "form-ok", role: "status", id: "settings-status" }, flash);
  const canWrite = keyScopes().includes("write");
  const submit = h(
    "button",
    { type: "submit", class: "primary", id: "settings-save", disabled: !canWrite },
    "Save and re-analyse",
  );
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
      onsubmit: (/** @type {SubmitEvent} */ event) => {
        event.preventDefault();
        const parts = { form, submit, error, ok };
        submitSettings(parts, () => settingsBody(a, saved, fields), a.experiment_id, onSaved);
      },
    },
    // Without the write scope the form shows the settings but cannot change them.
    h("fieldset", { class: "settings-fields", disabled: !canWrite }, settingsGrid(fields)),
    h(
      "div",
      { class: "actions" },
      canWrite ? null : needsWrite(),
      submit,
      Object.keys(saved).length > 0 ? resetSettingsButton(a.experiment_id, onSaved) : null,
      error,
      ok,
    ),
  );
  return form;
}

/**
 * Saves what the form holds, or shows what is wrong with it; the button is disabled while saving.
 * @param {FormParts} parts
 * @param {() => Record<string, unknown> | string} build the body to save, or what is wrong
 * @param {string} experimentId
 * @param {(message: string) => void} onSaved
 */
async function submitSettings(parts, build, experimentId, onSaved) {
  const { form, submit, error, ok } = parts;
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
    await save(experimentId, body);
    form.dataset.dirty = "false";
    ok.textContent = "Saved. Re-analysing…";
    onSaved("Settings saved: the result above uses them.");
  } catch (e) {
    error.textContent = e instanceof ApiError ? e.message : String(e);
  } finally {
    submit.disabled = false;
    submit.textContent = "Save and re-analyse";
  }
}
