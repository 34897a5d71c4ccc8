/**
 * Data Preparation → Get via API: the organization's experiments (kept in sync by polling), the
 * experiment_id field with its Load button, and the analysis of the loaded experiment, which
 * updates itself while it is pending and after every new delivery.
 */
import { api, ApiError, datasetPath } from "./api.js";
import { h, replace } from "./dom.js";
import { formatDateTime, formatSize } from "./format.js";
import {
  renderEmpty,
  renderFailed,
  renderLoadError,
  renderLoading,
  renderPending,
  renderReady,
} from "./analysis.js";
import { pageHead, statusBadge } from "./widgets.js";

const LIST_INTERVAL_MS = 3000;
const PENDING_INTERVAL_MS = 1000;
const ERROR_RETRY_MS = 5000;
const EXPERIMENT_ID = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * @typedef {object} DatasetEntry
 * @property {string} experiment_id
 * @property {number} size_bytes
 * @property {string} updated_at
 * @property {string} etag
 * @property {string} analysis_status
 */

/**
 * The experiment's saved settings ({} when none, or when they cannot be read just now).
 * @param {string} experimentId
 * @returns {Promise<Record<string, unknown>>}
 */
async function savedSettings(experimentId) {
  try {
    return (await api(`${datasetPath(experimentId)}settings/`)) ?? {};
  } catch {
    return {};
  }
}

/** @param {DatasetEntry | undefined} entry */
function signature(entry) {
  return entry ? `${entry.etag}|${entry.analysis_status}` : "none";
}

