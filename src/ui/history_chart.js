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
 * @param {HistoryChartOptions} options
 * @param {number} width
 */
function render(options, width) {
  const height = 200;
  const m = { left: 64, right: 14, top: 10, bottom: 26 };
  const plotW = width - m.left - m.right;
  const plotH = height - m.top - m.bottom;
  const n = options.deliveries.length;
  const [y0, y1] = domain(options);
  /** @param {number} i */
  const x = (i) => m.left + (n > 1 ? (i / (n - 1)) * plotW : plotW / 2);
  /** @param {number} v */
  const y = (v) => m.top + plotH - ((Math.min(Math.max(v, y0), y1) - y0) / (y1 - y0)) * plotH;
  const format = options.kind === "chance"
    ? (/** @type {number} */ v) => formatShare(v, 0)
    : (/** @type {number} */ v) => formatLift(v);
  const svg = chartSvg(width, height, options.label);
  const grid = s("g", { class: "grid" });
  const ticks = options.kind === "chance" ? [0, 0.25, 0.5, 0.75, 1] : niceTicks(y0, y1);
  for (const t of ticks) {
    grid.append(
      s("line", { x1: m.left, x2: width - m.right, y1: y(t), y2: y(t) }),
      s(
        "text",
        { x: m.left - 6, y: y(t), "text-anchor": "end", "dominant-baseline": "middle" },
        format(t),
      ),
    );
  }
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
    Math.ceil(n / Math.max(1, Math.floor(plotW / (shared.size > 0 ? 96 : 64)))),
  );
  for (let i = 0; i < n; i += every) {
    grid.append(
      s(
        "text",
        {
          x: x(i),
          y: height - 8,
          // The last label ends at the plot's edge instead of running past it.
          "text-anchor": n > 1 && i === n - 1 ? "end" : "middle",
        },
        label(i),
      ),
    );
  }
  svg.append(grid);
  if (options.kind === "lift") {
    svg.append(s("line", { class: "zero", x1: m.left, x2: width - m.right, y1: y(0), y2: y(0) }));
  }
  for (const line of options.series) {
    const g = s("g", { class: "variant", dataset: { variant: line.name } });
    if (line.bands) {
      // The band as one polygon per run of deliveries that have one.
      let upper = "";
      let lower = "";
      const flush = () => {
        if (upper) {
          g.append(s("path", { class: "band", d: `M${upper}L${lower}Z`, fill: line.color }));
        }
        upper = "";
        lower = "";
      };
      line.bands.forEach((band, i) => {
        if (!band) return flush();
        upper = upper
          ? `${upper}L${x(i).toFixed(1)},${y(band[1]).toFixed(1)}`
          : `${x(i).toFixed(1)},${y(band[1]).toFixed(1)}`;
        lower = `${x(i).toFixed(1)},${y(band[0]).toFixed(1)}${lower ? "L" + lower : ""}`;
      });
      flush();
    }
    let d = "";
    let pen = false;
    line.values.forEach((v, i) => {
      if (typeof v !== "number") {
        pen = false;
        return;
      }
      d += `${pen ? "L" : "M"}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
      pen = true;
      g.append(
        s(
          "circle",
          {
            class: "point",
            cx: x(i),
            cy: y(v),
            r: 3,
            fill: line.color,
            dataset: { delivery: String(i) },
          },
          s("title", {}, `${line.name}, ${options.deliveries[i]}: ${format(v)}`),
        ),
      );
    });
    g.prepend(s("path", { class: "line", d, stroke: line.color, fill: "none", "stroke-width": 2 }));
    svg.append(g);
  }
  return svg;
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
