/**
 * What the sender makes of an attempt's outcome (`settledAttempt`): the delivery's next state
 * and time under the schedule, `Retry-After`, a 410 and a new round after a retry asked for; and
 * how it holds deliveries back while uploads stream.
 */
import { assert, assertEquals } from "../_assert.ts";
import { settledAttempt, WebhookSender } from "../../src/jobs/webhook_sender.ts";
import { Metrics } from "../../src/metrics.ts";
import { withSqlite } from "../db/_control_planes.ts";
import { startReceiver } from "../webhooks/_receiver.ts";
import type { ClaimedDelivery } from "../../src/db/control_plane.ts";

const FROM = "2026-12-01T02:00:00.000Z";
const SCHEDULE = [0, 5, 300];

function claimed(attempts: number, roundStart = 0): ClaimedDelivery {
  return {
    id: "whd_1",
    eventId: "evt_1",
    endpointId: "wh_1",
    orgId: "org_1",
    body: "{}",
    attempts,
    roundStart,
    scheduledFrom: FROM,
    url: "https://hooks.example.com/",
    secrets: [],
  };
}

const at = (seconds: number) => new Date(Date.parse(FROM) + seconds * 1000).toISOString();

Deno.test("settledAttempt delivers on a 2xx and schedules a failure's next attempt", () => {
  assertEquals(
    settledAttempt(claimed(0), { kind: "delivered", status: 204 }, SCHEDULE),
    {
      id: "whd_1",
      endpointId: "wh_1",
      state: "delivered",
      status: 204,
      error: null,
      nextAttemptAt: null,
    },
  );
  const failed = { kind: "failed", status: 500, error: "The endpoint answered 500" } as const;
  assertEquals(settledAttempt(claimed(0), failed, SCHEDULE).nextAttemptAt, at(5));
  assertEquals(settledAttempt(claimed(1), failed, SCHEDULE).nextAttemptAt, at(300));
  const last = settledAttempt(claimed(2), failed, SCHEDULE);
  assertEquals([last.state, last.nextAttemptAt], ["failed", null]);
  assertEquals(last.error, "The endpoint answered 500 (attempt 3 of 3: no attempt left)");
});

Deno.test("settledAttempt waits for a Retry-After past the schedule's time, never less", () => {
  const now = Date.parse(FROM) + 1000;
  const later = settledAttempt(
    claimed(0),
    { kind: "retry", status: 429, retryAfterSeconds: 60, error: "429" },
    SCHEDULE,
    now,
  );
  assertEquals([later.state, later.nextAttemptAt], ["pending", at(61)]);
  const sooner = settledAttempt(
    claimed(1),
    { kind: "retry", status: 503, retryAfterSeconds: 1, error: "503" },
    SCHEDULE,
    now,
  );
  assertEquals(sooner.nextAttemptAt, at(300));
});

Deno.test("settledAttempt fails a 410 at once and disables its endpoint", () => {
  const gone = settledAttempt(claimed(0), { kind: "gone", status: 410, error: "410" }, SCHEDULE);
  assertEquals([gone.state, gone.status, gone.nextAttemptAt], ["failed", 410, null]);
  assertEquals(typeof gone.disable, "string");
});

Deno.test("settledAttempt counts a retried delivery's attempts from its new round", () => {
  const failed = { kind: "failed", error: "Network error: connection refused" } as const;
  // Three attempts ran out; a retry asked for starts a round of its own at attempt 4.
  const first = settledAttempt(claimed(3, 3), failed, SCHEDULE);
  assertEquals([first.state, first.nextAttemptAt, first.status], ["pending", at(5), null]);
});

Deno.test("WebhookSender holds deliveries back while uploads stream, and sends at full pace after", async () => {
  const receiver = startReceiver(() => "");
  try {
    await withSqlite(async (db) => {
      let busy = true;
      const sender = new WebhookSender({
        db,
        metrics: new Metrics(),
        log: { info() {}, warn() {}, error() {}, flush() {} },
        audit: { record: () => Promise.resolve() },
        schedule: [0],
        timeoutSeconds: 5,
        allowPrivate: true,
        busy: () => busy,
        busyWaitMs: 400,
      });
      sender.start();
      try {
        await db.webhooks.create("org_a", {
          url: receiver.url("/hook"),
          description: "",
          events: ["*"],
          secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        });
        const written = performance.now();
        await db.datasets.put(Array.from({ length: 3 }, (_, i) => ({
          org_id: "org_a",
          experiment_id: `e${i}`,
          key: `org/org_a/experiments/e${i}/latest.csv`,
          size_bytes: 10,
          etag: "x",
          delivered_at: new Date().toISOString(),
          observed_at: new Date().toISOString(),
        })));
        await new Promise((r) => setTimeout(r, 250));
        assertEquals(receiver.requests.length, 0, "nothing sent while uploads stream");
        while (receiver.requests.length === 0) await new Promise((r) => setTimeout(r, 20));
        const first = receiver.requests[0].at - written;
        assert(first >= 350, `the first went after ${first} ms`);
        // One at a time while busy; all at once when the uploads stopped.
        busy = false;
        while (receiver.requests.length < 3) await new Promise((r) => setTimeout(r, 20));
        await sender.settled();
      } finally {
        await sender.stop();
      }
    });
  } finally {
    await receiver.close();
  }
});
