/**
 * Information → API keys: the organization, its keys (never a secret, only their first
 * characters) and what the signed-in key may do. With the `admin` scope, keys are created (the
 * secret shown once), rotated with an overlap, and revoked after a confirmation.
 */
import { api, ApiError, keyScopes } from "./api.js";
import { h, replace } from "./dom.js";
import { formatAgo, formatDateTime } from "./format.js";
import { copyButton, loadProblem, pageHead } from "./widgets.js";

/** Every scope, in the order the page shows them, with what it allows. */
export const SCOPES = [
  ["upload", "deliver datasets"],
  ["read", "read datasets, analyses, history and settings"],
  ["write", "change settings and delete datasets"],
  ["admin", "manage keys, read the audit trail, manage webhooks"],
];

/** @param {string | null | undefined} iso */
function when(iso) {
  return iso ? h("time", { datetime: iso, title: formatDateTime(iso) }, formatAgo(iso)) : "never";
}

/** @param {string | null | undefined} iso */
function until(iso) {
  return iso ? h("time", { datetime: iso }, formatDateTime(iso)) : "never";
}

/** @param {unknown} error */
function problem(error) {
  if (!(error instanceof ApiError)) return String(error);
  return error.requestId ? `${error.message} (request id ${error.requestId})` : error.message;
}

/** @param {any} org */
function orgCard(org) {
  /** @param {string} label @param {import("./dom.js").Child} value @param {string} [id] */
  const fact = (label, value, id) =>
    h("div", { class: "fact" }, h("dt", {}, label), h("dd", id ? { id } : {}, value));
  return h(
    "section",
    { class: "card org", "aria-labelledby": "org-title" },
    h("h2", { id: "org-title" }, "Organization"),
    h(
      "dl",
      { class: "facts" },
      fact("Name", org.name ?? "—", "org-name-value"),
      fact("org_id", h("code", {}, org.org_id ?? "—")),
      h(
        "div",
        { class: "fact" },
        h("dt", {}, "Status"),
        h(
          "dd",
          { id: "org-status" },
          org.active
            ? h("span", { class: "badge badge-ready" }, "active")
            : h("span", { class: "badge badge-failed" }, "deactivated"),
        ),
      ),
      fact("Created", formatDateTime(org.created_at)),
    ),
    h(
      "p",
      { class: "muted" },
      org.active
        ? "Active: its keys may deliver datasets and read analyses."
        : "Deactivated: every key of the organization is refused with 403.",
    ),
  );
}

/** What the signed-in key may do, in words. @param {string[]} scopes */
function ownScopes(scopes) {
  return h(
    "section",
    { class: "card own-key", "aria-labelledby": "own-key-title" },
    h("h2", { id: "own-key-title" }, "This key"),
    h(
      "ul",
      { class: "scope-list", id: "own-scopes" },
      SCOPES.map(([scope, allows]) =>
        h(
          "li",
          { dataset: { scope, held: String(scopes.includes(scope)) } },
          h("code", {}, scope),
          scopes.includes(scope) ? ` — may ${allows}` : ` — not held: cannot ${allows}`,
        )
      ),
    ),
    scopes.includes("admin") ? null : h(
      "p",
      { class: "muted", id: "keys-admin-needed" },
      "Creating, rotating and revoking keys needs a key with the admin scope.",
    ),
  );
}

/** @param {any} k */
function statusCell(k) {
  const badge = k.status === "active"
    ? h("span", { class: "badge badge-ready" }, "active")
    : h("span", { class: "badge badge-failed" }, k.status);
  let note = null;
  if (k.status === "revoked" && k.revoked_at) note = when(k.revoked_at);
  else if (k.expires_at) {
    note = [k.status === "expired" ? "expired " : "expires ", until(k.expires_at)];
  }
  return h(
    "td",
    { dataset: { cell: "status", label: "Status" } },
    badge,
    note ? h("span", { class: "muted small" }, " ", note) : null,
  );
}

export class KeysPage {
  #stopped = false;
  #body = h("div", { class: "keys-body" }, h("p", { class: "muted" }, "Loading…"));
  /** Where a new key's secret is shown, once; kept while the list reloads. */
  #secret = h("div", { class: "new-secret", id: "new-key", hidden: true });
  /** Where a failed change is told. */
  #status = h("p", { class: "form-status", id: "keys-status", role: "status" });
  /** @type {any} */
  #info = null;

  /** @param {HTMLElement} main */
  constructor(main) {
    replace(
      main,
      pageHead("Information", "API keys"),
      this.#body,
    );
    document.title = "API keys — abn";
    this.#load();
  }

