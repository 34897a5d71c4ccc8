/**
 * Information → Audit trail (`#/audit`): what the organization's keys did, newest first, filtered
 * by action and paged ("Show older" follows the service's cursor). Needs the `admin` scope; any
 * other key is told so, and stays signed in.
 */
import { api, ApiError } from "./api.js";
import { h, replace } from "./dom.js";
import { formatDateTime, formatSize } from "./format.js";
import { pageHead } from "./widgets.js";

/** The actions the filter offers (the service's names). */
export const ACTIONS = [
  "dataset.delivered",
  "dataset.deleted",
  "settings.changed",
  "key.created",
  "key.revoked",
  "key.rotated",
  "webhook.created",
  "webhook.updated",
  "webhook.deleted",
  "webhook.disabled",
  "webhook.secret_rotated",
];

const PAGE = 50;

/**
 * One event's details in a line: the delivery's route and size, the settings that changed, or
 * the fields as they came.
 * @param {any} event
 */
export function describeDetails(event) {
  const d = event.details ?? {};
  if (event.action === "dataset.delivered") {
    return [
      d.route,
      typeof d.size_bytes === "number" ? formatSize(d.size_bytes) : null,
      d.sha256 ? `sha256 ${String(d.sha256).slice(0, 12)}…` : null,
    ].filter(Boolean).join(" · ");
  }
  if (event.action === "settings.changed") {
    const before = d.before ?? {};
    const after = d.after ?? {};
    const changed = [...new Set([...Object.keys(before), ...Object.keys(after)])]
      .filter((name) => JSON.stringify(before[name]) !== JSON.stringify(after[name]));
    return changed.length
      ? changed.map((name) =>
        `${name}: ${JSON.stringify(before[name] ?? null)} → ${JSON.stringify(after[name] ?? null)}`
      ).join("; ")
      : "no change";
  }
  const entries = Object.entries(d);
  return entries.map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(", ");
}

/** @param {any} event */
function row(event) {
  return h(
    "tr",
    { dataset: { event: String(event.id), action: event.action } },
    h(
      "td",
      { dataset: { label: "When" } },
      h("time", { datetime: event.at }, formatDateTime(event.at)),
    ),
    h("td", { dataset: { label: "Action" } }, h("code", {}, event.action)),
    h("td", { dataset: { label: "Key" } }, event.key_id ? h("code", {}, event.key_id) : "—"),
    h("td", { dataset: { label: "Experiment" } }, event.experiment_id ?? "—"),
    h("td", { dataset: { label: "Details", cell: "details" } }, describeDetails(event)),
  );
}

export class AuditPage {
  #stopped = false;
  #rows = h("tbody", { id: "audit-rows" });
  #more = h(
    "button",
    { type: "button", id: "audit-more", class: "quiet", hidden: true },
    "Show older",
  );
  #status = h("p", { class: "muted", id: "audit-status", role: "status" }, "Loading…");
  #filter = h(
    "select",
    { id: "audit-action", name: "action" },
    h("option", { value: "" }, "All actions"),
    ACTIONS.map((action) => h("option", { value: action }, action)),
  );
  /** @type {string | null} */
  #cursor = null;

  /** @param {HTMLElement} main */
  constructor(main) {
    replace(
      main,
      pageHead("Information", "Audit trail"),
      h(
        "section",
        { class: "card audit", "aria-labelledby": "audit-title" },
        h(
          "div",
          { class: "card-head" },
          h("h2", { id: "audit-title" }, "Events, newest first"),
          h("label", { for: "audit-action" }, "Action "),
          this.#filter,
        ),
        this.#status,
        h(
          "div",
          { class: "table-wrap", role: "region", "aria-label": "Audit events", tabindex: "0" },
          h(
            "table",
            { class: "audit-table" },
            h(
              "thead",
              {},
              h(
                "tr",
                {},
                ["When", "Action", "Key", "Experiment", "Details"].map((label) =>
                  h("th", { scope: "col" }, label)
                ),
              ),
            ),
            this.#rows,
          ),
        ),
        this.#more,
      ),
    );
    document.title = "Audit trail — abn";
    this.#filter.addEventListener("change", () => this.#load(true));
    this.#more.addEventListener("click", () => this.#load(false));
    this.#load(true);
  }

  stop() {
    this.#stopped = true;
  }

  /** @param {boolean} fresh the first page (a new filter), or the next older one */
  async #load(fresh) {
    const params = new URLSearchParams({ limit: String(PAGE) });
    if (this.#filter.value) params.set("action", this.#filter.value);
    if (!fresh && this.#cursor) params.set("cursor", this.#cursor);
    this.#more.disabled = true;
    try {
      const page = await api(`/audit/?${params}`);
      if (this.#stopped) return;
      if (fresh) replace(this.#rows);
      this.#rows.append(...(page.events ?? []).map(row));
      this.#cursor = page.next_cursor ?? null;
      this.#more.hidden = this.#cursor === null;
      const shown = this.#rows.childElementCount;
      this.#status.textContent = shown === 0
        ? "No events yet."
        : `${shown} event${shown === 1 ? "" : "s"} shown${
          this.#cursor ? "; older ones follow" : ""
        }.`;
    } catch (error) {
      if (this.#stopped) return;
      this.#more.hidden = true;
      this.#status.textContent = error instanceof ApiError && error.code === "insufficient_scope"
        ? "Reading the audit trail needs a key with the admin scope; sign in with one to see it."
        : error instanceof ApiError
        ? error.message
        : String(error);
    } finally {
      this.#more.disabled = false;
    }
  }
}
