/**
 * One analysis run per delivery: polls, scans and events for the object being analysed join its
 * run; a settings change re-runs it once, afterwards. Counted from the service's own log lines.
 */
import { assert, assertEquals } from "../_assert.ts";
import { startDriverServer } from "../_drivers.ts";
import { generateCsv } from "../../bench/generate_csv.ts";

async function bytesOf(rows: number, seed: number): Promise<Uint8Array<ArrayBuffer>> {
  const parts: Uint8Array[] = [];
  for await (const c of generateCsv({ rows, seed, variants: ["A", "B"], days: 10 })) parts.push(c);
  return new Uint8Array(await new Blob(parts as Uint8Array<ArrayBuffer>[]).arrayBuffer());
}

function finishedRuns(lines: string[], experimentId: string): Record<string, unknown>[] {
  return lines.map((l) => JSON.parse(l)).filter((l) =>
    l.msg === "analysis finished" && l.experiment_id === experimentId
  );
}

Deno.test("polling a pending analysis joins its run instead of queueing a second one", async () => {
  const lines: string[] = [];
  const server = await startDriverServer("local", {}, { log: (line) => lines.push(line) });
  try {
    const auth = { authorization: `Bearer ${server.apiKey}` };
    const csv = await bytesOf(600_000, 7);
    const res = await fetch(`${server.api}/datasets/upload/?experiment_id=polled`, {
      method: "POST",
      headers: auth,
      body: csv,
    });
    assertEquals(res.status, 201);
    await res.body?.cancel();
    let status = "pending";
    let polls = 0;
    while (status === "pending") {
      const a = await fetch(`${server.api}/datasets/polled/analysis/`, { headers: auth });
      status = (await a.json()).status;
      polls++;
      if (status === "pending") await new Promise((r) => setTimeout(r, 5));
    }
    assertEquals(status, "ready");
    assert(polls > 1, `the analysis was polled while it ran (${polls} polls)`);
    await server.service.analysis.whenIdle();
    assertEquals(finishedRuns(lines, "polled").length, 1);
  } finally {
    await server.close();
  }
});

Deno.test("a settings change while the analysis runs re-runs it once, afterwards", async () => {
  const lines: string[] = [];
  const server = await startDriverServer("local", {}, { log: (line) => lines.push(line) });
  try {
    const auth = { authorization: `Bearer ${server.apiKey}` };
    const res = await fetch(`${server.api}/datasets/upload/?experiment_id=tuned`, {
      method: "POST",
      headers: auth,
      // Large enough for the analysis (about a second) to outlast the three changes below (a few
      // milliseconds each) on a busy machine: with 300,000 rows a run once ended before them.
      // Streamed without a declared length, so that the analysis runs after the 201: a large
      // declared upload that arrives slowly (as on a busy machine) is aggregated while it
      // streams, and its analysis is then ready before the changes.
      body: new Blob([await bytesOf(1_200_000, 8)]).stream(),
    });
    assertEquals(res.status, 201);
    await res.body?.cancel();
    // The three changes (and a poll) at once: they all land while the run goes on, where one
    // after another they once outlasted it on a loaded machine (and a third run followed).
    const puts = await Promise.all(
      [0, 1, 2].map((i) =>
        fetch(`${server.api}/datasets/tuned/settings/`, {
          method: "PUT",
          headers: { ...auth, "content-type": "application/json" },
          body: JSON.stringify({ mde: 0.1 + i / 100 }),
        })
      ),
    );
    for (const put of puts) {
      assertEquals(put.status, 200);
      await put.body?.cancel();
    }
    const poll = await fetch(`${server.api}/datasets/tuned/analysis/`, { headers: auth });
    assertEquals((await poll.json()).status, "pending");
    await server.service.analysis.whenIdle();
    const runs = finishedRuns(lines, "tuned");
    assertEquals(runs.map((r) => r.status), ["ready", "ready"]);
    assertEquals(runs.map((r) => r.source), ["upload", "settings"]);
    const final = await fetch(`${server.api}/datasets/tuned/analysis/`, { headers: auth });
    const body = await final.json();
    assertEquals(body.status, "ready");
  } finally {
    await server.close();
  }
});
