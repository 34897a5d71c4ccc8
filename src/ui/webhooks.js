/**
 * Information → Webhooks (an admin key): the organization's endpoints, a form to add one (its
 * signing secret shown once, with a copy button), each endpoint's events, enable and disable,
 * secret rotation, a test event, and its recent deliveries with their state, attempts and a
 * retry.
 */
import { api, ApiError } from "./api.js";
import { h, replace } from "./dom.js";
import { formatAgo, formatDateTime } from "./format.js";
import { copyButton, loadProblem, pageHead } from "./widgets.js";

/** @type {Promise<string[]> | null} */
let eventTypes = null;

/** The event types, as the service names them (written from its own list): fetched once. */
function loadEventTypes() {
  if (!eventTypes) {
    eventTypes = fetch("/ui/event_types.json").then((res) => {
      if (!res.ok) throw new Error(`The event types could not be loaded (HTTP ${res.status})`);
      return res.json();
    });
    eventTypes.catch(() => eventTypes = null); // asked again next time
  }
  return eventTypes;
}

/** Deliveries shown per endpoint. */
const RECENT = 20;

/** @param {string | null | undefined} iso */
function when(iso) {
  return iso ? h("time", { datetime: iso, title: formatDateTime(iso) }, formatAgo(iso)) : "—";
}

/** @param {unknown} error */
function message(error) {
  if (!(error instanceof ApiError)) return String(error);
  return error.requestId ? `${error.message} (request id ${error.requestId})` : error.message;
}

/**
 * Checkboxes for the event list: "All events" and each type; answers the fieldset and a reader
 * of what is chosen.
 * @param {string} idPrefix
 * @param {string[]} chosen
 */
function eventChoices(idPrefix, chosen) {
  const all = chosen.includes("*");
  /** @type {HTMLInputElement[]} */
  const boxes = [];
  const box = (/** @type {string} */ value, /** @type {string} */ label) => {
    const id = `${idPrefix}-${value === "*" ? "all" : value.replace(".", "-")}`;
    const input = h("input", {
      type: "checkbox",
      id,
      value,
      checked: value === "*" ? all : !all && chosen.includes(value),
    });
    boxes.push(input);
    return h("div", { class: "choice" }, input, h("label", { for: id }, label));
  };
  const fieldset = h(
    "fieldset",
    { class: "event-choices" },
    h("legend", {}, "Events"),
    box("*", "All events"),
  );
  loadEventTypes().then(
    (types) => fieldset.append(...types.map((type) => box(type, type))),
    (error) => fieldset.append(h("p", { class: "form-error" }, message(error))),
  );
  const read = () => boxes.filter((b) => b.checked).map((b) => b.value);
  return { fieldset, read };
}

/**
 * A secret shown once, with a button that copies it.
 * @param {string} id
 * @param {string} secret
 * @param {string} note
 */
function secretPanel(id, secret, note) {
  const shown = h("code", { id }, secret);
  return h(
    "div",
    { class: "secret-once", role: "region", "aria-label": "Signing secret" },
    h("p", {}, note),
    h("div", { class: "secret-row" }, shown, ...copyButton(secret, shown, { class: "quiet" })),
  );
}

/** @param {string} state */
function stateBadge(state) {
  const kind = state === "delivered" ? "ready" : state === "failed" ? "failed" : "pending";
  return h("span", { class: `badge badge-${kind}` }, state);
}

/**
 * An endpoint's URL, state, description, why it was disabled, and its events.
 * @param {any} w
 */
function endpointSummary(w) {
  return [
    h(
      "div",
      { class: "card-head" },
      h("h3", {}, h("code", { class: "webhook-url" }, w.url)),
      w.enabled
        ? h("span", { class: "badge badge-ready", "data-field": "state" }, "enabled")
        : h("span", { class: "badge badge-failed", "data-field": "state" }, "disabled"),
    ),
    w.description ? h("p", {}, w.description) : null,
    !w.enabled && w.disabled_reason
      ? h("p", { class: "muted", "data-field": "reason" }, w.disabled_reason)
      : null,
    h(
      "p",
      { class: "webhook-events", "data-field": "events" },
      w.events.map((/** @type {string} */ e) =>
        h("span", { class: "tag" }, e === "*" ? "all events" : e)
      ),
    ),
  ];
}

export class WebhooksPage {
  #stopped = false;
  /** @type {ReturnType<typeof setTimeout>[]} */
  #timers = [];
  #list = h("div", { class: "webhooks-list" }, h("p", { class: "muted" }, "Loading…"));
  #created = h("div", {});

