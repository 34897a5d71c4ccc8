/**
 * The history charts, drawn as SVG sized to their container: one point per delivery, oldest on
 * the left. The lift chart shows, per variant, the always-valid (sequential) interval of the key
 * metric as a pale band with the lift as a line through it, and a dashed line at 0; bands far
 * wider than the rest are cut at the plot's edge. The chance chart shows each variant's chance
 * to beat the control, from 0 to 100 %.
 */
import { chartSvg, responsiveChart, s } from "./dom.js";
import { formatDay, formatLift, formatShare } from "./format.js";

/**
 * @typedef {object} HistorySeries
 * @property {string} name the variant
 * @property {string} color
 * @property {(number | null)[]} values one per delivery (the lift, or the chance)
 * @property {([number, number] | null)[]} [bands] one per delivery: the sequential interval
 */

/**
 * @typedef {object} HistoryChartOptions
 * @property {string} label for screen readers
 * @property {string} kind `lift` or `chance`
 * @property {string[]} deliveries ISO times, oldest first
 * @property {HistorySeries[]} series
 */

/**
 * @param {HistoryChartOptions} options
 * @returns {HTMLElement}
 */
export function historyChart(options) {
  return responsiveChart(
    `history-chart history-${options.kind}`,
    (width) => render(options, width),
  );
}

/**
 * The y range: for lifts, everything around the lifts and 0, widened to take in the bands
 * unless they would squeeze the rest (then they are cut); for chances, 0 to 1.
 * @param {HistoryChartOptions} options
 * @returns {[number, number]}
 */
function domain(options) {
  if (options.kind === "chance") return [0, 1];
  let low = 0;
  let high = 0;
  let outerLow = 0;
  let outerHigh = 0;
  for (const line of options.series) {
    for (const v of line.values) {
      if (typeof v !== "number") continue;
      low = Math.min(low, v);
      high = Math.max(high, v);
    }
    for (const band of line.bands ?? []) {
      if (!band) continue;
      outerLow = Math.min(outerLow, band[0]);
      outerHigh = Math.max(outerHigh, band[1]);
    }
  }
  const span = Math.max(high - low, 0.02);
  const from = Math.max(outerLow, low - 1.5 * span);
  const to = Math.min(outerHigh, high + 1.5 * span);
  const pad = (to - from) * 0.05 || 0.01;
  return [Math.min(from, low) - pad, Math.max(to, high) + pad];
}

/**
 * @typedef {object} Frame where the plot sits in the chart, and its scales
 * @property {number} width
 * @property {number} height
 * @property {{ left: number, right: number, top: number, bottom: number }} m the margins
 * @property {number} plotW
 * @property {number[]} ticks the y values with a grid line
 * @property {(i: number) => number} x of the i-th delivery
 * @property {(v: number) => number} y of a value, held inside the plot
 * @property {(v: number) => string} format a value as the chart labels it
 */

/**
 * @param {HistoryChartOptions} options
 * @param {number} width
 * @returns {Frame}
 */
function frameOf(options, width) {
  const height = 200;
  const m = { left: 64, right: 14, top: 10, bottom: 26 };
  const plotW = width - m.left - m.right;
  const plotH = height - m.top - m.bottom;
  const n = options.deliveries.length;
  const [y0, y1] = domain(options);
  const chance = options.kind === "chance";
  return {
    width,
    height,
    m,
    plotW,
    ticks: chance ? [0, 0.25, 0.5, 0.75, 1] : niceTicks(y0, y1),
    x: (i) => m.left + (n > 1 ? (i / (n - 1)) * plotW : plotW / 2),
    y: (v) => m.top + plotH - ((Math.min(Math.max(v, y0), y1) - y0) / (y1 - y0)) * plotH,
    format: chance ? (v) => formatShare(v, 0) : (v) => formatLift(v),
  };
}

/**
 * @param {HistoryChartOptions} options
 * @param {number} width
 */
function render(options, width) {
  const frame = frameOf(options, width);
  const { m, y } = frame;
  const svg = chartSvg(width, frame.height, options.label);
  svg.append(s("g", { class: "grid" }, valueTicks(frame), deliveryLabels(options, frame)));
  if (options.kind === "lift") {
    svg.append(s("line", { class: "zero", x1: m.left, x2: width - m.right, y1: y(0), y2: y(0) }));
  }
  for (const line of options.series) svg.append(variantLayer(options, frame, line));
  return svg;
}

