/**
 * What a settings form saves: the saved settings with the reader's changes, or the first thing
 * wrong with the form. Fields the form does not show are kept as they were saved; a field the
 * reader left at its default is not pinned, and one saved before stays saved.
 */
import { round } from "./settings_fields.js";

/** @typedef {import("./settings_fields.js").SettingsFields} SettingsFields */
/** @typedef {import("./settings_fields.js").MetricFields} MetricFields */

/**
 * @param {any} a the analysis the form was filled from
 * @param {Record<string, any>} saved the saved settings
 * @param {SettingsFields} fields
 * @returns {Record<string, unknown> | string} the body to save, or what is wrong
 */
export function settingsBody(a, saved, fields) {
  /** @type {Record<string, unknown>} */
  const next = { ...saved };
  if (fields.keyMetric.value !== a.key_metric || "key_metric" in saved) {
    next.key_metric = fields.keyMetric.value;
  }
  if (fields.control.value !== a.control || "control" in saved) {
    next.control = fields.control.value;
  }
  const problem = readSplit(next, saved, fields) ?? readInference(next, saved, fields) ??
    readMetrics(next, saved, fields.perMetric) ?? readTarget(next, saved, fields);
  return problem ?? next;
}

/**
 * The expected split, as shares of 1; an equal split is not pinned.
 * @param {Record<string, unknown>} next
 * @param {Record<string, any>} saved
 * @param {SettingsFields} fields
 * @returns {string | null} what is wrong
 */
function readSplit(next, saved, fields) {
  const shares = fields.shares.map((input) => input.valueAsNumber);
  if (shares.some((x) => !Number.isFinite(x) || x <= 0)) {
    return "Enter a share above 0 for every variant.";
  }
  const sum = shares.reduce((t, x) => t + x, 0);
  if (Math.abs(sum - 100) > 0.01) {
    return `The expected shares add up to ${round(sum, 4)} %, not 100 %.`;
  }
  // Equal as shown: the form writes shares with 4 decimals (33.3333 for three variants).
  const equal = shares.every((x) => Math.abs(x - 100 / shares.length) < 5e-4);
  if (!equal || "expected_split" in saved) {
    next.expected_split = Object.fromEntries(fields.variants.map((v, i) => [v, shares[i] / sum]));
  }
  return null;
}

/**
 * The view the page leads with and the sequential tuning (an empty field is the default).
 * @param {Record<string, unknown>} next
 * @param {Record<string, any>} saved
 * @param {SettingsFields} fields
 * @returns {string | null} what is wrong
 */
function readInference(next, saved, fields) {
  if (fields.inference.value !== "sequential" || "inference" in saved) {
    next.inference = fields.inference.value;
  }
  const tuning = fields.tuning;
  // Text the field cannot read as a number (`12e`) leaves its value empty: refused, not cleared.
  if (tuning.value.trim() === "" && !tuning.validity.badInput) {
    delete next.sequential_tuning;
    return null;
  }
  const value = tuning.valueAsNumber;
  if (!Number.isFinite(value) || value < 1) {
    return "The sequential tuning must be a number of users, 1 or more.";
  }
  next.sequential_tuning = value;
  return null;
}

/**
 * Lower is better, covariates and caps of the metrics shown; those saved for metrics the
 * analysis no longer has are kept.
 * @param {Record<string, unknown>} next
 * @param {Record<string, any>} saved
 * @param {MetricFields[]} perMetric
 * @returns {string | null} what is wrong
 */
function readMetrics(next, saved, perMetric) {
  /** @type {Record<string, string>} */
  const savedCovariates = saved.covariates ?? {};
  /** @type {Record<string, number>} */
  const savedCaps = saved.winsorize ?? {};
  /** @type {string[]} */
  const savedLower = saved.lower_is_better ?? [];
  const listed = new Set(perMetric.map((p) => p.name));
  const lower = perMetric.filter((p) => p.lower.checked).map((p) => p.name);
  const keptLower = savedLower.filter((name) => !listed.has(name));
  if (lower.length + keptLower.length > 0) next.lower_is_better = [...keptLower, ...lower];
  else delete next.lower_is_better;
  /** @type {Record<string, string>} */
  const covariates = {};
  /** @type {Record<string, number>} */
  const caps = {};
  for (const [name, column] of Object.entries(savedCovariates)) {
    if (!listed.has(name)) covariates[name] = column;
  }
  for (const [name, cap] of Object.entries(savedCaps)) if (!listed.has(name)) caps[name] = cap;
  for (const p of perMetric) {
    const column = p.covariate.value.trim();
    if (column !== "") covariates[p.name] = column;
    if (p.cap && (p.cap.value.trim() !== "" || p.cap.validity.badInput)) {
      const percent = p.cap.valueAsNumber;
      if (!Number.isFinite(percent) || percent <= 50 || percent >= 100) {
        return `The cap of ${p.name} must be a percentile above 50 and below 100 (e.g. 99).`;
      }
      caps[p.name] = round(percent / 100, 10);
    }
  }
  if (Object.keys(covariates).length > 0) next.covariates = covariates;
  else delete next.covariates;
  if (Object.keys(caps).length > 0) next.winsorize = caps;
  else delete next.winsorize;
  return null;
}

/**
 * The target sample: from the MDE (5 % is the default), or a fixed number of users.
 * @param {Record<string, unknown>} next
 * @param {Record<string, any>} saved
 * @param {SettingsFields} fields
 * @returns {string | null} what is wrong
 */
function readTarget(next, saved, fields) {
  if (fields.modeMde.checked) {
    const value = fields.mde.valueAsNumber;
    if (!Number.isFinite(value) || value <= 0 || value > 1000) {
      return "The minimum detectable effect must be a percentage above 0 and at most 1000.";
    }
    if ("mde" in saved || Math.abs(value - 5) > 1e-9) next.mde = value / 100;
    delete next.target_users_per_variant;
    return null;
  }
  const value = fields.target.valueAsNumber;
  if (!Number.isSafeInteger(value) || value < 1) {
    return "The target must be a whole number of users, at least 1.";
  }
  next.target_users_per_variant = value;
  return null;
}
