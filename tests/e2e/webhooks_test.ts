/**
 * Webhooks from outside, against the real service on 127.0.0.1 and a real receiver that checks
 * every signature with the `standardwebhooks` package: the endpoint routes (another
 * organization's ids are 404, refused targets and events are 400), the events of a delivery and
 * its analysis, the retry rules (500, 429 with `Retry-After`, a timeout, a redirect never
 * followed, 410 disabling the endpoint), a secret's rotation, and the experiment events fired
 * once each across re-deliveries.
 */
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import { startTestServer } from "../_server.ts";
import { waitFor } from "../_faults.ts";
import { pause, type ReceivedRequest, startReceiver } from "../webhooks/_receiver.ts";
import {
  call,
  createEndpoint,
  deliveriesOf,
  type DeliveryJson,
  experimentCsv,
  uploadCsv,
} from "./_webhooks.ts";

/** Loopback targets are allowed here: the receiver is on 127.0.0.1. */
const LOOPBACK = { ABN_WEBHOOK_ALLOW_PRIVATE: "true" };

Deno.test("webhook routes: the organization's own endpoints; refused targets and events; no secret after creation", async () => {
  const server = await startTestServer();
  try {
    const other = await server.newOrg("other");
    const refused = [
      ["http://127.0.0.1:9/hook", "invalid_webhook_url", /loopback/],
      ["http://10.1.2.3/hook", "invalid_webhook_url", /private/],
      ["http://localhost:8080/hook", "invalid_webhook_url", /loopback/],
      ["http://[::ffff:169.254.169.254]/", "invalid_webhook_url", /link-local/],
      ["ftp://192.0.2.10/hook", "invalid_webhook_url", /not http or https/],
      ["https://user:pw@192.0.2.10/", "invalid_webhook_url", /credentials/],
    ] as const;
    for (const [url, code, message] of refused) {
      const { status, json } = await call(server, "POST", "/webhooks/", { url, events: ["*"] });
      assertEquals([status, json.error.code], [400, code], url);
      assertMatch(json.error.message, message);
      assert(!json.error.message.includes("pw"), "the password is not repeated");
    }
    const unknown = await call(server, "POST", "/webhooks/", {
      url: "https://192.0.2.10/hook",
      events: ["dataset.delivered", "dataset.exploded"],
    });
    assertEquals([unknown.status, unknown.json.error.code], [400, "invalid_json"]);
    assertMatch(unknown.json.error.message, /dataset\.exploded/);
    const extra = await call(server, "POST", "/webhooks/", {
      url: "https://192.0.2.10/hook",
      events: ["*"],
      secret: "mine",
    });
    assertEquals(extra.status, 400);

    const created = await call(server, "POST", "/webhooks/", {
      url: "https://192.0.2.10/hook",
      events: ["analysis.ready", "dataset.delivered", "analysis.ready"],
      description: "pipeline",
    });
    assertEquals(created.status, 201, JSON.stringify(created.json));
    const id = created.json.webhook_id;
    assertMatch(created.json.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assertEquals(created.json.events, ["dataset.delivered", "analysis.ready"]);
    assertEquals(created.json.enabled, true);
    const listed = await call(server, "GET", "/webhooks/");
    assertEquals(listed.json.webhooks.map((w: { webhook_id: string }) => w.webhook_id), [id]);
    const shown = await call(server, "GET", `/webhooks/${id}/`);
    assertEquals([shown.status, shown.json.description], [200, "pipeline"]);
    assert(!JSON.stringify([listed.json, shown.json]).includes("whsec_"), "no secret shown again");

    // Another organization: its own list is empty, and every route of this id is 404.
    assertEquals((await call(server, "GET", "/webhooks/", undefined, other.apiKey)).json, {
      webhooks: [],
    });
    const test = await call(server, "POST", `/webhooks/${id}/test/`);
    assertEquals(test.status, 202, JSON.stringify(test.json));
    for (
      const [method, path, body] of [
        ["GET", `/webhooks/${id}/`],
        ["PATCH", `/webhooks/${id}/`, { enabled: false }],
        ["DELETE", `/webhooks/${id}/`],
        ["POST", `/webhooks/${id}/rotate-secret/`],
        ["POST", `/webhooks/${id}/test/`],
        ["GET", `/webhooks/${id}/deliveries/`],
        ["POST", `/webhooks/${id}/deliveries/${test.json.delivery_id}/retry/`],
      ] as const
    ) {
      const res = await call(server, method, path, body, other.apiKey);
      assertEquals([res.status, res.json.error?.code], [404, "not_found"], `${method} ${path}`);
    }
    const missing = await call(server, "POST", `/webhooks/${id}/deliveries/whd_nope/retry/`);
    assertEquals(missing.status, 404);

    const patched = await call(server, "PATCH", `/webhooks/${id}/`, {
      enabled: false,
      events: ["*"],
    });
    assertEquals(patched.status, 200, JSON.stringify(patched.json));
    assertEquals([patched.json.enabled, patched.json.events], [false, ["*"]]);
    assertMatch(patched.json.disabled_reason, /Disabled by key/);
    const bad = await call(server, "PATCH", `/webhooks/${id}/`, { url: "http://127.0.0.1/" });
    assertEquals([bad.status, bad.json.error.code], [400, "invalid_webhook_url"]);
    const removed = await call(server, "DELETE", `/webhooks/${id}/`);
    assertEquals(removed.status, 204);
    assertEquals((await call(server, "GET", `/webhooks/${id}/`)).status, 404);
  } finally {
    await server.close();
  }
});

Deno.test("webhooks: a delivery's events arrive signed as Standard Webhooks, and both secrets sign during a rotation", async () => {
  let secret = "";
  const receiver = startReceiver(() => secret);
  const server = await startTestServer(LOOPBACK);
  try {
    const endpoint = await createEndpoint(server, receiver.url("/hook"));
    secret = endpoint.secret;
    await uploadCsv(server, "checkout", experimentCsv({ A: 20, B: 20 }, { A: 0.1, B: 0.2 }));
    const arrived = await waitFor(
      () => {
        const types = receiver.requests.map((r) => JSON.parse(r.body).type);
        return types.includes("dataset.delivered") && types.includes("analysis.ready") &&
          types;
      },
      "dataset.delivered and analysis.ready",
    );
    assertEquals(arrived.slice(0, 2), ["dataset.delivered", "analysis.ready"]);
    for (const request of receiver.requests) {
      assert(request.verified, request.verifyError);
      assertEquals(request.headers["content-type"], "application/json");
      assertMatch(request.headers["webhook-id"], /^evt_[0-9a-f]{32}$/);
      assertMatch(request.headers["webhook-signature"], /^v1,[A-Za-z0-9+/]{43}=$/);
    }
    const delivered = JSON.parse(receiver.requests[0].body);
    assertEquals(delivered.data.organization_id, server.orgId);
    assertEquals(delivered.data.experiment_id, "checkout");
    assertEquals(typeof delivered.data.etag, "string");
    assertEquals(delivered.data.links.analysis, `${server.api}/datasets/checkout/analysis/`);
    assert(!Number.isNaN(Date.parse(delivered.timestamp)));

    // The list says what the receiver saw: the same event ids, delivered at the first attempt.
    await server.service.webhooks.settled();
    const list = await deliveriesOf(server, endpoint.id);
    const ids = new Set(receiver.requests.map((r) => r.headers["webhook-id"]));
    for (const d of list) {
      assertEquals([d.state, d.attempts, d.last_status], ["delivered", 1, 200]);
      assert(ids.has(d.event_id), d.event_id);
    }

    // Rotation: the new secret and the old one both sign, and either verifies.
    const rotated = await call(server, "POST", `/webhooks/${endpoint.id}/rotate-secret/`);
    assertEquals(rotated.status, 200, JSON.stringify(rotated.json));
    assert(Date.parse(rotated.json.previous_secret_until) > Date.now() + 23 * 3600_000);
    const before = receiver.requests.length;
    const sent = await call(server, "POST", `/webhooks/${endpoint.id}/test/`);
    assertEquals([sent.status, sent.json.type, sent.json.state], [202, "webhook.test", "pending"]);
    const test = await waitFor(() => receiver.requests[before], "the test event");
    const signatures = test.headers["webhook-signature"].split(" ");
    assertEquals(signatures.length, 2);
    assert(test.verified, "the old secret still verifies");
    secret = rotated.json.secret;
    const again = await call(server, "POST", `/webhooks/${endpoint.id}/test/`);
    assertEquals(again.status, 202);
    assert((await waitFor(() => receiver.requests[before + 1], "a second test")).verified);
    assertEquals(JSON.parse(test.body).data.experiment_id, null);

    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    assertMatch(metrics, /abn_webhook_deliveries_total\{outcome="delivered"\} [1-9]/);
    assertMatch(metrics, /abn_webhook_attempts_total\{result="delivered"\} [1-9]/);
    assertMatch(metrics, /abn_webhook_oldest_pending_seconds 0/);
  } finally {
    await server.close();
    await receiver.close();
  }
});

Deno.test("webhooks: 500s are retried on the schedule, a 429's Retry-After is honoured, a timeout and a redirect are failures, a 410 disables the endpoint", async () => {
  const seen = new Map<string, number>();
  const count = (path: string) => {
    const n = (seen.get(path) ?? 0) + 1;
    seen.set(path, n);
    return n;
  };
  const receiver = startReceiver(() => "", {
    "/flaky": () => new Response("down", { status: count("/flaky") <= 2 ? 500 : 200 }),
    "/busy": () =>
      count("/busy") === 1
        ? new Response("slow down", { status: 429, headers: { "retry-after": "2" } })
        : new Response("ok"),
    "/slow": async () => {
      if (count("/slow") === 1) await pause(2500);
      return new Response("ok");
    },
    "/moved": () => new Response(null, { status: 302, headers: { location: "/elsewhere" } }),
    "/gone": () => new Response("no such hook", { status: 410 }),
  });
  const server = await startTestServer({
    ...LOOPBACK,
    ABN_WEBHOOK_RETRY_SCHEDULE: "0,1,2",
    ABN_WEBHOOK_TIMEOUT_SECONDS: "1",
  });
  try {
    const paths = ["/flaky", "/busy", "/slow", "/moved", "/gone"];
    const endpoints = new Map<string, string>();
    for (const path of paths) {
      const { id } = await createEndpoint(server, receiver.url(path));
      endpoints.set(path, id);
      assertEquals((await call(server, "POST", `/webhooks/${id}/test/`)).status, 202);
    }
    const finished = (path: string) => async () => {
      const [d] = await deliveriesOf(server, endpoints.get(path)!);
      return d.state !== "pending" && d;
    };
    const arrivals = (path: string) => receiver.requests.filter((r) => r.path === path);
    const flaky = await waitFor(finished("/flaky"), "the flaky endpoint's delivery");
    assertEquals([flaky.state, flaky.attempts, flaky.last_status], ["delivered", 3, 200]);
    const times = arrivals("/flaky").map((r) => r.at);
    assert(times[1] - times[0] >= 900 && times[2] - times[0] >= 1900, String(times));
    assertEquals(new Set(arrivals("/flaky").map((r) => r.headers["webhook-id"])).size, 1);

    const busy: DeliveryJson = await waitFor(finished("/busy"), "the busy endpoint's delivery");
    assertEquals([busy.state, busy.attempts], ["delivered", 2]);
    const [first, second] = arrivals("/busy");
    assert(second.at - first.at >= 1900, `Retry-After: 2 waited ${second.at - first.at} ms`);

    const slow = await waitFor(finished("/slow"), "the slow endpoint's delivery");
    assertEquals([slow.state, slow.attempts], ["delivered", 2]);
    assertEquals(arrivals("/slow").length, 2, "the timed-out attempt, then the retry");

    const moved = await waitFor(finished("/moved"), "the redirected endpoint's delivery");
    assertEquals([moved.state, moved.attempts, moved.last_status], ["failed", 3, 302]);
    assertMatch(moved.last_error!, /redirect/);
    assertEquals(arrivals("/elsewhere"), [], "the redirect was not followed");

    const gone = await waitFor(finished("/gone"), "the gone endpoint's delivery");
    assertEquals([gone.state, gone.attempts, gone.last_status], ["failed", 1, 410]);
    const endpoint = await call(server, "GET", `/webhooks/${endpoints.get("/gone")}/`);
    assertEquals(endpoint.json.enabled, false);
    assertMatch(endpoint.json.disabled_reason, /410/);
    // Disabled: the next event is not sent to it.
    await uploadCsv(server, "after", experimentCsv({ A: 10, B: 10 }, { A: 0.5, B: 0.5 }));
    await waitFor(() => arrivals("/flaky").length > 3, "the next event at another endpoint");
    assertEquals((await deliveriesOf(server, endpoints.get("/gone")!)).length, 1);
    assertEquals(arrivals("/gone").length, 1);

    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    assertMatch(metrics, /abn_webhook_attempts_total\{result="retry"\} 1/);
    assertMatch(metrics, /abn_webhook_attempts_total\{result="gone"\} 1/);
  } finally {
    await server.close();
    await receiver.close();
  }
});

Deno.test("webhooks: SRM is flagged once across re-deliveries with the same imbalance; inconclusive → better fires once", async () => {
  const receiver = startReceiver(() => "");
  const server = await startTestServer(LOOPBACK);
  try {
    await createEndpoint(server, receiver.url("/hook"), [
      "experiment.srm_detected",
      "experiment.decision_changed",
    ]);
    const analysed = async (csv: string) => {
      const etag = await uploadCsv(server, "split", csv);
      await waitFor(async () => {
        const res = await call(server, "GET", "/datasets/split/analysis/");
        return res.json.status === "ready" && res.json.dataset.etag === etag;
      }, "the analysis");
    };
    // 300 against 200 users: a mismatch (p ≈ 8e-6) every time; a lift only in the third.
    await analysed(experimentCsv({ A: 300, B: 200 }, { A: 0.1, B: 0.1 }));
    await analysed(experimentCsv({ A: 600, B: 400 }, { A: 0.1, B: 0.11 }));
    await analysed(experimentCsv({ A: 600, B: 400 }, { A: 0.1, B: 0.4 }));
    await analysed(experimentCsv({ A: 600, B: 400 }, { A: 0.1, B: 0.4 }) + "\n");
    await server.service.webhooks.settled();
    await waitFor(() => receiver.requests.length >= 2, "two events");
    await pause(300);
    const events = receiver.requests.map((r: ReceivedRequest) => JSON.parse(r.body));
    assertEquals(events.map((e) => e.type), [
      "experiment.srm_detected",
      "experiment.decision_changed",
    ]);
    assertEquals(events[1].data.decision, {
      metric: "converted",
      variant: "B",
      from: "inconclusive",
      to: "better",
    });
    assert(events[0].data.srm.p_value < 0.001, JSON.stringify(events[0].data));
  } finally {
    await server.close();
    await receiver.close();
  }
});
