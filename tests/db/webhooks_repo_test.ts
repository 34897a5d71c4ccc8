/**
 * Webhook endpoints and their outbox on both engines: events written with the change they
 * report (a catalog row, an analysis result, a removal), one delivery per subscribed enabled
 * endpoint; claims that never overlap across handles, leases that run out, settles only by the
 * lease's owner, and endpoints disabled by a 410 or 50 failed deliveries in a row.
 */
import { assert, assertEquals } from "../_assert.ts";
import type { ControlPlane, DatasetEntry, SettledAttempt } from "../../src/db/control_plane.ts";
import { MAX_CONSECUTIVE_FAILURES } from "../../src/db/repos/webhooks.ts";
import { controlPlaneTest } from "./_control_planes.ts";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

function entry(orgId: string, experimentId: string, etag: string, at = 1): DatasetEntry {
  return {
    org_id: orgId,
    experiment_id: experimentId,
    key: `org/${orgId}/experiments/${experimentId}/latest.csv`,
    size_bytes: 10,
    etag,
    delivered_at: new Date(Date.UTC(2026, 11, 1, 0, 0, at)).toISOString(),
    observed_at: new Date(Date.UTC(2026, 11, 1, 0, 0, at)).toISOString(),
  };
}

async function endpoint(db: ControlPlane, orgId: string, events = ["*"]) {
  return await db.webhooks.create(orgId, {
    url: "https://hooks.example.com/abn",
    description: "",
    events: events as never,
    secret: SECRET,
  });
}

/** Every delivery of an endpoint as `type` (oldest first), with its parsed body. */
async function sent(db: ControlPlane, orgId: string, webhookId: string) {
  const page = await db.webhooks.deliveries(orgId, webhookId, { limit: 1000 });
  return page.reverse();
}

/** Claims everything due and answers the claims' bodies by type. */
async function claimAll(db: ControlPlane, owner = "I") {
  const claimed = await db.webhooks.claim(owner, 60, 1000);
  return claimed.map((c) => ({ ...c, event: JSON.parse(c.body) }));
}

function report(mismatch: boolean, decision: string, percent: number) {
  return {
    key_metric: "converted",
    srm: { mismatch, p_value: mismatch ? 0.00001 : 0.5, chi_square: mismatch ? 19.5 : 0.4 },
    sample: { percent_of_target: percent },
    metrics: [{ name: "converted", comparisons: [{ name: "B", decision }] }],
  };
}

controlPlaneTest(
  "webhooks: endpoints are the organization's own; updates, rotation and deletion",
  async (db) => {
    const a = await endpoint(db, "org_a", ["dataset.delivered"]);
    assertEquals([a.enabled, a.events, a.consecutive_failures], [true, ["dataset.delivered"], 0]);
    assert(a.webhook_id.startsWith("wh_"));
    assertEquals(await db.webhooks.get("org_b", a.webhook_id), null);
    assertEquals(await db.webhooks.update("org_b", a.webhook_id, { enabled: false }), null);
    assertEquals(await db.webhooks.delete("org_b", a.webhook_id), false);
    const off = await db.webhooks.update("org_a", a.webhook_id, {
      enabled: false,
      reason: "Disabled by key k1",
      description: "ops",
    });
    assertEquals([off?.enabled, off?.disabled_reason, off?.description], [
      false,
      "Disabled by key k1",
      "ops",
    ]);
    const on = await db.webhooks.update("org_a", a.webhook_id, { enabled: true });
    assertEquals([on?.enabled, on?.disabled_reason], [true, null]);
    const rotated = await db.webhooks.rotateSecret("org_a", a.webhook_id, `${SECRET}x`, 3600);
    assert(Date.parse(rotated!.previous_secret_until!) > Date.now() + 3500_000);
    assertEquals((await db.webhooks.list("org_a")).map((e) => e.webhook_id), [a.webhook_id]);
    assertEquals(await db.webhooks.list("org_b"), []);
    assertEquals(await db.webhooks.delete("org_a", a.webhook_id), true);
    assertEquals(await db.webhooks.list("org_a"), []);
  },
);