  stop() {
    this.#stopped = true;
  }

  async #load() {
    try {
      const info = await api("/keys/");
      if (this.#stopped) return;
      this.#info = info;
      this.#render();
    } catch (error) {
      if (this.#stopped) return;
      replace(this.#body, loadProblem("h2", "The keys could not be loaded", problem(error)));
    }
  }

  get #admin() {
    return keyScopes().includes("admin");
  }

  #render() {
    const info = this.#info;
    replace(
      this.#body,
      orgCard(info.organization ?? {}),
      ownScopes(keyScopes()),
      this.#admin ? this.#createForm() : null,
      this.#secret,
      this.#keysCard(info.keys ?? [], info.current_key_id),
    );
  }

  /** @param {any[]} keys @param {string} current */
  #keysCard(keys, current) {
    const activeCount = keys.filter((k) => k.status === "active").length;
    const admin = this.#admin;
    return h(
      "section",
      { class: "card keys-card", "aria-labelledby": "keys-title" },
      h(
        "div",
        { class: "card-head" },
        h("h2", { id: "keys-title" }, "Keys"),
        h("span", { class: "muted" }, `${activeCount} active of ${keys.length}`),
      ),
      this.#status,
      h(
        "div",
        { class: "table-wrap", role: "region", "aria-label": "API keys", tabindex: "0" },
        h(
          "table",
          { class: "keys-table" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              ["Key", "Scopes", "Status", "Created", "Last used", admin ? "Actions" : null]
                .filter(Boolean).map((label) => h("th", { scope: "col" }, label)),
            ),
          ),
          h("tbody", {}, keys.map((k) => this.#keyRow(k, k.key_id === current))),
        ),
      ),
      h(
        "p",
        { class: "muted small" },
        "A revoked key is refused at once. Rotating a key makes a new one with the same name and " +
          "scopes; the old one keeps working for the overlap, so a pipeline can switch without " +
          "downtime.",
      ),
    );
  }

