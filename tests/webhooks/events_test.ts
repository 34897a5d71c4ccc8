import { aggregateCsv } from "../../src/analysis/aggregate/aggregate.ts";
import type { Decision } from "../../src/analysis/comparisons.ts";
import { type AnalysisReport, buildReport } from "../../src/analysis/report.ts";
import type { Settings } from "../../src/analysis/settings.ts";
import { ServiceError } from "../../src/errors.ts";
import {
  type AnalysisFacts,
  EVENT_TYPES,
  eventBody,
  type ExperimentEvent,
  experimentEvents,
  experimentLinks,
  MAX_EVENT_BYTES,
  newEventId,
  parseEventList,
  selects,
} from "../../src/webhooks/events.ts";
import { assert, assertEquals, assertMatch, assertThrows } from "../_assert.ts";

// The analysis JSON is what the events read: a report must pass as AnalysisFacts.
const _reportIsFacts = (report: AnalysisReport): AnalysisFacts => report;

Deno.test("parseEventList keeps known names once, in a fixed order", () => {
  assertEquals(parseEventList(["analysis.ready", "dataset.delivered", "analysis.ready"]), [
    "dataset.delivered",
    "analysis.ready",
  ]);
  assertEquals(parseEventList(["*"]), ["*"]);
  assertEquals(parseEventList(["analysis.failed", "*"]), ["*"]);
  assertEquals(parseEventList([...EVENT_TYPES].reverse()), [...EVENT_TYPES]);
});

Deno.test("parseEventList refuses unknown names and other shapes with 400 invalid_json", () => {
  for (
    const [value, includes] of [
      [["analysis.ready", "analysis.done"], 'Unknown event "analysis.done"'],
      [["Analysis.Ready"], 'Unknown event "Analysis.Ready"'],
      [["experiment.*"], "Unknown event"],
      [[], "expected a list of event names"],
      ["*", "expected a list of event names"],
      [null, "expected a list of event names"],
      [[42], "42 is not a name"],
      [["x".repeat(500)], "…"],
    ] as [unknown, string][]
  ) {
    const error = assertThrows(() => parseEventList(value), ServiceError, includes);
    assertEquals(error.code, "invalid_json");
    assert(error.message.length < 400, error.message);
  }
});

Deno.test("selects answers the subscribed types and everything for *", () => {
  assertEquals(selects(["analysis.ready"], "analysis.ready"), true);
  assertEquals(selects(["analysis.ready"], "analysis.failed"), false);
  assertEquals(selects(["*"], "experiment.srm_detected"), true);
});

Deno.test("newEventId makes distinct ids a signature accepts", () => {
  const a = newEventId();
  assertMatch(a, /^evt_[0-9a-f]{32}$/);
  assert(a !== newEventId());
});

interface FactsInput {
  srm?: boolean;
  percent?: number | null;
  key?: string | null;
  decisions?: Record<string, Decision | null>;
}

function facts(input: FactsInput = {}): AnalysisFacts {
  const key = input.key === undefined ? "converted" : input.key;
  const decisions = input.decisions ?? { B: "inconclusive" };
  return {
    key_metric: key,
    srm: input.srm
      ? { mismatch: true, p_value: 0.00001, chi_square: 19.5 }
      : { mismatch: false, p_value: 0.61, chi_square: 0.26 },
    sample: { percent_of_target: input.percent === undefined ? 40 : input.percent },
    metrics: [
      {
        name: "converted",
        comparisons: Object.entries(decisions).map(([name, decision]) => ({
          name,
          ...(key === "converted" ? { decision } : {}),
        })),
      },
      {
        name: "revenue",
        comparisons: Object.keys(decisions).map((name) => ({
          name,
          ...(key === "revenue" ? { decision: "better" as const } : {}),
        })),
      },
    ],
  };
}

Deno.test("experimentEvents raises nothing when nothing changed", () => {
  assertEquals(experimentEvents(facts(), facts()), []);
  const flagged = facts({ srm: true, percent: 120, decisions: { B: "better" } });
  assertEquals(experimentEvents(flagged, flagged), []);
  assertEquals(experimentEvents(null, facts()), []);
});