controlPlaneTest(
  "webhooks: a catalog row new or of another object raises dataset.delivered once; a removal dataset.deleted",
  async (db) => {
    const hook = await endpoint(db, "org_a");
    const only = await endpoint(db, "org_a", ["analysis.ready"]);
    await db.datasets.put([entry("org_a", "exp", "e1"), entry("org_b", "exp", "e1")]);
    // Seen again as it was (a later observation of the same write) raises nothing.
    await db.datasets.put([{
      ...entry("org_a", "exp", "e1"),
      observed_at: entry("", "", "", 2).observed_at,
    }]);
    await db.datasets.put([entry("org_a", "exp", "e2", 3)]);
    const delivered = await sent(db, "org_a", hook.webhook_id);
    assertEquals(delivered.map((d) => d.type), ["dataset.delivered", "dataset.delivered"]);
    assertEquals(await sent(db, "org_a", only.webhook_id), []);
    const claimed = await claimAll(db);
    assertEquals(claimed.map((c) => c.event.data.etag).sort(), ["e1", "e2"]);
    assertEquals(claimed[0].event.data.organization_id, "org_a");
    assertEquals(claimed[0].event.data.experiment_id, "exp");
    assertEquals(claimed[0].secrets, [SECRET]);
    assertEquals(await db.datasets.remove("org_a", "exp", new Date().toISOString()), true);
    assertEquals(await db.datasets.remove("org_a", "exp", new Date().toISOString()), false);
    const types = (await sent(db, "org_a", hook.webhook_id)).map((d) => d.type);
    assertEquals(types, ["dataset.delivered", "dataset.delivered", "dataset.deleted"]);
    // A disabled endpoint is sent nothing new.
    await db.webhooks.update("org_a", hook.webhook_id, { enabled: false });
    await db.datasets.put([entry("org_a", "exp", "e3", 4)]);
    assertEquals((await sent(db, "org_a", hook.webhook_id)).length, 3);
  },
);

controlPlaneTest(
  "webhooks: a commit's entry raises dataset.delivered without a comparison; an older one nothing",
  async (db) => {
    const hook = await endpoint(db, "org_a");
    await db.datasets.put([entry("org_a", "exp", "e1")]);
    // The same object seen again raises nothing; written again by a commit it is a delivery.
    const again = { ...entry("org_a", "exp", "e1"), observed_at: entry("", "", "", 2).observed_at };
    await db.datasets.put([again]);
    await db.datasets.put([{
      ...again,
      observed_at: entry("", "", "", 3).observed_at,
      committed: true,
    }]);
    // A commit observed before the row's own observation changes nothing, so raises nothing.
    await db.datasets.put([{ ...entry("org_a", "exp", "e2"), committed: true }]);
    // A batch of both kinds: the commit's dataset and the changed one raise, the same one not.
    await db.datasets.put([
      { ...entry("org_a", "new", "n1", 4), committed: true },
      { ...entry("org_a", "exp", "e1"), observed_at: entry("", "", "", 4).observed_at },
      { ...entry("org_a", "other", "o1", 4) },
    ]);
    const delivered = await sent(db, "org_a", hook.webhook_id);
    assertEquals(delivered.map((d) => d.type), Array(4).fill("dataset.delivered"));
    const claimed = await claimAll(db);
    assertEquals(claimed.map((c) => `${c.event.data.experiment_id}:${c.event.data.etag}`).sort(), [
      "exp:e1",
      "exp:e1",
      "new:n1",
      "other:o1",
    ]);
    assertEquals((await db.datasets.get("org_a", "exp"))?.etag, "e1");
  },
);

controlPlaneTest(
  "webhooks: a saved result raises analysis events, and experiment events against the previous ready one",
  async (db) => {
    const hook = await endpoint(db, "org_a");
    const save = async (etag: string, result: unknown, status: "ready" | "failed" = "ready") => {
      await db.analyses.markPending("org_a", "exp", etag, 10, "2026-12-01T00:00:00.000Z");
      assert(
        await db.analyses.saveResult("org_a", "exp", etag, {
          status,
          error: status === "failed" ? "no_data_rows" : null,
          rows: 5,
          result,
        }, new Date().toISOString()),
      );
    };
    const types = async () => (await sent(db, "org_a", hook.webhook_id)).map((d) => d.type);
    await save("e1", report(true, "inconclusive", 40));
    assertEquals(await types(), ["analysis.ready", "experiment.srm_detected"]);
    await save("e2", report(true, "inconclusive", 60)); // the same imbalance again
    await save("e3", null, "failed");
    await save("e4", report(true, "better", 120));
    assertEquals((await types()).slice(2), [
      "analysis.ready",
      "analysis.failed",
      "analysis.ready",
      "experiment.decision_changed",
      "experiment.target_reached",
    ]);
    const bodies = (await claimAll(db)).map((c) => c.event).filter((e) =>
      e.type.startsWith("experiment.")
    );
    const decision = bodies.find((e) => e.type === "experiment.decision_changed");
    assertEquals(decision.data.decision, {
      metric: "converted",
      variant: "B",
      from: "inconclusive",
      to: "better",
    });
    assertEquals(decision.data.etag, "e4");
    assertEquals(bodies.find((e) => e.type === "experiment.srm_detected").data.srm, {
      p_value: 0.00001,
      chi_square: 19.5,
    });
    // A re-run of an older result (the row stays ready) with the same figures raises nothing.
    assert(
      await db.analyses.saveResult("org_a", "exp", "e4", {
        status: "ready",
        error: null,
        rows: 5,
        result: report(true, "better", 120),
        version: 99,
      }, new Date().toISOString()),
    );
    assertEquals((await types()).length, 7);
  },
);

