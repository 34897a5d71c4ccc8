/**
 * A large direct upload that arrives at a network's pace: its analysis is the one of the same
 * bytes delivered in two steps, a refused one leaves nothing behind, and settings saved while it
 * streams apply to its analysis.
 */
import { assert, assertEquals } from "../_assert.ts";
import { deliverTwoStep, type DriverServer } from "../_drivers.ts";
import { analysisOf, figures, pacedUpload, settled, withRuns } from "../_paced_upload.ts";

const encoder = new TextEncoder();

/**
 * ~37 MB (a body piped into its file takes 32 MiB): 1,100,000 rows of 400,000 users, each seen
 * on several days, a few in both variants; `badLine` holds an impossible date.
 */
function bigCsv(badLine?: number): Uint8Array<ArrayBuffer> {
  const lines = ["user_id,variant,date,converted,revenue"];
  for (let i = 2; i <= 1_100_001; i++) {
    const user = (i * 7919) % 400_000;
    const variant = user % 1000 === 7 ? (i % 2 ? "B" : "A") : user % 2 ? "B" : "A";
    const day = String(1 + (i % 28)).padStart(2, "0");
    lines.push(
      i === badLine
        ? `u${user},A,2026-02-30,1,2.5`
        : `user-${user},${variant},2026-02-${day},${i % 11 === 0 ? 1 : 0},${i % 13}.25`,
    );
  }
  return encoder.encode(lines.join("\n") + "\n");
}

/** `pacedUpload` to `server`'s organization. */
function paced(server: DriverServer, id: string, body: Uint8Array, bytesPerSecond: number) {
  return pacedUpload(server.url, server.apiKey, id, body, bytesPerSecond);
}

Deno.test("a large upload arriving at a network's pace is analysed once, to the figures of the same bytes delivered in two steps", async () => {
  await withRuns(async (server, finished) => {
    const body = bigCsv();
    assert(body.length >= 32 * 1024 * 1024);
    // About 25 MB/s: 1.5 s on the way.
    const { status, json } = await paced(server, "paced", body, 25e6);
    assertEquals(status, 201, JSON.stringify(json));
    const arrived = await settled(server, "paced");
    assertEquals(arrived.status, "ready", JSON.stringify(arrived.error));
    assertEquals((arrived.dataset as { etag: string }).etag, json.etag);
    const runs = finished().filter((line) => line.experiment_id === "paced");
    assertEquals(runs.map((line) => line.etag), [json.etag]);
    // The same bytes delivered in two steps, read after storing: the same analysis.
    await deliverTwoStep(server, "stored", body);
    const stored = await settled(server, "stored");
    assertEquals(stored.status, "ready", JSON.stringify(stored.error));
    assertEquals(figures(arrived), figures(stored));
  });
});

Deno.test("a paced upload refused at its last lines leaves the stored dataset and its analysis", async () => {
  await withRuns(async (server, finished) => {
    const small = encoder.encode(
      "user_id,variant,date,converted\nu1,A,2026-02-01,1\nu2,B,2026-02-01,0\n",
    );
    const first = await fetch(`${server.api}/datasets/upload/?experiment_id=kept`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "text/csv" },
      body: small,
    });
    const stored = await first.json();
    assertEquals(first.status, 201);
    const before = await settled(server, "kept");
    const { status, json } = await paced(server, "kept", bigCsv(1_099_990), 25e6);
    assertEquals(status, 400, JSON.stringify(json));
    assertEquals((json.error as { code: string }).code, "invalid_date");
    await new Promise((resolve) => setTimeout(resolve, 300));
    const after = await analysisOf(server, "kept");
    assertEquals((after.dataset as { etag: string }).etag, stored.etag);
    assertEquals(after, before);
    assertEquals(finished().filter((l) => l.experiment_id === "kept").length, 1);
  });
});

Deno.test("settings saved while a paced upload streams apply to its analysis", async () => {
  await withRuns(async (server, finished) => {
    const body = bigCsv();
    const upload = paced(server, "resettled", body, 25e6);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const put = await fetch(`${server.api}/datasets/resettled/settings/`, {
      method: "PUT",
      headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ key_metric: "revenue", winsorize: { revenue: 0.9 } }),
    });
    assertEquals(put.status, 200, await put.text());
    const { status, json } = await upload;
    assertEquals(status, 201, JSON.stringify(json));
    const analysis = await settled(server, "resettled");
    assertEquals(analysis.status, "ready", JSON.stringify(analysis.error));
    assertEquals(analysis.key_metric, "revenue");
    assertEquals(finished().filter((line) => line.etag === json.etag).length, 1);
  });
});