Deno.test("experimentEvents flags SRM only when newly detected", () => {
  const event: ExperimentEvent = {
    type: "experiment.srm_detected",
    srm: { p_value: 0.00001, chi_square: 19.5 },
  };
  assertEquals(experimentEvents(facts(), facts({ srm: true })), [event]);
  assertEquals(experimentEvents(null, facts({ srm: true })), [event]);
  assertEquals(experimentEvents(facts({ srm: true }), facts({ srm: true })), []);
  assertEquals(experimentEvents(facts({ srm: true }), facts()), []);
});

Deno.test("experimentEvents names each variant whose key-metric decision changed", () => {
  const previous = facts({ decisions: { B: "inconclusive", C: "inconclusive", D: "worse" } });
  const current = facts({ decisions: { B: "better", C: "inconclusive", D: "inconclusive" } });
  assertEquals(experimentEvents(previous, current), [
    {
      type: "experiment.decision_changed",
      decision: { metric: "converted", variant: "B", from: "inconclusive", to: "better" },
    },
    {
      type: "experiment.decision_changed",
      decision: { metric: "converted", variant: "D", from: "worse", to: "inconclusive" },
    },
  ]);
  // too_early is a decision like the others.
  assertEquals(
    experimentEvents(facts({ decisions: { B: "too_early" } }), facts({ decisions: { B: "worse" } }))
      .map((e) => e.type === "experiment.decision_changed" && e.decision.from),
    ["too_early"],
  );
});

Deno.test("experimentEvents needs a previous decision on the same key metric", () => {
  // A first analysis, a new variant, a comparison without a decision, a changed key metric.
  assertEquals(experimentEvents(null, facts({ decisions: { B: "better" } })), []);
  assertEquals(
    experimentEvents(
      facts({ decisions: { B: "better" } }),
      facts({ decisions: { B: "better", C: "worse" } }),
    ),
    [],
  );
  assertEquals(
    experimentEvents(facts({ decisions: { B: null } }), facts({ decisions: { B: "better" } })),
    [],
  );
  assertEquals(
    experimentEvents(facts({ decisions: { B: "better" } }), facts({ decisions: { B: null } })),
    [],
  );
  assertEquals(experimentEvents(facts({ key: "converted" }), facts({ key: "revenue" })), []);
  assertEquals(experimentEvents(facts({ key: null }), facts({ key: null })), []);
});

Deno.test("experimentEvents reports the target reached once", () => {
  const reached: ExperimentEvent = { type: "experiment.target_reached", percent_of_target: 100 };
  assertEquals(experimentEvents(facts({ percent: 99.9 }), facts({ percent: 100 })), [reached]);
  assertEquals(experimentEvents(null, facts({ percent: 100 })), [reached]);
  assertEquals(experimentEvents(facts({ percent: null }), facts({ percent: 100 })), [reached]);
  assertEquals(experimentEvents(facts({ percent: 100 }), facts({ percent: 130 })), []);
  assertEquals(experimentEvents(facts({ percent: 40 }), facts({ percent: 99 })), []);
  assertEquals(experimentEvents(facts({ percent: 40 }), facts({ percent: null })), []);
});

Deno.test("experimentEvents lists SRM, then decisions, then the target", () => {
  const previous = facts({ percent: 50 });
  const current = facts({ srm: true, percent: 101, decisions: { B: "better" } });
  assertEquals(experimentEvents(previous, current).map((e) => e.type), [
    "experiment.srm_detected",
    "experiment.decision_changed",
    "experiment.target_reached",
  ]);
});

/**
 * A CSV of `users` per variant (`{A: 1000, B: 1000}`) where the first `converted[v]` users of
 * each variant converted, one row per user over two dates.
 */
function csv(users: Record<string, number>, converted: Record<string, number>): Uint8Array {
  const lines = ["user_id,variant,date,converted"];
  for (const [variant, n] of Object.entries(users)) {
    for (let i = 0; i < n; i++) {
      const date = i % 2 === 0 ? "2026-11-30" : "2026-12-01";
      lines.push(`${variant}${i},${variant},${date},${i < converted[variant] ? 1 : 0}`);
    }
  }
  return new TextEncoder().encode(lines.join("\n") + "\n");
}

async function analyse(file: Uint8Array, settings: Settings): Promise<AnalysisReport> {
  const aggregate = await aggregateCsv(ReadableStream.from([file]), {
    ...settings,
    sizeBytes: file.length,
  });
  return buildReport(aggregate, settings);
}

