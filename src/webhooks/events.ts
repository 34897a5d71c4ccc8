/**
 * The webhook events: their names, the list an endpoint subscribes to, the experiment events a
 * new ready analysis raises against the previous one, and the JSON body every event is sent as:
 *
 * ```json
 * { "type": "experiment.srm_detected", "timestamp": "2026-12-01T02:31:07.114Z",
 *   "data": { "organization_id": "…", "experiment_id": "checkout_test", "etag": "…",
 *             "srm": { "p_value": 0.00002, "chi_square": 18.1 },
 *             "links": { "analysis": "https://abn.example.com/api/v1/datasets/checkout_test/analysis/",
 *                        "dataset": "…", "history": "…" } } }
 * ```
 *
 * @module
 */
import type { Decision } from "../analysis/comparisons.ts";
import { ServiceError } from "../errors.ts";

/** Every event type, in the order lists are kept. */
export const EVENT_TYPES = [
  "dataset.delivered",
  "analysis.ready",
  "analysis.failed",
  "experiment.srm_detected",
  "experiment.decision_changed",
  "experiment.target_reached",
  "dataset.deleted",
  "webhook.test",
] as const;

export type EventType = typeof EVENT_TYPES[number];
/** What an endpoint subscribes to: event types, or `"*"` for all of them. */
export type EventSelection = EventType | "*";

/** The largest event body, in bytes (Standard Webhooks: keep payloads under 20 kB). */
export const MAX_EVENT_BYTES = 20_000;
/** Strings in an event's data longer than this are cut when the body would pass the limit. */
const MAX_FACT_CHARS = 1000;

function isEventType(name: string): name is EventType {
  return (EVENT_TYPES as readonly string[]).includes(name);
}

/**
 * The `events` of an endpoint, checked: a non-empty array of event names or `"*"`, answered
 * without repeats in the order of {@linkcode EVENT_TYPES} (just `["*"]` when it is listed). An
 * unknown name or another shape is a `ServiceError("invalid_json")` (400) naming it.
 */
export function parseEventList(value: unknown): EventSelection[] {
  const expected = `expected a list of event names (${EVENT_TYPES.join(", ")}) or ["*"]`;
  if (!Array.isArray(value) || value.length === 0) {
    throw new ServiceError("invalid_json", `Invalid "events": ${expected}`);
  }
  const chosen = new Set<EventSelection>();
  for (const name of value) {
    if (typeof name !== "string") {
      throw new ServiceError(
        "invalid_json",
        `Invalid "events": ${JSON.stringify(name)} is not a name; ${expected}`,
      );
    }
    if (name !== "*" && !isEventType(name)) {
      const shown = name.length > 64 ? `${name.slice(0, 64)}…` : name;
      throw new ServiceError("invalid_json", `Unknown event ${JSON.stringify(shown)}: ${expected}`);
    }
    chosen.add(name);
  }
  if (chosen.has("*")) return ["*"];
  return EVENT_TYPES.filter((type) => chosen.has(type));
}

/** Whether an endpoint subscribed to `events` is sent an event of `type`. */
export function selects(events: readonly EventSelection[], type: EventType): boolean {
  return events.includes("*") || events.includes(type);
}

/** A new event id (the `webhook-id` of its every attempt): `evt_` and 32 hex digits. */
export function newEventId(): string {
  return `evt_${crypto.randomUUID().replaceAll("-", "")}`;
}

/** What the experiment events read of a ready analysis (`src/analysis/report.ts`). */
export interface AnalysisFacts {
  key_metric: string | null;
  srm: { mismatch: boolean; p_value: number; chi_square: number };
  sample: { percent_of_target: number | null };
  metrics: readonly {
    name: string;
    comparisons: readonly { name: string; decision?: Decision | null }[];
  }[];
}

/**
 * The part of a ready analysis (`AnalysisReport`) the experiment events compare, kept with each
 * experiment's result (small: the key metric's decisions only): null for anything else.
 */
export function factsOf(report: AnalysisFacts | null | undefined): AnalysisFacts | null {
  if (report === null || typeof report !== "object" || typeof report.srm !== "object") return null;
  const keyMetric = typeof report.key_metric === "string" ? report.key_metric : null;
  const key = (report.metrics ?? []).find((m) => m.name === keyMetric);
  return {
    key_metric: keyMetric,
    srm: {
      mismatch: report.srm.mismatch === true,
      p_value: report.srm.p_value,
      chi_square: report.srm.chi_square,
    },
    sample: { percent_of_target: report.sample?.percent_of_target ?? null },
    metrics: key
      ? [{
        name: key.name,
        comparisons: (key.comparisons ?? []).map((c) => ({
          name: c.name,
          decision: c.decision ?? null,
        })),
      }]
      : [],
  };
}

