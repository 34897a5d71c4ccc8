/**
 * The interval chart of one metric: one row per variant compared with the control, drawn as SVG
 * sized to its container (redrawn when it resizes): the always-valid (sequential) interval as a
 * wide pale band, the fixed-horizon interval as a narrow dark bar inside it, the lift as a dot,
 * and a dashed line at 0 (no change). Bands far wider than the rest are cut at the plot's edge,
 * with an open end marking the cut.
 */
import { chartSvg, h, responsiveChart, s } from "./dom.js";
import { formatLift } from "./format.js";

/**
 * @typedef {object} IntervalRow
 * @property {string} name the variant
 * @property {string} color
 * @property {number | null} lift
 * @property {[number, number] | null} fixed
 * @property {[number, number] | null} sequential
 */

/**
 * @typedef {object} IntervalChartOptions
 * @property {string} label what the chart shows, for screen readers
 * @property {IntervalRow[]} rows
 */

const ROW = 34;
const TOP = 24;
const BOTTOM = 8;

/**
 * @param {IntervalChartOptions} options
 * @returns {HTMLElement}
 */
export function intervalChart(options) {
  return responsiveChart("interval-chart", (width) => render(options, width));
}

/**
 * The x range: everything around the fixed intervals, the lifts and 0, widened to take in the
 * sequential bands unless they would squeeze the rest (then they are cut).
 * @param {IntervalRow[]} rows
 * @returns {[number, number]}
 */
function domain(rows) {
  let coreLow = 0;
  let coreHigh = 0;
  let outerLow = 0;
  let outerHigh = 0;
  for (const row of rows) {
    for (const x of [row.lift, ...(row.fixed ?? [])]) {
      if (typeof x !== "number") continue;
      coreLow = Math.min(coreLow, x);
      coreHigh = Math.max(coreHigh, x);
    }
    for (const x of row.sequential ?? []) {
      outerLow = Math.min(outerLow, x);
      outerHigh = Math.max(outerHigh, x);
    }
  }
  const core = Math.max(coreHigh - coreLow, 0.01);
  const low = Math.max(Math.min(outerLow, coreLow), coreLow - 0.75 * core);
  const high = Math.min(Math.max(outerHigh, coreHigh), coreHigh + 0.75 * core);
  // Nothing to show (no variant compared): a small span around 0, so that 0 has a place.
  if (!(high > low)) return [-0.05, 0.05];
  const pad = 0.06 * (high - low);
  return [low - pad, high + pad];
}

/**
 * Round tick values over [low, high], 0 among them.
 * @param {number} low
 * @param {number} high
 * @param {number} count wanted number of intervals
 */
function ticks(low, high, count) {
  const raw = (high - low) / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((m) => m >= raw) ?? raw;
  const out = [];
  // Multiples of the step counted, not summed: 0 is 0, not −2.8e−17.
  for (let i = Math.ceil(low / step); i * step <= high; i++) {
    out.push(Number((i * step).toPrecision(12)));
  }
  return out;
}

/** Lift ticks without needless decimals: `+10 %`, `−2.5 %`. @param {number} x */
function tickLabel(x) {
  if (x === 0) return "0";
  const text = String(Number((x * 100).toPrecision(6)));
  return (text.startsWith("-") ? "−" + text.slice(1) : "+" + text) + " %";
}

/**
 * @param {IntervalChartOptions} options
 * @param {number} width
 * @returns {SVGElement}
 */
function render(options, width) {
  const { rows } = options;
  const height = TOP + rows.length * ROW + BOTTOM;
  const labelWidth = Math.min(
    Math.max(...rows.map((r) => r.name.length), 3) * 7.5 + 16,
    width * 0.3,
  );
  const left = labelWidth;
  const right = 14;
  const plotW = width - left - right;
  const [low, high] = domain(rows);
  /** @param {number} v */
  const x = (v) => left + ((v - low) / (high - low)) * plotW;
  /** @param {number} v */
  const clamp = (v) => Math.min(width - right, Math.max(left, x(v)));

  const svg = chartSvg(width, height, options.label);
  const grid = s("g", { class: "grid" });
  for (const t of ticks(low, high, Math.max(2, Math.floor(plotW / 90)))) {
    grid.append(
      s("line", { x1: x(t), x2: x(t), y1: TOP - 4, y2: height - BOTTOM }),
      s("text", { x: x(t), y: TOP - 9, "text-anchor": "middle" }, tickLabel(t)),
    );
  }
  svg.append(grid);
  svg.append(
    s("line", { class: "zero", x1: x(0), x2: x(0), y1: TOP - 4, y2: height - BOTTOM }),
  );

  rows.forEach((row, i) => {
    const mid = TOP + i * ROW + ROW / 2;
    const g = s("g", {
      class: "interval-row",
      dataset: { variant: row.name, lift: row.lift ?? "" },
    });
    g.append(
      s("text", { class: "row-label", x: 4, y: mid, "dominant-baseline": "middle" }, row.name),
    );
    if (row.lift === null || row.fixed === null || row.sequential === null) {
      g.append(
        s("text", { x: left + 4, y: mid, "dominant-baseline": "middle" }, "no comparison"),
      );
      svg.append(g);
      return;
    }
    const [sLow, sHigh] = row.sequential;
    const band = s("rect", {
      class: "sequential",
      x: clamp(sLow),
      y: mid - 8,
      width: Math.max(1, clamp(sHigh) - clamp(sLow)),
      height: 16,
      rx: 3,
      fill: row.color,
      stroke: row.color,
    });
    const bar = s("rect", {
      class: "fixed",
      x: clamp(row.fixed[0]),
      y: mid - 3,
      width: Math.max(1, clamp(row.fixed[1]) - clamp(row.fixed[0])),
      height: 6,
      fill: row.color,
    });
    g.append(band, bar);
    // An open end where the band goes on past the plot.
    if (x(sLow) < left) g.append(cut(left, mid, -1, row.color));
    if (x(sHigh) > width - right) g.append(cut(width - right, mid, 1, row.color));
    g.append(s("circle", { class: "point", cx: x(row.lift), cy: mid, r: 5, fill: row.color }));
    g.append(
      s(
        "title",
        {},
        `${row.name}: ${formatLift(row.lift)}; fixed-horizon interval ${
          formatLift(row.fixed[0])
        } to ${formatLift(row.fixed[1])}; always-valid interval ${formatLift(sLow)} to ${
          formatLift(sHigh)
        }`,
      ),
    );
    svg.append(g);
  });
  return svg;
}

/**
 * A chevron at a band's cut end.
 * @param {number} at
 * @param {number} mid
 * @param {number} direction −1 left, 1 right
 * @param {string} color
 */
function cut(at, mid, direction, color) {
  const tip = at + direction * 2;
  const back = at - direction * 5;
  return s("path", {
    class: "cut",
    d: `M${back},${mid - 8} L${tip},${mid} L${back},${mid + 8}`,
    stroke: color,
    fill: "none",
    "stroke-width": 2,
  });
}

/**
 * The chart's key: what the band, the bar and the dot are.
 */
export function intervalLegend() {
  return h(
    "ul",
    { class: "legend interval-legend", "aria-label": "How to read the interval chart" },
    h("li", {}, h("span", { class: "key-band", "aria-hidden": "true" }), "always-valid interval"),
    h("li", {}, h("span", { class: "key-bar", "aria-hidden": "true" }), "fixed-horizon interval"),
    h("li", {}, h("span", { class: "key-dot", "aria-hidden": "true" }), "lift"),
    h("li", {}, h("span", { class: "key-zero", "aria-hidden": "true" }), "no change"),
  );
}