Deno.test("experimentEvents over the analyses of a series of deliveries", async () => {
  const settings: Settings = { target_users_per_variant: 1000 };
  const deliveries = [
    // Half the target, B converting like A: inconclusive, no SRM.
    csv({ A: 500, B: 500 }, { A: 50, B: 52 }),
    // The same content again (a re-run): nothing changed.
    csv({ A: 500, B: 500 }, { A: 50, B: 52 }),
    // The target reached, B converting three times as often: better.
    csv({ A: 1000, B: 1000 }, { A: 100, B: 300 }),
    // 1,300 users in B against 1,000 in A: SRM, B still better.
    csv({ A: 1000, B: 1300 }, { A: 100, B: 390 }),
    // More of the same imbalance: still flagged, flagged again it is not.
    csv({ A: 1100, B: 1430 }, { A: 110, B: 429 }),
  ];
  const reports: AnalysisReport[] = [];
  for (const file of deliveries) reports.push(await analyse(file, settings));
  const keyDecision = (r: AnalysisReport) => r.metrics[0].comparisons[0].decision;
  assertEquals(reports.map(keyDecision), [
    "inconclusive",
    "inconclusive",
    "better",
    "better",
    "better",
  ]);
  assertEquals(reports.map((r) => r.srm.mismatch), [false, false, false, true, true]);

  const raised = reports.map((report, i) =>
    experimentEvents(i === 0 ? null : reports[i - 1], report)
  );
  assertEquals(raised[0], []);
  assertEquals(raised[1], []);
  assertEquals(raised[2], [
    {
      type: "experiment.decision_changed",
      decision: { metric: "converted", variant: "B", from: "inconclusive", to: "better" },
    },
    { type: "experiment.target_reached", percent_of_target: 100 },
  ]);
  assertEquals(raised[3], [
    {
      type: "experiment.srm_detected",
      srm: { p_value: reports[3].srm.p_value, chi_square: reports[3].srm.chi_square },
    },
  ]);
  assert(reports[3].srm.p_value < 0.001);
  assertEquals(raised[4], []);
});

Deno.test("eventBody builds the type, the time and the data with its links", () => {
  const at = new Date("2026-12-01T02:31:07.114Z");
  const links = experimentLinks("https://abn.example.com/", "checkout_test");
  assertEquals(links, {
    dataset: "https://abn.example.com/api/v1/datasets/checkout_test/",
    analysis: "https://abn.example.com/api/v1/datasets/checkout_test/analysis/",
    history: "https://abn.example.com/api/v1/datasets/checkout_test/history/",
  });
  const body = eventBody(
    "experiment.decision_changed",
    {
      organization_id: "org_7",
      experiment_id: "checkout_test",
      etag: "a248906581347e9a60123f90c8376011",
      decision: { metric: "converted", variant: "B", from: "inconclusive", to: "better" },
    },
    links,
    at,
  );
  assertEquals(JSON.parse(body), {
    type: "experiment.decision_changed",
    timestamp: "2026-12-01T02:31:07.114Z",
    data: {
      organization_id: "org_7",
      experiment_id: "checkout_test",
      etag: "a248906581347e9a60123f90c8376011",
      decision: { metric: "converted", variant: "B", from: "inconclusive", to: "better" },
      links,
    },
  });
  // Minified: what is signed is what is sent.
  assert(!body.includes("\n") && !body.includes(": "));
  const test = JSON.parse(
    eventBody("webhook.test", { organization_id: "org_7", experiment_id: null }),
  );
  assertEquals(test.data, { organization_id: "org_7", experiment_id: null, links: {} });
  assertMatch(test.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
});

Deno.test("eventBody keeps a body under 20 kB by cutting long strings, or refuses it", () => {
  const data = {
    organization_id: "org_7",
    experiment_id: "e",
    status: "failed",
    error: "Invalid CSV: " + "é".repeat(30_000),
  };
  const body = eventBody("analysis.failed", data);
  assert(new TextEncoder().encode(body).length <= MAX_EVENT_BYTES);
  const error = JSON.parse(body).data.error as string;
  assertEquals(error.length, 1000);
  assert(error.startsWith("Invalid CSV: é") && error.endsWith("…"));
  // A short body is left as it is.
  assertEquals(
    JSON.parse(eventBody("analysis.failed", { ...data, error: "short" })).data.error,
    "short",
  );
  const many = { organization_id: "o", experiment_id: "e", variants: Array(3000).fill("variant") };
  assertThrows(() => eventBody("dataset.delivered", many), RangeError, "more than 20000");
});