export class GetViaApiPage {
  /** @type {HTMLInputElement} */
  #input;
  /** @type {HTMLElement} */
  #list;
  /** @type {HTMLElement} */
  #sync;
  /** @type {HTMLElement} */
  #result;
  /** @type {HTMLElement} */
  #announce;
  /** @type {HTMLElement} */
  #inputError;
  #stopped = false;
  #listRendered = "";
  /** Signature of every experiment in the last list: a change reloads the loaded one. */
  #seen = new Map();
  #current = "";
  #token = 0;
  /** @type {number | undefined} */
  #listTimer;
  /** @type {number | undefined} */
  #analysisTimer;
  /** The last ready analysis of the loaded experiment, shown dimmed while it is re-analysed. */
  /** @type {any} */
  #lastReady = null;
  /** A message for the settings form after a save. */
  #flash = "";
  /** The id of the control to focus once the result is back (after a save). */
  #refocus = "";
  #onVisible = () => {
    if (!document.hidden) this.#pollList();
  };

  /** @param {HTMLElement} main */
  constructor(main) {
    this.#input = h("input", {
      id: "experiment-id",
      name: "experiment_id",
      type: "text",
      autocomplete: "off",
      spellcheck: "false",
      autocapitalize: "off",
      maxlength: 128,
      placeholder: "e.g. checkout_test",
      "aria-describedby": "experiment-id-hint experiment-id-error",
    });
    this.#inputError = h("p", { id: "experiment-id-error", class: "form-error", role: "alert" });
    this.#list = h("div", { class: "experiments-body" }, h("p", { class: "muted" }, "Loading…"));
    this.#sync = h("span", { class: "sync muted" });
    this.#result = h("section", {
      id: "result",
      class: "result",
      "aria-label": "Analysis",
      tabindex: "-1",
    });
    this.#announce = h("p", { class: "visually-hidden", role: "status" });
    const form = h(
      "form",
      { class: "load-form", onsubmit: (/** @type {SubmitEvent} */ e) => this.#submit(e) },
      h("label", { for: "experiment-id" }, "experiment_id"),
      h(
        "div",
        { class: "input-row" },
        this.#input,
        h("button", { type: "submit", class: "primary", id: "load" }, "Load"),
      ),
      h(
        "p",
        { id: "experiment-id-hint", class: "hint" },
        "Letters, digits, “.”, “_” and “-”, up to 128 characters.",
      ),
      this.#inputError,
    );
    replace(
      main,
      pageHead("Data Preparation", "Get via API"),
      h(
        "div",
        { class: "gva" },
        h(
          "div",
          { class: "gva-side" },
          h(
            "section",
            { class: "card", "aria-labelledby": "load-title" },
            h("h2", { id: "load-title" }, "Load an experiment"),
            form,
          ),
          h(
            "section",
            { class: "card experiments", "aria-labelledby": "experiments-title" },
            h(
              "div",
              { class: "card-head" },
              h("h2", { id: "experiments-title" }, "Experiments"),
              this.#sync,
            ),
            this.#list,
          ),
        ),
        this.#result,
      ),
      this.#announce,
    );
    renderEmpty(this.#result);
    document.addEventListener("visibilitychange", this.#onVisible);
    this.#pollList();
  }

  /**
   * Shows the experiment the address names ("" for none).
   * @param {string} experimentId
   */
  show(experimentId) {
    if (experimentId === this.#current && experimentId !== "") return;
    this.#input.value = experimentId;
    if (experimentId === "") {
      this.#current = "";
      this.#token++;
      clearTimeout(this.#analysisTimer);
      this.#markCurrent();
      renderEmpty(this.#result);
      document.title = "Get via API — abn";
      return;
    }
    this.#load(experimentId, { quiet: false });
  }

  stop() {
    this.#stopped = true;
    this.#token++;
    clearTimeout(this.#listTimer);
    clearTimeout(this.#analysisTimer);
    document.removeEventListener("visibilitychange", this.#onVisible);
  }

  /** @param {SubmitEvent} event */
  #submit(event) {
    event.preventDefault();
    const id = this.#input.value.trim();
    this.#input.value = id;
    if (!EXPERIMENT_ID.test(id)) {
      this.#inputError.textContent = id === ""
        ? "Enter an experiment_id."
        : "Invalid experiment_id: use only A-Z, a-z, 0-9, “.”, “_” and “-” (no spaces or “/”), at most 128 characters.";
      this.#input.setAttribute("aria-invalid", "true");
      this.#input.focus();
      return;
    }
    this.#open(id);
  }

  /**
   * Loads an experiment the reader asked for (Load, or a click in the list).
   * @param {string} id
   */
  #open(id) {
    this.#inputError.textContent = "";
    this.#input.setAttribute("aria-invalid", "false");
    this.#input.value = id;
    const target = `#/get-via-api/${encodeURIComponent(id)}`;
    if (location.hash === target) this.#load(id, { quiet: false });
    else location.hash = target;
    if (globalThis.matchMedia("(max-width: 899px)").matches) {
      this.#result.scrollIntoView({ block: "start" });
    }
  }

  /**
   * @param {string} id
   * @param {{ quiet: boolean }} options quiet keeps what is shown until the answer comes
   */
  async #load(id, options) {
    const token = ++this.#token;
    clearTimeout(this.#analysisTimer);
    if (id !== this.#current) {
      this.#lastReady = null;
      this.#flash = "";
    }
    this.#current = id;
    this.#markCurrent();
    document.title = `${id} — Get via API — abn`;
    if (!options.quiet) renderLoading(this.#result, id);
    /** @type {any} */
    let analysis;
    try {
      analysis = await api(`${datasetPath(id)}analysis/`);
    } catch (error) {
      if (token !== this.#token) return;
      this.#lastReady = null;
      // No dataset yet: the next list that has one reloads it, even before a list saw it absent.
      if (error instanceof ApiError && error.status === 404) this.#seen.set(id, "none");
      renderLoadError(this.#result, id, error);
      this.#say(`${id}: ${error instanceof ApiError ? error.message : String(error)}`);
      // A network failure or a 5xx is retried; 4xx answers wait for the list to change.
      if (!(error instanceof ApiError) || error.status === 0 || error.status >= 500) {
        this.#analysisTimer = setTimeout(() => this.#load(id, { quiet: true }), ERROR_RETRY_MS);
      }
      return;
    }
    if (token !== this.#token) return;
    if (analysis.status === "ready") {
      const saved = await savedSettings(id);
      if (token !== this.#token) return;
      const isNew = this.#lastReady === null ||
        this.#lastReady.dataset?.etag !== analysis.dataset?.etag;
      this.#lastReady = analysis;
      renderReady(this.#result, analysis, {
        saved,
        flash: this.#flash,
        onSaved: (/** @type {string} */ message) => {
          this.#flash = message;
          this.#refocus = "settings-save";
          this.#load(id, { quiet: true });
        },
      });
      this.#flash = "";
      if (this.#refocus) document.getElementById(this.#refocus)?.focus();
      this.#refocus = "";
      if (isNew || !options.quiet) this.#say(`Analysis of ${id} is ready.`);
    } else if (analysis.status === "pending") {
      renderPending(this.#result, analysis, this.#lastReady);
      this.#say(`Analysing ${id}…`);
      this.#analysisTimer = setTimeout(() => this.#load(id, { quiet: true }), PENDING_INTERVAL_MS);
    } else {
      this.#lastReady = null;
      const saved = await savedSettings(id);
      if (token !== this.#token) return;
      renderFailed(this.#result, analysis, {
        saved,
        onSaved: () => this.#load(id, { quiet: true }),
      });
      this.#say(`The analysis of ${id} failed.`);
    }
  }

  /** @param {string} text */
  #say(text) {
    if (this.#announce.textContent !== text) this.#announce.textContent = text;
  }

  async #pollList() {
    clearTimeout(this.#listTimer);
    if (this.#stopped) return;
    if (!document.hidden) {
      try {
        const datasets = await this.#fetchList();
        if (this.#stopped) return;
        this.#renderList(datasets);
        this.#sync.textContent = `Synced ${new Date().toLocaleTimeString()}`;
        this.#sync.classList.remove("sync-error");
      } catch (error) {
        if (this.#stopped) return;
        this.#sync.textContent = error instanceof ApiError && error.status === 0
          ? "Offline — retrying"
          : "Refresh failed — retrying";
        this.#sync.classList.add("sync-error");
      }
    }
    this.#listTimer = setTimeout(() => this.#pollList(), LIST_INTERVAL_MS);
  }

  /** @returns {Promise<DatasetEntry[]>} */
  async #fetchList() {
    /** @type {DatasetEntry[]} */
    const all = [];
    let cursor = null;
    for (let page = 0; page < 10; page++) {
      const query = cursor ? `?cursor=${encodeURIComponent(cursor)}` : "";
      const body = await api(`/datasets/${query}`);
      all.push(...body.datasets);
      cursor = body.next_cursor;
      if (!cursor) break;
    }
    return all;
  }

  /** @param {DatasetEntry[]} datasets */
  #renderList(datasets) {
    const byId = new Map(datasets.map((d) => [d.experiment_id, d]));
    if (this.#current) {
      const before = this.#seen.get(this.#current);
      const now = signature(byId.get(this.#current));
      if (before !== undefined && before !== now) this.#load(this.#current, { quiet: true });
    }
    this.#seen = new Map([...byId].map(([id, d]) => [id, signature(d)]));
    if (this.#current && !this.#seen.has(this.#current)) this.#seen.set(this.#current, "none");

    const sorted = [...datasets].sort((a, b) =>
      b.updated_at.localeCompare(a.updated_at) || a.experiment_id.localeCompare(b.experiment_id)
    );
    const rendered = JSON.stringify(
      sorted.map((d) => [d.experiment_id, d.size_bytes, d.updated_at, d.analysis_status]),
    );
    if (rendered === this.#listRendered) return;
    this.#listRendered = rendered;

    const focused = document.activeElement instanceof HTMLElement
      ? document.activeElement.dataset.experiment
      : undefined;
    if (sorted.length === 0) {
      replace(
        this.#list,
        h(
          "p",
          { class: "muted empty" },
          "No datasets yet. Deliver one with ",
          h("code", {}, "POST /api/v1/datasets/upload/"),
          " or the two-step route (",
          h("code", {}, "POST /api/v1/datasets/initiate/"),
          ", then PUT); it appears here by itself.",
        ),
      );
      return;
    }
    replace(
      this.#list,
      h(
        "ul",
        {
          class: "experiment-list",
          "aria-label": "Experiments, newest delivery first",
          onkeydown: (/** @type {KeyboardEvent} */ e) => this.#rove(e),
        },
        sorted.map((d) =>
          h(
            "li",
            {},
            h(
              "button",
              {
                type: "button",
                class: "experiment",
                dataset: { experiment: d.experiment_id },
                onclick: () => this.#open(d.experiment_id),
              },
              h("span", { class: "experiment-id" }, d.experiment_id),
              h(
                "span",
                { class: "experiment-meta" },
                h("span", { class: "size" }, formatSize(d.size_bytes)),
                h(
                  "time",
                  { datetime: d.updated_at, title: d.updated_at },
                  formatDateTime(d.updated_at),
                ),
              ),
              statusBadge(d.analysis_status),
            ),
          )
        ),
      ),
    );
    this.#markCurrent();
    if (focused) {
      /** @type {HTMLElement | null} */
      const again = this.#list.querySelector(`[data-experiment="${CSS.escape(focused)}"]`);
      again?.focus();
    }
  }

  /** The list's buttons. */
  #buttons() {
    return /** @type {HTMLElement[]} */ ([...this.#list.querySelectorAll("button.experiment")]);
  }

  /**
   * Marks the loaded experiment; the list is one stop for Tab (on the loaded experiment, else
   * the first), and the arrow keys move inside it.
   */
  #markCurrent() {
    const buttons = this.#buttons();
    const stop = buttons.find((b) => b.dataset.experiment === this.#current) ?? buttons[0];
    for (const el of buttons) {
      if (el.dataset.experiment === this.#current) el.setAttribute("aria-current", "true");
      else el.removeAttribute("aria-current");
      el.tabIndex = el === stop ? 0 : -1;
    }
  }

  /** @param {KeyboardEvent} event */
  #rove(event) {
    const buttons = this.#buttons();
    const at = buttons.indexOf(/** @type {HTMLElement} */ (document.activeElement));
    if (at < 0) return;
    const last = buttons.length - 1;
    const next =
      { ArrowDown: Math.min(at + 1, last), ArrowUp: Math.max(at - 1, 0), Home: 0, End: last }[
        event.key
      ];
    if (next === undefined) return;
    event.preventDefault();
    for (const el of buttons) el.tabIndex = -1;
    buttons[next].tabIndex = 0;
    buttons[next].focus();
  }
}
