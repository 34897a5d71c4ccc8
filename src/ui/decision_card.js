/**
 * The decision card, first on the page: for each variant, the verdict on the key metric in
 * words, led by the view the settings choose (`inference`): the always-valid decision (the
 * default), the fixed-horizon test, or the Bayesian chance to beat the control; the other two
 * follow in a smaller line, so the figures elsewhere on the page are never a surprise.
 */
import { h } from "./dom.js";
import { formatLiftInterval, formatLiftShort, formatPValue, formatShare } from "./format.js";
import { levelText } from "./comparisons_card.js";

/**
 * The always-valid verdict in words.
 * @param {any} a
 * @param {any} c the key metric's comparison
 * @param {string} metric
 */
function sequentialText(a, c, metric) {
  const lift = formatLiftShort(c.lift);
  if (c.decision === "too_early") {
    return `Too early to decide on ${c.name} against ${a.control} on ${metric}: ${lift} so far ` +
      `— the experiment has not reached its minimum ${tooEarlyWhat(a)}`;
  }
  if (c.decision === "better") {
    return `${c.name} is better than ${a.control} on ${metric}: ${lift}, safe to act on at any look`;
  }
  if (c.decision === "worse") {
    return `${c.name} is worse than ${a.control} on ${metric}: ${lift}, safe to act on at any look`;
  }
  const days = a.sample?.days_left;
  const wait = typeof days === "number" && days > 0
    ? ` — keep it running (about ${days} ${days === 1 ? "day" : "days"} to the target sample)`
    : " — keep it running";
  return `No decision yet on ${c.name} against ${a.control} on ${metric}: ${lift}, the ` +
    `always-valid interval (${formatLiftInterval(c.sequential_ci)}) still includes 0${wait}`;
}

/**
 * Which minimum is not reached yet, in words.
 * @param {any} a
 */
function tooEarlyWhat(a) {
  const w = (a.warnings ?? []).find((/** @type {string} */ text) =>
    text.startsWith("Too early for a decision: ")
  );
  return w ? `(${w.slice("Too early for a decision: ".length)})` : "of users and days";
}

/**
 * The fixed-horizon verdict in words.
 * @param {any} a
 * @param {any} c
 * @param {string} metric
 * @param {number} alpha
 */
function frequentistText(a, c, metric, alpha) {
  const p = c.p_value_adjusted ?? c.p_value;
  const holm = c.p_value_adjusted !== null && c.p_value_adjusted !== c.p_value ? " (Holm)" : "";
  const lift = formatLiftShort(c.lift);
  const interval = `${levelText(a)} interval ${formatLiftInterval(c.ci)}`;
  if (typeof p === "number" && p < alpha) {
    return `${c.name} differs from ${a.control} on ${metric}: ${lift} (${interval}, ` +
      `p${holm} = ${formatPValue(p)}), significant at the fixed horizon — trust it at the ` +
      `planned sample, not at an earlier look`;
  }
  return `${c.name} against ${a.control} on ${metric}: ${lift} (${interval}, p${holm} = ` +
    `${formatPValue(p)}), not significant at the fixed horizon`;
}

/**
 * The Bayesian verdict in words.
 * @param {any} a
 * @param {any} c
 * @param {string} metric
 * @param {boolean} lower
 */
function bayesianText(a, c, metric, lower) {
  const win = (a.win_probability?.variants ?? []).find((/** @type {any} */ v) => v.name === c.name);
  const chance = win?.chance_to_beat_control;
  if (typeof chance !== "number") {
    return `${c.name}: no chance to beat ${a.control} on ${metric} can be given yet`;
  }
  return `${c.name} has a ${formatShare(chance)} chance to beat ${a.control} on ${metric}` +
    `${lower ? " (lower is better)" : ""}: ${formatLiftShort(c.lift)}`;
}

/** @param {any} a */
export function decisionCard(a) {
  const key = (a.metrics ?? []).find((/** @type {any} */ m) => m.name === a.key_metric);
  const comparisons = key?.comparisons ?? [];
  if (!key || comparisons.length === 0) return null;
  const view = a.inference === "frequentist" || a.inference === "bayesian"
    ? a.inference
    : "sequential";
  const alpha = 1 - (typeof a.confidence_level === "number" ? a.confidence_level : 0.95);
  const lower = key.lower_is_better === true;
  /** @param {any} c @param {string} which */
  const text = (c, which) =>
    which === "sequential"
      ? sequentialText(a, c, key.name)
      : which === "frequentist"
      ? frequentistText(a, c, key.name, alpha)
      : bayesianText(a, c, key.name, lower);
  const others = ["sequential", "frequentist", "bayesian"].filter((v) => v !== view);
  const heading = view === "sequential"
    ? "Decision"
    : view === "frequentist"
    ? "Fixed-horizon test"
    : "Chance to win";
  return h(
    "section",
    { class: `card decision view-${view}`, "aria-labelledby": "decision-title" },
    h(
      "h3",
      { id: "decision-title" },
      `${heading} on `,
      h("span", { class: "metric-name" }, key.name),
    ),
    comparisons.map((/** @type {any} */ c) => {
      const verdict = c.lift === null ? "none" : c.decision ?? "none";
      return h(
        "div",
        { class: `decision-item decision-${verdict}`, dataset: { variant: c.name } },
        h(
          "p",
          { class: "decision-text", dataset: { decision: c.decision ?? "none" } },
          c.lift === null
            ? `${c.name} cannot be compared with ${a.control} on ${key.name} yet (see the warnings)`
            : text(c, view),
        ),
        c.lift === null ? null : h(
          "p",
          { class: "muted small decision-others" },
          others.map((which) =>
            which === "sequential"
              ? `Always valid: ${
                c.decision === "inconclusive"
                  ? "no decision yet"
                  : c.decision === "too_early"
                  ? "too early"
                  : c.decision
              }, ${formatLiftInterval(c.sequential_ci)}. `
              : which === "frequentist"
              ? `Fixed horizon: p = ${formatPValue(c.p_value)}. `
              : `Chance to beat ${a.control}: ${
                formatShare(
                  (a.win_probability?.variants ?? []).find((/** @type {any} */ v) =>
                    v.name === c.name
                  )?.chance_to_beat_control,
                )
              }. `
          ),
        ),
      );
    }),
  );
}
