/**
 * The Health card: every dimension column of the file, and for each the traffic split of every
 * value tested against the expected one (a value is flagged below 0.001 ÷ the values tested),
 * failing values first; dimensions with too many values are named as skipped. Below it, the
 * breakdown of the key metric for a dimension the reader picks.
 */
import { h, replace } from "./dom.js";
import {
  formatInteger,
  formatLiftInterval,
  formatLiftShort,
  formatPValue,
  formatShare,
  formatStat,
} from "./format.js";
import { scrollTable } from "./widgets.js";

/** @param {string} name */
function idPart(name) {
  return name.replace(/[^A-Za-z0-9_-]/g, "_");
}

/**
 * The values of a dimension, those whose split fails first (by p-value), then by users.
 * @param {any} d
 */
function failingFirst(d) {
  const values = [...(d.values ?? [])];
  return values.sort((a, b) =>
    Number(b.srm?.mismatch) - Number(a.srm?.mismatch) ||
    (a.srm?.mismatch ? a.srm.p_value - b.srm.p_value : 0)
  );
}

/**
 * @param {any} d a dimension
 * @param {string[]} variants
 */
function dimensionBlock(d, variants) {
  const head = dimensionHead(d);
  if (d.skipped) {
    return h(
      "div",
      { class: "dimension", dataset: { dimension: d.name, skipped: "true" } },
      head,
      h(
        "p",
        { class: "muted small" },
        d.distinct_values >= 10000
          ? "Not broken down: 10,000 distinct values or more (a dimension is broken down up to 50)."
          : `Not broken down: ${
            formatInteger(d.distinct_values)
          } distinct values (a dimension is broken down up to 50).`,
      ),
    );
  }
  return h(
    "div",
    { class: "dimension", dataset: { dimension: d.name } },
    head,
    scrollTable(`${d.name}: the split of each value`, splitTable(d, variants)),
    h(
      "p",
      { class: "muted small" },
      `Flagged below p = ${formatPValue(d.threshold)} (0.001 ÷ ${(d.values ?? []).length} values).`,
      d.inconsistent_users > 0
        ? ` ${
          formatInteger(d.inconsistent_users)
        } users have rows with different values; each counts under the value of their first row.`
        : "",
    ),
  );
}

/**
 * The dimension's heading: its name, how many values it has, and skipped, failing or ok.
 * @param {any} d
 */
function dimensionHead(d) {
  const failing = (d.values ?? []).filter((/** @type {any} */ v) => v.srm?.mismatch);
  return h(
    "h4",
    { id: `health-${idPart(d.name)}` },
    h("span", { class: "metric-name" }, d.name),
    h(
      "span",
      { class: "tag" },
      d.distinct_values >= 10000 ? "10,000+ values" : `${formatInteger(d.distinct_values)} values`,
    ),
    d.skipped
      ? h("span", { class: "tag", dataset: { tag: "skipped" } }, "skipped")
      : failing.length > 0
      ? h(
        "span",
        { class: "tag tag-bad", dataset: { tag: "failing" } },
        `${failing.length} failing`,
      )
      : h("span", { class: "tag tag-good", dataset: { tag: "ok" } }, "split ok"),
  );
}

/**
 * The split table of a dimension: a row per value, failing values first.
 * @param {any} d
 * @param {string[]} variants
 */
function splitTable(d, variants) {
  return h(
    "table",
    { class: "numbers health-table" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col" }, "Value"),
        variants.map((name) => h("th", { scope: "col" }, `${name} users`)),
        h("th", { scope: "col" }, "p-value"),
        h("th", { scope: "col" }, "Split"),
      ),
    ),
    h("tbody", {}, failingFirst(d).map((/** @type {any} */ v) => splitRow(v, variants))),
  );
}

/**
 * A value's users per variant, its p-value and whether its split fits.
 * @param {any} v a value of a dimension
 * @param {string[]} variants
 */
function splitRow(v, variants) {
  return h(
    "tr",
    {
      class: v.srm?.mismatch ? "failing" : "",
      dataset: { value: v.value, mismatch: String(Boolean(v.srm?.mismatch)) },
    },
    h(
      "th",
      { scope: "row", title: v.pooled_values ? `Pooled: ${v.pooled_values.join(", ")}` : null },
      v.value,
    ),
    variants.map((name) => {
      const found = (v.variants ?? []).find((/** @type {any} */ x) => x.name === name);
      return h("td", { dataset: { cell: `users-${name}` } }, formatInteger(found?.users));
    }),
    h("td", { dataset: { cell: "p" } }, formatPValue(v.srm?.p_value)),
    h(
      "td",
      { class: `split-cell split-${v.srm?.mismatch ? "bad" : "ok"}`, dataset: { cell: "split" } },
      v.srm?.mismatch ? "mismatch" : v.srm?.enough_data ? "ok" : "too few users",
    ),
  );
}

/**
 * @param {any} a the analysis
 */