  /** @param {HTMLElement} main */
  constructor(main) {
    replace(
      main,
      pageHead("Information", "Webhooks"),
      this.#addForm(),
      h(
        "section",
        { class: "card", "aria-labelledby": "webhooks-title" },
        h("div", { class: "card-head" }, h("h2", { id: "webhooks-title" }, "Endpoints")),
        this.#list,
      ),
    );
    document.title = "Webhooks — abn";
    this.#load();
  }

  stop() {
    this.#stopped = true;
    for (const timer of this.#timers) clearTimeout(timer);
  }

  #addForm() {
    const url = h("input", {
      type: "url",
      id: "webhook-url",
      required: true,
      placeholder: "https://hooks.example.com/abn",
      autocomplete: "off",
    });
    const description = h("input", { type: "text", id: "webhook-description", maxlength: "500" });
    const events = eventChoices("new-event", ["*"]);
    const error = h("p", { class: "form-error", id: "webhook-add-error", role: "alert" });
    const submit = h("button", { type: "submit", class: "primary" }, "Add endpoint");
    const form = h(
      "form",
      {
        id: "webhook-add",
        onsubmit: async (/** @type {SubmitEvent} */ event) => {
          event.preventDefault();
          error.textContent = "";
          submit.disabled = true;
          try {
            const created = await api("/webhooks/", {
              method: "POST",
              body: {
                url: url.value.trim(),
                events: events.read(),
                ...(description.value ? { description: description.value } : {}),
              },
            });
            url.value = "";
            description.value = "";
            replace(
              this.#created,
              secretPanel(
                "new-secret",
                created.secret,
                `Endpoint added. Its signing secret is shown only now: keep it where the receiver ` +
                  `verifies signatures.`,
              ),
            );
            await this.#load();
          } catch (problem) {
            error.textContent = message(problem);
          } finally {
            submit.disabled = false;
          }
        },
      },
      h(
        "div",
        { class: "settings-grid" },
        h("div", { class: "field" }, h("label", { for: "webhook-url" }, "URL"), url),
        h(
          "div",
          { class: "field" },
          h("label", { for: "webhook-description" }, "Description (optional)"),
          description,
        ),
        h("div", { class: "wide" }, events.fieldset),
      ),
      h("div", { class: "actions" }, submit, error),
    );
    return h(
      "section",
      { class: "card", "aria-labelledby": "webhook-add-title" },
      h("h2", { id: "webhook-add-title" }, "Add an endpoint"),
      h(
        "p",
        { class: "muted" },
        "Events are POSTed as JSON and signed as Standard Webhooks (webhook-id, " +
          "webhook-timestamp, webhook-signature).",
      ),
      form,
      this.#created,
    );
  }

