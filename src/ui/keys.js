/**
 * Information → API keys: the organization, whether it is active, and the status of its keys
 * (the service never shows a key itself, only its first characters).
 */
import { api, ApiError } from "./api.js";
import { h, replace } from "./dom.js";
import { formatAgo, formatDateTime } from "./format.js";

/**
 * @param {string | null | undefined} iso
 */
function when(iso) {
  return iso ? h("time", { datetime: iso, title: formatDateTime(iso) }, formatAgo(iso)) : "never";
}

export class KeysPage {
  #stopped = false;
  #body = h("div", { class: "keys-body" }, h("p", { class: "muted" }, "Loading…"));

  /** @param {HTMLElement} main */
  constructor(main) {
    replace(
      main,
      h(
        "div",
        { class: "page-head" },
        h("p", { class: "crumb" }, "Information"),
        h("h1", { tabindex: "-1" }, "API keys"),
      ),
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
      if (!this.#stopped) this.#render(info);
    } catch (error) {
      if (this.#stopped) return;
      replace(
        this.#body,
        h(
          "div",
          { class: "card problem", role: "alert" },
          h("h2", { class: "error-title" }, "The keys could not be loaded"),
          h("p", {}, error instanceof ApiError ? error.message : String(error)),
        ),
      );
    }
  }

  /** @param {any} info */
  #render(info) {
    const org = info.organization ?? {};
    const keys = info.keys ?? [];
    const activeCount = keys.filter((/** @type {any} */ k) => k.status === "active").length;
    replace(
      this.#body,
      h(
        "section",
        { class: "card org", "aria-labelledby": "org-title" },
        h("h2", { id: "org-title" }, "Organization"),
        h(
          "dl",
          { class: "facts" },
          h(
            "div",
            { class: "fact" },
            h("dt", {}, "Name"),
            h("dd", { id: "org-name-value" }, org.name ?? "—"),
          ),
          h(
            "div",
            { class: "fact" },
            h("dt", {}, "org_id"),
            h("dd", {}, h("code", {}, org.org_id ?? "—")),
          ),
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
          h(
            "div",
            { class: "fact" },
            h("dt", {}, "Created"),
            h("dd", {}, formatDateTime(org.created_at)),
          ),
        ),
        h(
          "p",
          { class: "muted" },
          org.active
            ? "Active: its keys may deliver datasets and read analyses."
            : "Deactivated: every key of the organization is refused with 403.",
        ),
      ),
      h(
        "section",
        { class: "card keys-card", "aria-labelledby": "keys-title" },
        h(
          "div",
          { class: "card-head" },
          h("h2", { id: "keys-title" }, "Keys"),
          h("span", { class: "muted" }, `${activeCount} active of ${keys.length}`),
        ),
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
                h("th", { scope: "col" }, "Key"),
                h("th", { scope: "col" }, "Status"),
                h("th", { scope: "col" }, "Created"),
                h("th", { scope: "col" }, "Last used"),
              ),
            ),
            h(
              "tbody",
              {},
              keys.map((/** @type {any} */ k) =>
                h(
                  "tr",
                  { dataset: { key: k.key_id } },
                  h(
                    "th",
                    { scope: "row" },
                    h("code", { class: "prefix" }, `${k.prefix}…`),
                    k.key_id === info.current_key_id
                      ? h("span", { class: "tag tag-key" }, "signed in with")
                      : null,
                    h("span", { class: "key-id muted" }, k.key_id),
                  ),
                  h(
                    "td",
                    { dataset: { cell: "status", label: "Status" } },
                    k.status === "active"
                      ? h("span", { class: "badge badge-ready" }, "active")
                      : h("span", { class: "badge badge-failed" }, "revoked"),
                    k.revoked_at
                      ? h("span", { class: "muted small" }, " ", when(k.revoked_at))
                      : null,
                  ),
                  h("td", { dataset: { label: "Created" } }, when(k.created_at)),
                  h("td", { dataset: { label: "Last used" } }, when(k.last_used_at)),
                )
              ),
            ),
          ),
        ),
        h(
          "p",
          { class: "muted small" },
          "An administrator creates and revokes keys with the admin command (",
          h("code", {}, "admin key create"),
          ", ",
          h("code", {}, "admin key revoke"),
          "). A revoked key is refused at once.",
        ),
      ),
    );
  }
}
