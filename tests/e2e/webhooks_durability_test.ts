/**
 * Webhooks are delivered at least once: an event committed before the process is killed (the
 * receiver down meanwhile) arrives after the restart; and two instances on one PostgreSQL
 * database deliver every event, none lost, never two attempts of one event at once.
 */
import { assert, assertEquals } from "../_assert.ts";
import { freePort, runMain, spawnServer, startTestServer } from "../_server.ts";
import { waitFor } from "../_faults.ts";
import { postgresTest, withDatabase } from "../_postgres.ts";
import { pause, startReceiver } from "../webhooks/_receiver.ts";
import { createEndpoint, experimentCsv, uploadCsv } from "./_webhooks.ts";

Deno.test("webhooks: an event committed before a SIGKILL, with the receiver down, arrives after the restart", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "abn-webhook-kill-" });
  const env = {
    ABN_DATA_DIR: dataDir,
    ABN_WEBHOOK_ALLOW_PRIVATE: "true",
    ABN_WEBHOOK_RETRY_SCHEDULE: Array.from({ length: 30 }, (_, i) => i).join(","),
  };
  const org = JSON.parse((await runMain(["admin", "org", "create", "acme", "--json"], env)).stdout);
  const { api_key: apiKey } = JSON.parse(
    (await runMain(["admin", "key", "create", org.org_id, "--json"], env)).stdout,
  );
  const port = freePort(); // nothing listens there until the restart
  let secret = "";
  const receiver = { close: () => Promise.resolve() } as { close(): Promise<void> };
  const first = await spawnServer(env);
  let second: Awaited<ReturnType<typeof spawnServer>> | undefined;
  try {
    const api = { api: `${first.url}/api/v1`, apiKey };
    const endpoint = await createEndpoint(api, `http://127.0.0.1:${port}/hook`, [
      "dataset.delivered",
    ]);
    secret = endpoint.secret;
    await uploadCsv(api, "nightly", experimentCsv({ A: 10, B: 10 }, { A: 0.1, B: 0.2 }));
    assertEquals((await first.stop("SIGKILL")).signal, "SIGKILL");

    const up = startReceiver(() => secret, {}, { port });
    receiver.close = up.close;
    second = await spawnServer(env);
    const request = await waitFor(() => up.requests[0], "the delivery after the restart", 15_000);
    assert(request.verified, request.verifyError);
    const event = JSON.parse(request.body);
    assertEquals([event.type, event.data.experiment_id], ["dataset.delivered", "nightly"]);
  } finally {
    await first.stop("SIGKILL").catch(() => {});
    await second?.stop();
    await receiver.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});

postgresTest(
  "webhooks on PostgreSQL: two instances deliver every event, none lost, never two attempts of one at once",
  () =>
    withDatabase(async (database) => {
      const active = new Map<string, number>();
      const tries = new Map<string, number>();
      let overlaps = 0;
      let secret = "";
      const receiver = startReceiver(() => secret, {
        "/hook": async (request) => {
          const id = request.headers.get("webhook-id")!;
          const n = (tries.get(id) ?? 0) + 1;
          tries.set(id, n);
          if ((active.get(id) ?? 0) > 0) overlaps++;
          active.set(id, (active.get(id) ?? 0) + 1);
          await pause(20);
          active.set(id, active.get(id)! - 1);
          // One event in three fails its first attempt.
          const fail = n === 1 && parseInt(id.slice(-2), 16) % 3 === 0;
          return new Response(fail ? "not yet" : "ok", { status: fail ? 500 : 200 });
        },
      });
      const env = {
        ABN_DATABASE_URL: database.url,
        ABN_WEBHOOK_ALLOW_PRIVATE: "true",
        ABN_WEBHOOK_RETRY_SCHEDULE: "0,0,0,0,0",
      };
      const a = await startTestServer(env);
      const b = await startTestServer(env);
      try {
        const endpoint = await createEndpoint(a, receiver.url("/hook"));
        secret = endpoint.secret;
        // 120 deliveries recorded by both instances, at once: each wakes its own sender, and
        // both claim from the one outbox.
        const entries = (n: number) => ({
          org_id: a.orgId,
          experiment_id: `e${n}`,
          key: `org/${a.orgId}/experiments/e${n}/latest.csv`,
          size_bytes: 10,
          etag: `x${n}`,
          delivered_at: new Date().toISOString(),
          observed_at: new Date().toISOString(),
        });
        await Promise.all(
          Array.from({ length: 12 }, (_, batch) =>
            (batch % 2 ? b : a).service.db.datasets.put(
              Array.from({ length: 10 }, (_, i) => entries(batch * 10 + i)),
            )),
        );
        const db = a.service.db;
        const all = await waitFor(
          async () => {
            const page = await db.webhooks.deliveries(a.orgId, endpoint.id, { limit: 500 });
            return page.length === 120 && page.every((d) => d.state === "delivered") && page;
          },
          "every delivery delivered",
          30_000,
        );
        const received = new Set(
          receiver.requests.filter((r) => r.status === 200).map((r) => r.headers["webhook-id"]),
        );
        for (const d of all) assert(received.has(d.event_id), `${d.event_id} never arrived`);
        assert(receiver.requests.every((r) => r.verified), "every request verified");
        assertEquals(overlaps, 0, "two attempts of one event at once");
        const retried = all.filter((d) => d.attempts > 1).length;
        assert(retried > 10, `${retried} deliveries retried after a 500`);
        const sentBy = [a, b].map((s) =>
          s.service.metrics.webhookAttempts.get({ result: "delivered" })
        );
        assert(sentBy.every((n) => n > 0), `both instances sent: ${sentBy}`);
        assert(sentBy[0] + sentBy[1] >= 120);
      } finally {
        await a.close();
        await b.close();
        await receiver.close();
      }
    }),
);
