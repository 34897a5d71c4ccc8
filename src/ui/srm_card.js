/**
 * The SRM card: the verdict on the traffic split, observed against expected shares per variant,
 * chi-square and p-value.
 */
import { h } from "./dom.js";
import { formatInteger, formatPValue, formatShare } from "./format.js";
import { scrollTable } from "./widgets.js";

/** @param {any} a */
export function srmCard(a) {
  const srm = a.srm ?? {};
  const variants = a.variants ?? [];
  const total = variants.reduce((/** @type {number} */ n, /** @type {any} */ v) => n + v.users, 0);
  const state = !srm.enough_data ? "unknown" : srm.mismatch ? "bad" : "good";
  const verdict = {
    good: [
      "✓",
      "No sample ratio mismatch",
      "The observed split agrees with the expected one (flagged at p < 0.001).",
    ],
    bad: [
      "!",
      "Sample ratio mismatch",
      "The observed split differs from the expected one (p < 0.001): assignment or logging is probably broken, and the results below may be biased.",
    ],
    unknown: ["…", "Not enough data", "The check needs at least 8 users in every variant."],
  }[state];
  return h(
    "section",
    { class: `card srm srm-${state}`, "aria-labelledby": "srm-title" },
    h("h3", { id: "srm-title" }, "Traffic split (SRM)"),
    h(
      "p",
      { class: "verdict", id: "srm-verdict" },
      h("span", { class: "verdict-icon", "aria-hidden": "true" }, verdict[0]),
      verdict[1],
    ),
    h("p", { class: "muted" }, verdict[2]),
    scrollTable(
      "Observed and expected split",
      h(
        "table",
        { class: "numbers" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            h("th", { scope: "col" }, "Variant"),
            h("th", { scope: "col" }, "Users"),
            h("th", { scope: "col" }, "Observed"),
            h("th", { scope: "col" }, "Expected"),
          ),
        ),
        h(
          "tbody",
          {},
          variants.map((/** @type {any} */ v) =>
            h(
              "tr",
              { dataset: { variant: v.name } },
              h("th", { scope: "row" }, v.name),
              h("td", { dataset: { cell: "users" } }, formatInteger(v.users)),
              h(
                "td",
                { dataset: { cell: "observed" } },
                total > 0 ? formatShare(v.users / total) : "—",
              ),
              h("td", { dataset: { cell: "expected" } }, formatShare(srm.expected_split?.[v.name])),
            )
          ),
        ),
      ),
    ),
    h(
      "p",
      { class: "stats" },
      "Chi-square ",
      h(
        "strong",
        { id: "srm-chi-square" },
        typeof srm.chi_square === "number" ? srm.chi_square.toFixed(2) : "—",
      ),
      " · p-value ",
      h("strong", { id: "srm-p-value" }, formatPValue(srm.p_value)),
    ),
  );
}
