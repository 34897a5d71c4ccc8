/**
 * The accumulated-sample card: users so far, the share of the target sample reached (which may
 * pass 100 %, or be unknown) and, beside the bar, the days left at the recent pace.
 */
import { h } from "./dom.js";
import { formatInteger, formatPercent, formatShare, formatStat } from "./format.js";

/**
 * @param {any} a
 * @param {Record<string, unknown>} saved
 */
export function sampleCard(a, saved) {
  const sample = a.sample ?? {};
  const users = (a.variants ?? []).map((/** @type {any} */ v) => v.users);
  const smallest = users.length ? Math.min(...users) : 0;
  const pct = sample.percent_of_target;
  const known = typeof pct === "number";
  const fill = h("div", { class: "progress-fill" });
  fill.style.width = `${known ? Math.min(100, Math.max(0, pct)) : 0}%`;
  const reached = known && pct >= 100;
  const days = sample.days_left;
  const rate = sample.users_per_day;
  const daysText = reached
    ? "target reached"
    : typeof days === "number"
    ? `${formatInteger(days)} ${days === 1 ? "day" : "days"} left`
    : known
    ? "days left unknown"
    : "";
  const source = typeof saved.target_users_per_variant === "number"
    ? "Target set in the settings."
    : `Target from a power calculation on ${a.key_metric ?? "the key metric"}: MDE ${
      formatShare(typeof saved.mde === "number" ? saved.mde : 0.05, 1)
    } relative, alpha ${saved.alpha ?? 0.05}, power ${saved.power ?? 0.8}.`;
  return h(
    "section",
    { class: "card sample", "aria-labelledby": "sample-title" },
    h("h3", { id: "sample-title" }, "Accumulated sample"),
    h(
      "p",
      { class: "big" },
      h("span", { id: "sample-total" }, formatInteger(sample.total_users)),
      " users",
    ),
    h(
      "div",
      { class: "progress-row" },
      h(
        "div",
        {
          class: `progress${reached ? " complete" : ""}`,
          role: "progressbar",
          "aria-labelledby": "sample-title",
          "aria-valuemin": 0,
          "aria-valuemax": 100,
          "aria-valuenow": known ? Math.min(100, Math.round(pct * 10) / 10) : null,
          "aria-valuetext": known
            ? `${formatPercent(pct)} of the target${daysText ? `, ${daysText}` : ""}`
            : "no target",
        },
        fill,
      ),
      daysText ? h("span", { class: "days-left", id: "sample-days-left" }, daysText) : null,
    ),
    known
      ? h(
        "p",
        {},
        h("strong", { id: "sample-percent" }, formatPercent(pct)),
        " of the target",
        reached ? h("span", { class: "reached" }, " — target reached") : null,
        h("br"),
        h(
          "span",
          { class: "muted" },
          `Smallest variant ${formatInteger(smallest)} of ${
            formatInteger(sample.target_users_per_variant)
          } users per variant (${formatInteger(sample.target_users)} in all).`,
        ),
      )
      : h(
        "p",
        {},
        h("strong", { id: "sample-percent" }, "No target"),
        h("br"),
        h(
          "span",
          { class: "muted" },
          "No target sample could be computed (see the warnings); set a target in the settings below.",
        ),
      ),
    known && typeof rate === "number"
      ? h(
        "p",
        { class: "muted small", id: "sample-rate" },
        `At ${formatStat(rate)} new users a day in the smallest variant (the last 7 dates).`,
      )
      : null,
    known ? h("p", { class: "muted small" }, source) : null,
  );
}