controlPlaneTest(
  "webhooks: instances claim disjoint deliveries; a lease runs out; only its owner settles",
  async (a, reopen) => {
    const b = await reopen();
    const hook = await endpoint(a, "org_a");
    await a.datasets.put(Array.from({ length: 20 }, (_, i) => entry("org_a", `e${i}`, "x")));
    const [fromA, fromB] = await Promise.all([
      a.webhooks.claim("A", 60, 8),
      b.webhooks.claim("B", 60, 8),
    ]);
    const ids = [...fromA, ...fromB].map((c) => c.id);
    assertEquals(new Set(ids).size, 16);
    const attempt = (id: string, state: SettledAttempt["state"]): SettledAttempt => ({
      id,
      endpointId: hook.webhook_id,
      state,
      status: state === "delivered" ? 204 : 500,
      error: state === "delivered" ? null : "The endpoint answered 500",
      nextAttemptAt: state === "pending" ? new Date(Date.now() - 1000).toISOString() : null,
    });
    // B's settle of A's claim is not recorded.
    await b.webhooks.settle("B", [attempt(fromA[0].id, "delivered")]);
    await a.webhooks.settle("A", [attempt(fromA[1].id, "pending")]);
    const rest = await a.webhooks.claim("A", 0, 100); // a lease of 0 s runs out at once
    assertEquals(rest.length, 5, "4 never claimed and the one to retry");
    const again = await b.webhooks.claim("B", 60, 100);
    assertEquals(again.map((c) => c.id).sort(), rest.map((c) => c.id).sort());
    const retried = again.find((c) => c.id === fromA[1].id)!;
    assertEquals(retried.attempts, 1);
    assertEquals((await a.webhooks.get("org_a", hook.webhook_id))?.consecutive_failures, 0);
  },
);

controlPlaneTest(
  "webhooks: a 410 disables the endpoint; so do 50 failed deliveries in a row, a delivered one resetting the count",
  async (db) => {
    const hook = await endpoint(db, "org_a");
    const other = await endpoint(db, "org_b");
    await db.datasets.put(
      Array.from({ length: MAX_CONSECUTIVE_FAILURES + 1 }, (_, i) => entry("org_a", `e${i}`, "x")),
    );
    await db.datasets.put([entry("org_b", "exp", "x")]);
    const claimed = await db.webhooks.claim("I", 60, 1000);
    const mine = claimed.filter((c) => c.endpointId === hook.webhook_id);
    const outcome = (i: number): SettledAttempt => ({
      id: mine[i].id,
      endpointId: hook.webhook_id,
      state: i === 0 ? "delivered" : "failed",
      status: i === 0 ? 200 : 500,
      error: i === 0 ? null : "The endpoint answered 500",
      nextAttemptAt: null,
    });
    assertEquals(await db.webhooks.settle("I", mine.slice(0, 49).map((_, i) => outcome(i))), []);
    assertEquals((await db.webhooks.get("org_a", hook.webhook_id))?.consecutive_failures, 48);
    const disabled = await db.webhooks.settle("I", [outcome(49), outcome(50)]);
    assertEquals(disabled.map((d) => d.webhookId), [hook.webhook_id]);
    const after = await db.webhooks.get("org_a", hook.webhook_id);
    assertEquals([after?.enabled, after?.consecutive_failures], [false, 50]);
    assert(after?.disabled_reason?.includes("50"));
    const theirs = claimed.find((c) => c.endpointId === other.webhook_id)!;
    const gone = await db.webhooks.settle("I", [{
      id: theirs.id,
      endpointId: other.webhook_id,
      state: "failed",
      status: 410,
      error: "The endpoint answered 410 Gone",
      nextAttemptAt: null,
      disable: "The endpoint answered 410 Gone",
    }]);
    assertEquals(gone, [{
      webhookId: other.webhook_id,
      orgId: "org_b",
      reason: "The endpoint answered 410 Gone",
    }]);
    const page = await db.webhooks.deliveries("org_a", hook.webhook_id, { limit: 2 });
    assertEquals(page.length, 2);
    const next = await db.webhooks.deliveries("org_a", hook.webhook_id, {
      limit: 100,
      after: { created_at: page[1].created_at, id: page[1].delivery_id },
    });
    assertEquals(next.length, MAX_CONSECUTIVE_FAILURES - 1);
    assertEquals(
      new Set([...page, ...next].map((d) => d.delivery_id)).size,
      MAX_CONSECUTIVE_FAILURES + 1,
    );
    // A retry asked for starts a new round; another organization's id answers null.
    const failed = next[0];
    assertEquals(await db.webhooks.retry("org_b", hook.webhook_id, failed.delivery_id), null);
    const retried = await db.webhooks.retry("org_a", hook.webhook_id, failed.delivery_id);
    assertEquals([retried?.state, retried?.attempts], ["pending", 1]);
    // Pruning removes finished deliveries only: 50 of org_a's (one is pending again), org_b's.
    assertEquals(await db.webhooks.prune(new Date(Date.now() + 60_000).toISOString()), 51);
    assertEquals(
      (await db.webhooks.deliveries("org_a", hook.webhook_id, { limit: 100 })).map((d) =>
        d.delivery_id
      ),
      [failed.delivery_id],
    );
  },
);