  /** @param {any} k @param {boolean} current */
  #keyRow(k, current) {
    return h(
      "tr",
      { dataset: { key: k.key_id } },
      h(
        "th",
        { scope: "row" },
        h("code", { class: "prefix" }, `${k.prefix}…`),
        k.name ? h("span", { class: "key-name" }, ` ${k.name}`) : null,
        current ? h("span", { class: "tag tag-key" }, "signed in with") : null,
        h("span", { class: "key-id muted" }, k.key_id),
      ),
      h(
        "td",
        { dataset: { cell: "scopes", label: "Scopes" } },
        (k.scopes ?? []).map((/** @type {string} */ s) => h("code", { class: "scope" }, s)),
      ),
      statusCell(k),
      h("td", { dataset: { label: "Created" } }, when(k.created_at)),
      h("td", { dataset: { label: "Last used" } }, when(k.last_used_at)),
      this.#admin ? this.#actions(k) : null,
    );
  }

  /** Rotate and revoke, each asking first. @param {any} k */
  #actions(k) {
    const cell = h("td", { dataset: { cell: "actions", label: "Actions" } });
    if (k.status !== "active") return cell;
    const buttons = h(
      "div",
      { class: "key-actions" },
      h("button", {
        type: "button",
        class: "quiet",
        dataset: { action: "rotate" },
        onclick: () => this.#confirmRotate(cell, buttons, k),
      }, "Rotate…"),
      h("button", {
        type: "button",
        class: "quiet danger",
        dataset: { action: "revoke" },
        onclick: () => this.#confirmRevoke(cell, buttons, k),
      }, "Revoke…"),
    );
    cell.append(buttons);
    return cell;
  }

  /** @param {HTMLElement} cell @param {HTMLElement} buttons @param {any} k */
  #confirmRevoke(cell, buttons, k) {
    const cancel = () => replace(cell, buttons);
    replace(
      cell,
      h(
        "div",
        { class: "confirm", role: "group", "aria-label": `Revoke ${k.prefix}…` },
        h("p", {}, `Revoke ${k.prefix}…? Requests with it are refused at once.`),
        h("button", {
          type: "button",
          class: "danger",
          dataset: { action: "confirm-revoke" },
          onclick: () => this.#change(() => api(`/keys/${k.key_id}/`, { method: "DELETE" })),
        }, "Revoke the key"),
        h("button", { type: "button", class: "quiet", onclick: cancel }, "Cancel"),
      ),
    );
    cell.querySelector("button")?.focus();
  }

  /** @param {HTMLElement} cell @param {HTMLElement} buttons @param {any} k */
  #confirmRotate(cell, buttons, k) {
    const hours = h("input", {
      type: "number",
      id: `overlap-${k.key_id}`,
      name: "overlap_hours",
      min: "0",
      max: "168",
      step: "1",
      value: "24",
      required: true,
    });
    const form = h(
      "form",
      { class: "confirm", "aria-label": `Rotate ${k.prefix}…` },
      h("label", { for: hours.id }, "Old key keeps working for (hours, 0–168)"),
      hours,
      h("button", { type: "submit", dataset: { action: "confirm-rotate" } }, "Rotate the key"),
      h(
        "button",
        { type: "button", class: "quiet", onclick: () => replace(cell, buttons) },
        "Cancel",
      ),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const overlap = Number(hours.value);
      this.#change(async () => {
        const made = await api(`/keys/${k.key_id}/rotate/`, {
          method: "POST",
          body: { overlap_hours: overlap },
        });
        this.#showSecret(
          made,
          `The old key stops working ${overlap === 0 ? "now" : `in ${overlap} h`}.`,
        );
      });
    });
    replace(cell, form);
    hours.focus();
  }

  #createForm() {
    const name = h("input", { type: "text", id: "new-key-name", name: "name", maxlength: "100" });
    const days = h("input", {
      type: "number",
      id: "new-key-days",
      name: "expires_in_days",
      min: "1",
      max: "3650",
      step: "1",
      placeholder: "never",
    });
    const boxes = SCOPES.map(([scope, allows]) =>
      h(
        "label",
        { class: "scope-choice" },
        h("input", {
          type: "checkbox",
          name: "scopes",
          value: scope,
          checked: scope === "upload" || scope === "read",
        }),
        h("code", {}, scope),
        ` ${allows}`,
      )
    );
    const form = h(
      "form",
      { class: "card create-key", id: "create-key", "aria-labelledby": "create-key-title" },
      h("h2", { id: "create-key-title" }, "Create a key"),
      h("div", { class: "field" }, h("label", { for: name.id }, "Name"), name),
      h("fieldset", { class: "field" }, h("legend", {}, "Scopes"), boxes),
      h(
        "div",
        { class: "field" },
        h("label", { for: days.id }, "Expires after (days; empty: never)"),
        days,
      ),
      h("button", { type: "submit", id: "create-key-submit" }, "Create key"),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const scopes = [...form.querySelectorAll("input[name=scopes]:checked")]
        .map((box) => /** @type {HTMLInputElement} */ (box).value);
      /** @type {Record<string, unknown>} */
      const body = { scopes };
      if (name.value.trim()) body.name = name.value.trim();
      if (days.value) {
        body.expires_at = new Date(Date.now() + Number(days.value) * 86_400_000).toISOString();
      }
      this.#change(async () => {
        this.#showSecret(await api("/keys/", { method: "POST", body }), "");
        form.reset();
      });
    });
    return form;
  }

  /** Shows a new key's secret, once, with a copy button. @param {any} made @param {string} note */
  #showSecret(made, note) {
    const secret = h("code", { id: "new-key-secret", class: "secret" }, made.api_key);
    const [copy, copied] = copyButton(made.api_key, secret, { id: "copy-new-key" });
    replace(
      this.#secret,
      h(
        "div",
        { class: "card secret-card", role: "alert" },
        h("h2", {}, "Copy the new key now"),
        h(
          "p",
          { class: "warning" },
          "This is the only time the service shows it: it keeps only a hash. Store it in your " +
            "pipeline's secret store. " + note,
        ),
        h("p", {}, secret, " ", copy, " ", copied),
        h(
          "p",
          { class: "muted small" },
          `Key ${made.key_id}, scopes ${(made.scopes ?? []).join(", ")}, expires `,
          until(made.expires_at),
          ".",
        ),
        h("button", {
          type: "button",
          class: "quiet",
          onclick: () => {
            replace(this.#secret);
            this.#secret.hidden = true;
          },
        }, "I have stored it"),
      ),
    );
    this.#secret.hidden = false;
  }

  /** Runs one change, then shows the list again; a refusal is told beside the list. */
  /** @param {() => Promise<unknown>} run */
  async #change(run) {
    this.#status.textContent = "";
    this.#status.classList.remove("error");
    try {
      await run();
    } catch (error) {
      this.#status.textContent = problem(error);
      this.#status.classList.add("error");
      return;
    }
    await this.#load();
  }
}
