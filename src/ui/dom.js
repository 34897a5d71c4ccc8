/**
 * DOM helpers. Data only ever reaches the page as text nodes or attribute values, never as HTML.
 */

const SVG_NS = "http://www.w3.org/2000/svg";

/**
 * @typedef {Node | string | number | null | undefined | false | unknown[]} Child
 */

/**
 * Appends children: nodes as they are, strings and numbers as text, nested arrays flattened,
 * `null`, `undefined` and `false` skipped.
 * @param {Element} parent
 * @param {Child[]} children
 */
function append(parent, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, /** @type {Child[]} */ (child));
    else if (child instanceof Node) parent.append(child);
    else parent.append(document.createTextNode(String(child)));
  }
}

/**
 * @param {Element} el
 * @param {Record<string, unknown>} props
 */
function applyProps(el, props) {
  for (const [name, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), /** @type {EventListener} */ (value));
    } else if (name === "class") {
      el.setAttribute("class", String(value));
    } else if (name === "dataset") {
      Object.assign(/** @type {HTMLElement} */ (el).dataset, value);
    } else if (value === true) {
      el.setAttribute(name, "");
    } else {
      el.setAttribute(name, String(value));
    }
  }
}

/**
 * Creates an HTML element.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, unknown>} [props] attributes; `on…` functions become listeners
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  applyProps(el, props);
  append(el, children);
  return el;
}

/**
 * Creates an SVG element.
 * @param {string} tag
 * @param {Record<string, unknown>} [attrs]
 * @param {...Child} children
 * @returns {SVGElement}
 */
export function s(tag, attrs = {}, ...children) {
  const el = /** @type {SVGElement} */ (document.createElementNS(SVG_NS, tag));
  applyProps(el, attrs);
  append(el, children);
  return el;
}

/**
 * Replaces an element's children.
 * @param {Element} el
 * @param {...Child} children
 */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
}

/**
 * A box that draws its chart at the box's width (at least 260 px), again whenever that width
 * changes.
 * @param {string} className
 * @param {(width: number) => Child} render
 * @returns {HTMLElement}
 */
export function responsiveChart(className, render) {
  const box = h("div", { class: className });
  let lastWidth = 0;
  const draw = () => {
    const width = Math.max(260, Math.floor(box.clientWidth || 600));
    if (width === lastWidth) return;
    lastWidth = width;
    replace(box, render(width));
  };
  new ResizeObserver(draw).observe(box);
  return box;
}

/**
 * An SVG chart of this size, named for assistive technology by `label` (also its tooltip).
 * @param {number} width
 * @param {number} height
 * @param {string} label
 * @returns {SVGElement}
 */
export function chartSvg(width, height, label) {
  const svg = s("svg", {
    width,
    height,
    viewBox: `0 0 ${width} ${height}`,
    role: "img",
    "aria-label": label,
  });
  svg.append(s("title", {}, label));
  return svg;
}
