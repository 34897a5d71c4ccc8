/**
 * Line charts drawn as inline SVG, sized to their container (redrawn when it resizes) so text
 * stays readable at any width. A pointer over the plot shows the values of the nearest date.
 */
import { chartSvg, h, replace, responsiveChart, s } from "./dom.js";
import { formatDay } from "./format.js";

/** Okabe–Ito colours: distinguishable with the common colour-vision deficiencies. */
export const PALETTE = [
  "#0072b2",
  "#e69f00",
  "#009e73",
  "#cc79a7",
  "#56b4e9",
  "#d55e00",
  "#6b6b6b",
];

/**
 * @param {number} index
 */
export function colorOf(index) {
  return PALETTE[index % PALETTE.length];
}

/**
 * @typedef {object} Series
 * @property {string} name
 * @property {string} color
 * @property {(number | null)[]} values one per date; null leaves a gap
 */

/**
 * @typedef {object} ChartOptions
 * @property {string} label what the chart shows, for screen readers
 * @property {string[]} dates `YYYY-MM-DD`, ascending
 * @property {Series[]} series
 * @property {(y: number) => string} format tick and tooltip values
 * @property {number} [height] default 220
 */

/**
 * Round tick values covering [0, max].
 * @param {number} max
 * @param {number} count wanted number of intervals
 * @returns {number[]}
 */
function ticks(max, count) {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((m) => m >= raw) ?? raw;
  const out = [];
  for (let v = 0; v < max + step * 0.999; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/**
 * A chart that fills its container's width.
 * @param {ChartOptions} options
 * @returns {HTMLElement}
 */
export function lineChart(options) {
  return responsiveChart("chart", (width) => render(options, width));
}

/**
 * @param {ChartOptions} options
 * @param {number} width
 * @returns {Element[]}
 */
function render(options, width) {
  const { dates, series, format } = options;
  const height = options.height ?? 220;
  const values = series.flatMap((x) => x.values).filter((v) => typeof v === "number");
  const top = ticks(Math.max(0, ...values) * 1.05, height < 200 ? 3 : 4);
  const yMax = top[top.length - 1];
  const labelWidth = Math.max(...top.map((t) => format(t).length)) * 7 + 12;
  const m = { left: labelWidth, right: 14, top: 10, bottom: 26 };
  const plotW = width - m.left - m.right;
  const plotH = height - m.top - m.bottom;
  const times = dates.map((d) => Date.parse(`${d}T00:00:00Z`));
  const t0 = times[0] ?? 0;
  const span = (times[times.length - 1] ?? 0) - t0;
  /** @param {number} i */
  const x = (i) => m.left + (span > 0 ? ((times[i] - t0) / span) * plotW : plotW / 2);
  /** @param {number} v */
  const y = (v) => m.top + plotH - (v / yMax) * plotH;

  const svg = chartSvg(width, height, options.label);

  const grid = s("g", { class: "grid" });
  for (const t of top) {
    grid.append(
      s("line", { x1: m.left, x2: width - m.right, y1: y(t), y2: y(t) }),
      s(
        "text",
        { x: m.left - 8, y: y(t), "text-anchor": "end", "dominant-baseline": "middle" },
        format(t),
      ),
    );
  }
  const every = Math.max(1, Math.ceil(dates.length / Math.max(1, Math.floor(plotW / 64))));
  for (let i = 0; i < dates.length; i += every) {
    grid.append(
      s("text", { x: x(i), y: height - 8, "text-anchor": "middle" }, formatDay(dates[i])),
    );
  }
  svg.append(grid);

  const dots = dates.length <= 45;
  for (const line of series) {
    let d = "";
    let pen = false;
    const g = s("g", { class: "series" });
    line.values.forEach((v, i) => {
      if (typeof v !== "number") {
        pen = false;
        return;
      }
      d += `${pen ? "L" : "M"}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
      pen = true;
      if (dots) g.append(s("circle", { cx: x(i), cy: y(v), r: 2.5, fill: line.color }));
    });
    g.prepend(s("path", { d, stroke: line.color, fill: "none", "stroke-width": 2 }));
    svg.append(g);
  }

  const guide = s("line", { class: "guide", y1: m.top, y2: m.top + plotH, visibility: "hidden" });
  svg.append(guide);
  const tip = h("div", { class: "chart-tip", hidden: true, "aria-hidden": "true" });
  const overlay = s("rect", {
    x: m.left,
    y: m.top,
    width: plotW,
    height: plotH,
    fill: "transparent",
  });
  overlay.addEventListener("pointermove", (event) => {
    const px = /** @type {PointerEvent} */ (event).offsetX;
    let best = 0;
    for (let i = 1; i < dates.length; i++) {
      if (Math.abs(x(i) - px) < Math.abs(x(best) - px)) best = i;
    }
    guide.setAttribute("x1", String(x(best)));
    guide.setAttribute("x2", String(x(best)));
    guide.setAttribute("visibility", "visible");
    const rows = series.map((line) => {
      const v = line.values[best];
      return h(
        "span",
        { class: "tip-row" },
        swatch(line.color),
        `${line.name}: ${typeof v === "number" ? format(v) : "—"}`,
      );
    });
    replace(tip, h("strong", {}, formatDay(dates[best])), rows);
    tip.hidden = false;
    const left = x(best) + 12;
    tip.style.left = `${left + 160 > width ? x(best) - 12 - tip.offsetWidth : left}px`;
    tip.style.top = `${m.top}px`;
  });
  overlay.addEventListener("pointerleave", () => {
    guide.setAttribute("visibility", "hidden");
    tip.hidden = true;
  });
  svg.append(overlay);
  return [svg, tip];
}

/**
 * The legend shared by the charts: a swatch and the variant's name.
 * @param {{ name: string, color: string }[]} items
 */
export function legend(items) {
  return h(
    "ul",
    { class: "legend", "aria-label": "Variants" },
    items.map((item) => h("li", {}, swatch(item.color), item.name)),
  );
}

/**
 * A small square of a colour (colours are set through the CSSOM, which the page's CSP allows).
 * @param {string} color
 */
export function swatch(color) {
  const el = h("span", { class: "swatch", "aria-hidden": "true" });
  el.style.background = color;
  return el;
}