/** The facts of an experiment event, for its `data`. */
export type ExperimentEvent =
  | { type: "experiment.srm_detected"; srm: { p_value: number; chi_square: number } }
  | {
    type: "experiment.decision_changed";
    decision: { metric: string; variant: string; from: Decision; to: Decision };
  }
  | { type: "experiment.target_reached"; percent_of_target: number };

/** The key metric's decision per variant, where there is one. */
function decisions(analysis: AnalysisFacts): Map<string, Decision> {
  const out = new Map<string, Decision>();
  const metric = analysis.metrics.find((m) => m.name === analysis.key_metric);
  for (const comparison of metric?.comparisons ?? []) {
    if (comparison.decision) out.set(comparison.name, comparison.decision);
  }
  return out;
}

/**
 * The experiment events `current`, a new ready analysis, raises against `previous`, the
 * experiment's ready analysis before it (null when there was none):
 * - `experiment.srm_detected` when `current` flags a mismatch and `previous` did not (or there was
 *   none);
 * - `experiment.decision_changed` for each variant whose decision on the key metric differs from
 *   its decision in `previous` on the same key metric (`from`, `to`); nothing without a previous
 *   decision to differ from (a first analysis, a variant or key metric new since);
 * - `experiment.target_reached` when `percent_of_target` is 100 or more and was below (or unknown,
 *   or there was no previous analysis).
 * An analysis equal to the previous one raises none.
 */
export function experimentEvents(
  previous: AnalysisFacts | null,
  current: AnalysisFacts,
): ExperimentEvent[] {
  const events: ExperimentEvent[] = [];
  if (current.srm.mismatch && !previous?.srm.mismatch) {
    const { p_value, chi_square } = current.srm;
    events.push({ type: "experiment.srm_detected", srm: { p_value, chi_square } });
  }
  if (
    previous !== null && current.key_metric !== null && previous.key_metric === current.key_metric
  ) {
    const before = decisions(previous);
    for (const [variant, to] of decisions(current)) {
      const from = before.get(variant);
      if (from !== undefined && from !== to) {
        events.push({
          type: "experiment.decision_changed",
          decision: { metric: current.key_metric, variant, from, to },
        });
      }
    }
  }
  const reached = current.sample.percent_of_target;
  const was = previous?.sample.percent_of_target ?? null;
  if (reached !== null && reached >= 100 && (was === null || was < 100)) {
    events.push({ type: "experiment.target_reached", percent_of_target: reached });
  }
  return events;
}

/** The `data` of an event: whose it is, then its facts. */
export interface EventData {
  organization_id: string;
  /** Null for events of no experiment (`webhook.test`). */
  experiment_id: string | null;
  [fact: string]: unknown;
}

/** The API resources of an experiment, for an event's `links`. */
export function experimentLinks(publicUrl: string, experimentId: string): Record<string, string> {
  const base = `${publicUrl.replace(/\/+$/, "")}/api/v1/datasets/${
    encodeURIComponent(experimentId)
  }`;
  return { dataset: `${base}/`, analysis: `${base}/analysis/`, history: `${base}/history/` };
}

function cutStrings(value: unknown): unknown {
  if (typeof value === "string") {
    return value.length > MAX_FACT_CHARS ? `${value.slice(0, MAX_FACT_CHARS - 1)}…` : value;
  }
  if (Array.isArray(value)) return value.map(cutStrings);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, cutStrings(v)]));
  }
  return value;
}

const encoder = new TextEncoder();

/**
 * The JSON body of an event: `{"type", "timestamp", "data": {…data, "links"}}`, `timestamp` the
 * event's time in ISO 8601 with milliseconds. Over 20,000 bytes, strings of the data longer than
 * 1,000 characters (an analysis error, say) are cut; a body still over the limit is a
 * `RangeError`.
 */
export function eventBody(
  type: EventType,
  data: EventData,
  links: Record<string, string> = {},
  at: Date = new Date(),
): string {
  const event = { type, timestamp: at.toISOString(), data: { ...data, links } };
  let body = JSON.stringify(event);
  // A UTF-16 code unit is at most 3 bytes of UTF-8: most bodies need no encoding to be measured.
  if (body.length * 3 > MAX_EVENT_BYTES && encoder.encode(body).length > MAX_EVENT_BYTES) {
    body = JSON.stringify({ ...event, data: cutStrings(event.data) });
    const size = encoder.encode(body).length;
    if (size > MAX_EVENT_BYTES) {
      throw new RangeError(
        `Cannot send the ${type} event: its body is ${size} bytes, more than ${MAX_EVENT_BYTES}`,
      );
    }
  }
  return body;
}