export function healthCard(a) {
  if (!Array.isArray(a.dimensions)) return null; // an analysis made before dimension health
  const variants = (a.variants ?? []).map((/** @type {any} */ v) => v.name);
  const dimensions = a.dimensions;
  const failing = dimensions.filter((/** @type {any} */ d) =>
    (d.values ?? []).some((/** @type {any} */ v) => v.srm?.mismatch)
  );
  // Dimensions with a failing value first.
  const ordered = [
    ...failing,
    ...dimensions.filter((/** @type {any} */ d) => !failing.includes(d)),
  ];
  return h(
    "section",
    {
      class: `card health ${failing.length > 0 ? "health-bad" : "health-good"}`,
      "aria-labelledby": "health-title",
    },
    h("h3", { id: "health-title" }, "Health by dimension"),
    dimensions.length === 0
      ? h(
        "p",
        { class: "muted", id: "health-verdict" },
        "The file has no dimension columns (columns of text besides user_id, variant and date).",
      )
      : [
        h(
          "p",
          { class: "verdict", id: "health-verdict" },
          h(
            "span",
            { class: "verdict-icon", "aria-hidden": "true" },
            failing.length > 0 ? "!" : "✓",
          ),
          failing.length > 0
            ? `Split mismatch within ${failing.map((/** @type {any} */ d) => d.name).join(", ")}`
            : "Every value's split fits",
        ),
        h(
          "p",
          { class: "muted small" },
          "Each value's users per variant are tested against the expected split; values under 1 % of the users are pooled into (other).",
        ),
        ordered.map((/** @type {any} */ d) => dimensionBlock(d, variants)),
      ],
  );
}

/**
 * The breakdown table of one dimension: per value, each variant's users and key-metric mean,
 * and each variant's lift over the control with its fixed-horizon interval.
 * @param {any} a
 * @param {any} d
 */
function breakdownTable(a, d) {
  const variants = (a.variants ?? []).map((/** @type {any} */ v) => v.name);
  const others = variants.filter((/** @type {string} */ name) => name !== a.control);
  const kind = (a.metrics ?? []).find((/** @type {any} */ m) => m.name === d.key_metric)?.kind;
  const mean = kind === "conversion" ? (/** @type {number} */ x) => formatShare(x) : formatStat;
  return scrollTable(
    `${d.name}: ${d.key_metric} per value`,
    h(
      "table",
      { class: "numbers breakdown-table", dataset: { dimension: d.name } },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          h("th", { scope: "col" }, d.name),
          variants.map((/** @type {string} */ name) => [
            h("th", { scope: "col" }, `${name} users`),
            h("th", { scope: "col" }, `${name} mean`),
          ]),
          others.map((/** @type {string} */ name) => h("th", { scope: "col" }, `${name} lift`)),
        ),
      ),
      h(
        "tbody",
        {},
        (d.values ?? []).map((/** @type {any} */ v) =>
          h(
            "tr",
            { dataset: { value: v.value } },
            h("th", { scope: "row" }, v.value),
            variants.map((/** @type {string} */ name) => {
              const found = (v.variants ?? []).find((/** @type {any} */ x) => x.name === name);
              return [
                h("td", { dataset: { cell: `users-${name}` } }, formatInteger(found?.users)),
                h("td", { dataset: { cell: `mean-${name}` } }, mean(found?.mean)),
              ];
            }),
            others.map((/** @type {string} */ name) => {
              const c = (v.key_metric ?? []).find((/** @type {any} */ x) => x.name === name);
              return h(
                "td",
                { class: "lift", dataset: { cell: `lift-${name}` } },
                h("span", { class: "nowrap" }, formatLiftShort(c?.lift)),
                h("span", { class: "ci" }, ` (${formatLiftInterval(c?.ci)})`),
              );
            }),
          )
        ),
      ),
    ),
  );
}

/**
 * The breakdown card: a dimension picker and its table.
 * @param {any} a
 */
export function breakdownCard(a) {
  const shown = (a.dimensions ?? []).filter((/** @type {any} */ d) => !d.skipped && d.key_metric);
  if (shown.length === 0) return null;
  const failing = shown.find((/** @type {any} */ d) =>
    (d.values ?? []).some((/** @type {any} */ v) => v.srm?.mismatch)
  );
  let chosen = failing ?? shown[0];
  const body = h("div", { class: "breakdown-body" });
  const select = h(
    "select",
    {
      id: "breakdown-dimension",
      onchange: () => {
        chosen = shown.find((/** @type {any} */ d) => d.name === select.value) ?? shown[0];
        replace(body, breakdownTable(a, chosen));
      },
    },
    shown.map((/** @type {any} */ d) =>
      h("option", { value: d.name, selected: d === chosen }, d.name)
    ),
  );
  replace(body, breakdownTable(a, chosen));
  return h(
    "section",
    { class: "card breakdown", "aria-labelledby": "breakdown-title" },
    h(
      "div",
      { class: "card-head" },
      h("h3", { id: "breakdown-title" }, `${shown[0].key_metric} by dimension`),
      h(
        "label",
        { class: "inline-field" },
        "Dimension ",
        select,
      ),
    ),
    h(
      "p",
      { class: "muted small" },
      `Each value's users and mean per variant, and the lift over ${a.control} with its fixed-horizon interval (no CUPED).`,
    ),
    body,
  );
}
