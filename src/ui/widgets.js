/**
 * Small building blocks shared by the views: a page's heading, the status badge, a card with its
 * heading, a table that scrolls sideways on a narrow screen instead of the page, a load-failure
 * alert, and the button that copies a secret shown once.
 */
import { h } from "./dom.js";

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
export function scrollTable(label, table) {
  return h(
    "div",
    { class: "table-wrap", role: "region", "aria-label": label, tabindex: "0" },
    table,
  );
}

/**
 * @param {string} title
 * @param {string} id
 * @param {...import("./dom.js").Child} children
 */
export function card(title, id, ...children) {
  return h("section", { class: "card", "aria-labelledby": id }, h("h3", { id }, title), children);
}

/**
 * The alert shown where a page's data could not be loaded.
 * @param {"h2" | "h3"} heading
 * @param {string} title
 * @param {string} text what went wrong
 */
export function loadProblem(heading, title, text) {
  return h(
    "div",
    { class: "card problem", role: "alert" },
    h(heading, { class: "error-title" }, title),
    h("p", {}, text),
  );
}

/**
 * A "Copy" button for a secret shown in `shown`, and the status line saying what it did: copied,
 * or (where the page may not write the clipboard) the secret selected for the keyboard.
 * @param {string} secret
 * @param {HTMLElement} shown
 * @param {Record<string, string>} attrs the button's, besides its type
 * @returns {[HTMLElement, HTMLElement]}
 */
export function copyButton(secret, shown, attrs = {}) {
  const status = h("span", { class: "muted small", role: "status" });
  const button = h("button", {
    ...attrs,
    type: "button",
    onclick: async () => {
      try {
        await navigator.clipboard.writeText(secret);
        status.textContent = "Copied.";
      } catch {
        getSelection()?.selectAllChildren(shown);
        status.textContent = "Selected: press Ctrl+C (⌘C) to copy.";
      }
    },
  }, "Copy");
  return [button, status];
}

/**
 * A page's heading: the section it belongs to, then its title (focusable, for moving focus to a
 * page that opened).
 * @param {string} section
 * @param {string} title
 */
export function pageHead(section, title) {
  return h(
    "div",
    { class: "page-head" },
    h("p", { class: "crumb" }, section),
    h("h1", { tabindex: "-1" }, title),
  );
}