/**
 * A grid line and a label at each tick of the y axis.
 * @param {Frame} frame
 */
function valueTicks(frame) {
  const { m, y } = frame;
  return frame.ticks.map((t) => [
    s("line", { x1: m.left, x2: frame.width - m.right, y1: y(t), y2: y(t) }),
    s(
      "text",
      { x: m.left - 6, y: y(t), "text-anchor": "end", "dominant-baseline": "middle" },
      frame.format(t),
    ),
  ]);
}

/**
 * The deliveries along the x axis, as many as fit.
 * @param {HistoryChartOptions} options
 * @param {Frame} frame
 */
function deliveryLabels(options, frame) {
  const n = options.deliveries.length;
  // Deliveries of one day are told apart by their time (UTC, as the ISO stamps are).
  const days = options.deliveries.map((d) => d.slice(0, 10));
  const shared = new Set(days.filter((day, i) => days.indexOf(day) !== i));
  /** @param {number} i */
  const label = (i) =>
    shared.has(days[i])
      ? `${formatDay(days[i])} ${options.deliveries[i].slice(11, 16)}`
      : formatDay(days[i]);
  const every = Math.max(
    1,
    Math.ceil(n / Math.max(1, Math.floor(frame.plotW / (shared.size > 0 ? 96 : 64)))),
  );
  const labels = [];
  for (let i = 0; i < n; i += every) {
    labels.push(s(
      "text",
      {
        x: frame.x(i),
        y: frame.height - 8,
        // The last label ends at the plot's edge instead of running past it.
        "text-anchor": n > 1 && i === n - 1 ? "end" : "middle",
      },
      label(i),
    ));
  }
  return labels;
}

/**
 * One variant: its line, its band (when it has one) and a point per delivery with a value.
 * @param {HistoryChartOptions} options
 * @param {Frame} frame
 * @param {HistorySeries} line
 */
function variantLayer(options, frame, line) {
  const { x, y } = frame;
  let d = "";
  let pen = false;
  /** @type {SVGElement[]} */
  const points = [];
  line.values.forEach((v, i) => {
    if (typeof v !== "number") {
      pen = false;
      return;
    }
    d += `${pen ? "L" : "M"}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
    pen = true;
    points.push(s(
      "circle",
      {
        class: "point",
        cx: x(i),
        cy: y(v),
        r: 3,
        fill: line.color,
        dataset: { delivery: String(i) },
      },
      s("title", {}, `${line.name}, ${options.deliveries[i]}: ${frame.format(v)}`),
    ));
  });
  return s(
    "g",
    { class: "variant", dataset: { variant: line.name } },
    s("path", { class: "line", d, stroke: line.color, fill: "none", "stroke-width": 2 }),
    line.bands ? bandPaths(frame, line.bands, line.color) : null,
    points,
  );
}

/**
 * The band as one polygon per run of deliveries that have one.
 * @param {Frame} frame
 * @param {([number, number] | null)[]} bands
 * @param {string} color
 */
function bandPaths(frame, bands, color) {
  const { x, y } = frame;
  /** @type {SVGElement[]} */
  const paths = [];
  let upper = "";
  let lower = "";
  const flush = () => {
    if (upper) paths.push(s("path", { class: "band", d: `M${upper}L${lower}Z`, fill: color }));
    upper = "";
    lower = "";
  };
  bands.forEach((band, i) => {
    if (!band) return flush();
    upper = upper
      ? `${upper}L${x(i).toFixed(1)},${y(band[1]).toFixed(1)}`
      : `${x(i).toFixed(1)},${y(band[1]).toFixed(1)}`;
    lower = `${x(i).toFixed(1)},${y(band[0]).toFixed(1)}${lower ? "L" + lower : ""}`;
  });
  flush();
  return paths;
}

/**
 * About four round tick values between `low` and `high`.
 * @param {number} low
 * @param {number} high
 */
function niceTicks(low, high) {
  const raw = (high - low) / 4;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((k) => k * magnitude).find((k) => k >= raw) ?? raw;
  const out = [];
  // Multiples of the step counted, not summed: 0 is 0, not −2.8e−17.
  for (let i = Math.ceil(low / step); i * step <= high; i++) {
    out.push(Number((i * step).toPrecision(12)));
  }
  return out;
}
