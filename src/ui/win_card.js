/**
 * The win-probability card: each variant's chance to beat the control and to be best on the key
 * metric, with the lift and its fixed-horizon interval (the same as in the comparisons).
 */
import { h } from "./dom.js";
import { formatLift, formatShare } from "./format.js";
import { scrollTable } from "./widgets.js";
import { levelText } from "./comparisons_card.js";

/**
 * A chance as text over a bar.
 * @param {number | null | undefined} x
 */
function chanceCell(x) {
  if (typeof x !== "number") return "—";
  const bar = h("span", { class: "chance-fill" });
  bar.style.width = `${Math.max(0, Math.min(1, x)) * 100}%`;
  return h(
    "span",
    { class: "chance" },
    h("span", { class: "chance-bar", "aria-hidden": "true" }, bar),
    formatShare(x),
  );
}

/** @param {any} a */
export function winCard(a) {
  const win = a.win_probability ?? { variants: [] };
  const rows = win.variants ?? [];
  const challengers = rows.filter((/** @type {any} */ v) =>
    typeof v.chance_to_beat_control === "number"
  );
  const best = challengers.reduce(
    (
      /** @type {any} */ top,
      /** @type {any} */ v,
    ) => (top === null || v.chance_to_beat_control > top.chance_to_beat_control ? v : top),
    null,
  );
  return h(
    "section",
    { class: "card win", "aria-labelledby": "win-title" },
    h(
      "h3",
      { id: "win-title" },
      "Win probability on ",
      h("span", { class: "metric-name" }, win.metric ?? a.key_metric ?? "—"),
    ),
    best
      ? h(
        "p",
        { class: "summary" },
        h("strong", {}, best.name),
        ` has a ${formatShare(best.chance_to_beat_control)} chance to beat the control ${
          a.control ?? ""
        }` +
          (typeof best.lift === "number" ? ` (lift ${formatLift(best.lift)}).` : "."),
      )
      : null,
    scrollTable(
      "Win probability per variant",
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
            h("th", { scope: "col" }, "Chance to beat control"),
            h("th", { scope: "col" }, "Chance to be best"),
            h("th", { scope: "col" }, `Lift (fixed-horizon ${levelText(a)} interval)`),
          ),
        ),
        h(
          "tbody",
          {},
          rows.map((/** @type {any} */ v) => {
            const isControl = v.chance_to_beat_control === null ||
              v.chance_to_beat_control === undefined;
            const ci = Array.isArray(v.lift_ci95)
              ? [
                h("span", { class: "nowrap" }, formatLift(v.lift_ci95[0])),
                " to ",
                h("span", { class: "nowrap" }, formatLift(v.lift_ci95[1])),
              ]
              : null;
            return h(
              "tr",
              { dataset: { variant: v.name } },
              h("th", { scope: "row" }, v.name),
              h(
                "td",
                { dataset: { cell: "beat" } },
                isControl
                  ? h("span", { class: "tag" }, "control")
                  : chanceCell(v.chance_to_beat_control),
              ),
              h("td", { dataset: { cell: "best" } }, chanceCell(v.chance_to_be_best)),
              h(
                "td",
                { class: `lift ${liftClass(v)}` },
                isControl ? "—" : [
                  h("span", { dataset: { cell: "lift" } }, formatLift(v.lift)),
                  ci ? h("span", { class: "ci", dataset: { cell: "ci" } }, ci) : null,
                ],
              ),
            );
          }),
        ),
      ),
    ),
  );
}

/** @param {any} v */
function liftClass(v) {
  if (!Array.isArray(v.lift_ci95)) return "";
  if (v.lift_ci95[0] > 0) return "up";
  if (v.lift_ci95[1] < 0) return "down";
  return "";
}
