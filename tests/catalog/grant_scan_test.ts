/**
 * The timer's scan costs what is open, not what is stored: with an injected store counting its
 * calls, one scan `head`s the key of each open upload grant and nothing else.
 */
import { assertEquals } from "../_assert.ts";
import { waitFor } from "../_faults.ts";
import type { FaultyServer } from "../reliability/_helpers.ts";
import { authed, startFaultyServer, upload, VALID } from "../reliability/_helpers.ts";
import type { StoreOperation } from "../_faults.ts";

function counts(server: FaultyServer): Partial<Record<StoreOperation, number>> {
  return Object.fromEntries(server.faulty.calls);
}

async function initiate(server: FaultyServer, experimentId: string): Promise<void> {
  const res = await authed(server, server.apiKey, "/datasets/initiate/", {
    method: "POST",
    body: JSON.stringify({ experiment_id: experimentId }),
  });
  assertEquals(res.status, 200, await res.text());
}

/** Stored datasets, analysed, and the calls they made forgotten. */
async function quiet(server: FaultyServer, stored: number): Promise<void> {
  await waitFor(() => server.service.catalog.ready, "the start-up reconciliation");
  for (let i = 0; i < stored; i++) {
    assertEquals((await upload(server, `stored-${i}`, VALID)).status, 201);
  }
  await server.service.analysis.whenIdle();
  server.faulty.calls.clear();
}

Deno.test("a scan on S3 heads the key of each open grant (and of grants closed under 30 minutes ago), nothing else", async () => {
  const server = await startFaultyServer("s3", { ABN_SCAN_INTERVAL_SECONDS: "3600" });
  try {
    await quiet(server, 12);
    await initiate(server, "open-1");
    await initiate(server, "open-2");
    await initiate(server, "open-2"); // the same key again: one grant
    const grant = (id: string, minutesAgo: number) => ({
      key: `org/${server.orgId}/experiments/${id}/latest.csv`,
      org_id: server.orgId,
      experiment_id: id,
      expires_at: new Date(Date.now() - minutesAgo * 60_000).toISOString(),
    });
    // Expired 10 minutes ago (a slow PUT may still end): open; 2 hours ago: closed.
    await server.service.db.grants.put([grant("late", 10), grant("closed", 120)]);
    server.faulty.calls.clear();
    await server.service.jobs.scan.runOnce();
    assertEquals(counts(server), { head: 3 });
    // Nothing was PUT: nothing noticed, nothing analysed.
    assertEquals(server.service.analysis.inFlight(server.orgId, "open-1", ""), false);
    // The list heads the open grants of the caller's organization, and reads the catalog.
    server.faulty.calls.clear();
    const res = await authed(server, server.apiKey, "/datasets/");
    assertEquals((await res.json()).datasets.length, 12);
    assertEquals(counts(server), { head: 3 });
    // The clean-up forgets grants closed for good.
    await server.service.jobs.cleanup.runOnce();
    const left = await server.service.db.grants.open("2000-01-01T00:00:00.000Z");
    assertEquals(left.map((g) => g.experiment_id), ["late", "open-1", "open-2"]);
  } finally {
    await server.close();
  }
});

Deno.test("a scan with no open grant touches no storage, whatever is stored (local and S3)", async () => {
  for (const driver of ["local", "s3"] as const) {
    const server = await startFaultyServer(driver, { ABN_SCAN_INTERVAL_SECONDS: "3600" });
    try {
      await quiet(server, 15);
      await server.service.jobs.scan.runOnce();
      await server.service.jobs.scan.runOnce();
      assertEquals(counts(server), {}, driver);
      assertEquals(
        server.service.metrics.timerRuns.get({ job: "scan", outcome: "ok" }) >= 2,
        true,
      );
    } finally {
      await server.close();
    }
  }
});
