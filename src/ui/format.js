/**
 * Number and date formats used across the page. Numbers are written the same way everywhere
 * (grouping commas, a point for decimals) so a figure reads the same in every table.
 */

const DASH = "—";
const MINUS = "−";

const integerFormat = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const smallFormat = new Intl.NumberFormat("en-US", { maximumSignificantDigits: 4 });
const largeFormat = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });
const dateTimeFormat = new Intl.DateTimeFormat(undefined, {
  year: "numeric",
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
});
const thisYearFormat = new Intl.DateTimeFormat(undefined, {
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
});
const shortDateFormat = new Intl.DateTimeFormat("en-US", {
  month: "short",
  day: "numeric",
  timeZone: "UTC",
});

/** @param {unknown} x */
function isNumber(x) {
  return typeof x === "number" && Number.isFinite(x);
}

/** @param {string} text */
function signed(text) {
  return text.startsWith("-") ? MINUS + text.slice(1) : text;
}

/**
 * Whole numbers with grouping: `12,345`.
 * @param {number | null | undefined} x
 */
export function formatInteger(x) {
  return isNumber(x) ? signed(integerFormat.format(/** @type {number} */ (x))) : DASH;
}

/**
 * A statistic: four significant digits below 100, two decimals above (`0.3469`, `1,550.09`).
 * @param {number | null | undefined} x
 */
export function formatStat(x) {
  if (!isNumber(x)) return DASH;
  const n = /** @type {number} */ (x);
  return signed(Math.abs(n) < 100 ? smallFormat.format(n) : largeFormat.format(n));
}

/**
 * A share of one as a percentage: `0.639` → `63.9 %`.
 * @param {number | null | undefined} x
 * @param {number} [digits]
 */
export function formatShare(x, digits = 1) {
  return isNumber(x) ? signed((/** @type {number} */ (x) * 100).toFixed(digits)) + " %" : DASH;
}

/**
 * A percentage already scaled to 100: `4.147` → `4.1 %`.
 * @param {number | null | undefined} x
 */
export function formatPercent(x) {
  return isNumber(x) ? signed(/** @type {number} */ (x).toFixed(1)) + " %" : DASH;
}

/**
 * A relative change with its sign: `0.0313` → `+3.13 %`.
 * @param {number | null | undefined} x
 */
export function formatLift(x) {
  if (!isNumber(x)) return DASH;
  const text = (/** @type {number} */ (x) * 100).toFixed(2);
  return (text.startsWith("-") ? MINUS + text.slice(1) : "+" + text) + " %";
}

/**
 * An interval of relative changes: `+1.50 % to +12.10 %`.
 * @param {[number, number] | null | undefined} ci
 */
export function formatLiftInterval(ci) {
  return Array.isArray(ci) ? `${formatLift(ci[0])} to ${formatLift(ci[1])}` : DASH;
}

/**
 * A relative change for a sentence, with fewer digits: `0.0684` → `+6.8 %`.
 * @param {number | null | undefined} x
 */
export function formatLiftShort(x) {
  if (!isNumber(x)) return DASH;
  const n = /** @type {number} */ (x) * 100;
  const text = n.toFixed(Math.abs(n) < 1 ? 2 : 1);
  return (text.startsWith("-") ? MINUS + text.slice(1) : "+" + text) + " %";
}

/**
 * A p-value: three significant digits, in exponent form below 0.0001 (`7.74e-6`); a p-value
 * below the smallest double arrives as 0.
 * @param {number | null | undefined} p
 */
export function formatPValue(p) {
  if (!isNumber(p)) return DASH;
  const n = /** @type {number} */ (p);
  if (n === 0) return "< 1e-300";
  if (n < 0.0001) return n.toExponential(2);
  return String(Number(n.toPrecision(3)));
}

/**
 * Bytes as MB (1 MB = 1,048,576 bytes, as the API's `size_mb`), KB below 0.1 MB.
 * @param {number | null | undefined} bytes
 */
export function formatSize(bytes) {
  if (!isNumber(bytes)) return DASH;
  const n = /** @type {number} */ (bytes);
  if (n < 1024) return `${n} B`;
  if (n < 0.1 * 1048576) return `${(n / 1024).toFixed(1)} KB`;
  const mb = n / 1048576;
  return `${largeFormat.format(Number(mb.toFixed(mb < 10 ? 2 : 1)))} MB`;
}

/**
 * An ISO-8601 instant in the reader's time zone; the year only when it is not this one.
 * @param {string | null | undefined} iso
 */
export function formatDateTime(iso) {
  if (!iso) return DASH;
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.getFullYear() === new Date().getFullYear()
    ? thisYearFormat.format(d)
    : dateTimeFormat.format(d);
}

/**
 * How long ago an ISO-8601 instant was: `just now`, `5 min ago`, `3 h ago`, else the date.
 * @param {string | null | undefined} iso
 * @param {number} [now]
 */
export function formatAgo(iso, now = Date.now()) {
  if (!iso) return DASH;
  const seconds = (now - new Date(iso).getTime()) / 1000;
  if (!Number.isFinite(seconds)) return iso;
  if (seconds < 45) return "just now";
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.round(seconds / 3600)} h ago`;
  return formatDateTime(iso);
}

/**
 * A calendar date `YYYY-MM-DD` as `Jan 5`.
 * @param {string} date
 */
export function formatDay(date) {
  const d = new Date(`${date}T00:00:00Z`);
  return Number.isNaN(d.getTime()) ? date : shortDateFormat.format(d);
}