  async #load() {
    try {
      // The event types first: the forms' choices are filled when they arrive.
      const [{ webhooks }] = await Promise.all([api("/webhooks/"), loadEventTypes()]);
      if (this.#stopped) return;
      if (webhooks.length === 0) {
        replace(this.#list, h("p", { class: "muted", id: "webhooks-empty" }, "No endpoints yet."));
        return;
      }
      replace(this.#list, webhooks.map((/** @type {any} */ w) => this.#endpoint(w)));
    } catch (problem) {
      if (this.#stopped) return;
      replace(
        this.#list,
        loadProblem("h3", "The webhooks could not be loaded", message(problem)),
      );
    }
  }

  /** @param {any} w */
  #endpoint(w) {
    const id = w.webhook_id;
    const status = h("p", { class: "form-error", role: "alert" });
    const secret = h("div", {});
    const deliveries = h("div", { class: "deliveries" }, h("p", { class: "muted" }, "Loading…"));
    const act = async (/** @type {() => Promise<void>} */ fn) => {
      status.textContent = "";
      try {
        await fn();
      } catch (problem) {
        status.textContent = message(problem);
      }
    };
    const events = eventChoices(`events-${id}`, w.events);
    const editor = h(
      "div",
      { class: "event-editor", hidden: true },
      events.fieldset,
      h("button", {
        type: "button",
        class: "quiet",
        "data-action": "save-events",
        onclick: () =>
          act(async () => {
            await api(`/webhooks/${id}/`, { method: "PATCH", body: { events: events.read() } });
            await this.#load();
          }),
      }, "Save events"),
    );
    /**
     * @param {string} action
     * @param {string} label
     * @param {() => void} onclick
     */
    const button = (action, label, onclick) =>
      h("button", { type: "button", class: "quiet", "data-action": action, onclick }, label);
    const article = h(
      "article",
      { class: "webhook", dataset: { webhook: id }, "aria-label": w.url },
      endpointSummary(w),
      h(
        "div",
        { class: "actions" },
        button(
          w.enabled ? "disable" : "enable",
          w.enabled ? "Disable" : "Enable",
          () =>
            act(async () => {
              await api(`/webhooks/${id}/`, { method: "PATCH", body: { enabled: !w.enabled } });
              await this.#load();
            }),
        ),
        button("edit-events", "Events…", () => {
          editor.hidden = !editor.hidden;
        }),
        button("rotate", "Rotate secret", () =>
          act(async () => {
            const rotated = await api(`/webhooks/${id}/rotate-secret/`, { method: "POST" });
            replace(
              secret,
              secretPanel(
                `secret-${id}`,
                rotated.secret,
                `New signing secret, shown only now. The previous one also signs until ` +
                  `${formatDateTime(rotated.previous_secret_until)}.`,
              ),
            );
          })),
        button("test", "Send a test", () =>
          act(async () => {
            await api(`/webhooks/${id}/test/`, { method: "POST" });
            this.#refresh(id, deliveries);
          })),
        status,
      ),
      editor,
      secret,
      h("h4", {}, "Recent deliveries"),
      deliveries,
    );
    this.#loadDeliveries(id, deliveries);
    return article;
  }

  /**
   * Loads the deliveries now and again shortly after (an attempt takes a moment).
   * @param {string} id
   * @param {HTMLElement} into
   */
  #refresh(id, into) {
    this.#loadDeliveries(id, into);
    for (const ms of [700, 2500]) {
      this.#timers.push(setTimeout(() => this.#loadDeliveries(id, into), ms));
    }
  }

  /**
   * @param {string} id
   * @param {HTMLElement} into
   */
  async #loadDeliveries(id, into) {
    try {
      const { deliveries } = await api(`/webhooks/${id}/deliveries/?limit=${RECENT}`);
      if (this.#stopped) return;
      if (deliveries.length === 0) {
        replace(into, h("p", { class: "muted" }, "Nothing sent yet."));
        return;
      }
      replace(into, this.#deliveryTable(id, deliveries, into));
    } catch (problem) {
      if (!this.#stopped) replace(into, h("p", { class: "form-error" }, message(problem)));
    }
  }

  /**
   * @param {string} id
   * @param {any[]} deliveries
   * @param {HTMLElement} into
   */
  #deliveryTable(id, deliveries, into) {
    return h(
      "div",
      { class: "table-wrap", role: "region", "aria-label": "Recent deliveries", tabindex: "0" },
      h(
        "table",
        { class: "deliveries-table" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ["Event", "State", "Attempts", "Last answer", "Created", ""].map((c) =>
              h("th", { scope: "col" }, c)
            ),
          ),
        ),
        h(
          "tbody",
          {},
          deliveries.map((d) =>
            h(
              "tr",
              { dataset: { delivery: d.delivery_id } },
              h("th", { scope: "row" }, d.type, h("span", { class: "key-id muted" }, d.event_id)),
              h(
                "td",
                { dataset: { cell: "state", label: "State" } },
                stateBadge(d.state),
                d.state === "pending" && d.next_attempt_at
                  ? h("span", { class: "muted small" }, " next ", when(d.next_attempt_at))
                  : null,
              ),
              h("td", { dataset: { cell: "attempts", label: "Attempts" } }, String(d.attempts)),
              h(
                "td",
                { dataset: { cell: "answer", label: "Last answer" } },
                d.last_status === null ? "" : String(d.last_status),
                d.last_error ? h("span", { class: "muted small" }, d.last_error) : null,
              ),
              h("td", { dataset: { label: "Created" } }, when(d.created_at)),
              h(
                "td",
                {},
                d.state === "pending" ? null : h("button", {
                  type: "button",
                  class: "quiet",
                  "data-action": "retry",
                  onclick: async () => {
                    try {
                      await api(`/webhooks/${id}/deliveries/${d.delivery_id}/retry/`, {
                        method: "POST",
                      });
                    } catch { /* the list shows what happened */ }
                    this.#refresh(id, into);
                  },
                }, "Retry"),
              ),
            )
          ),
        ),
      ),
    );
  }
}
