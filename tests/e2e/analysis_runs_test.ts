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
      // Streamed without a declared length.
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
    const pending = await poll.json();
    assertEquals(pending.status, "pending");
    assertEquals(pending.dataset.columns, null, "no columns before the analysis is ready");
    await server.service.analysis.whenIdle();
    const runs = finishedRuns(lines, "tuned");
    assertEquals(runs.map((r) => r.status), ["ready", "ready"]);
    assertEquals(runs.map((r) => r.source), ["upload", "settings"]);
    const final = await fetch(`${server.api}/datasets/tuned/analysis/`, { headers: auth });
    const body = await final.json();
    assertEquals(body.status, "ready");
    assertEquals(body.dataset.columns, [
      { name: "converted", kind: "conversion" },
      { name: "revenue", kind: "numeric" },
    ]);
    assertEquals(Object.keys(body).filter((k) => k.startsWith("_")), [], "no hidden field");
  } finally {
    await server.close();
  }
});

Deno.test("a large delivery with a date before 1950 is analysed in one run, its days read in 32 bits", async () => {
  const lines: string[] = [];
  const server = await startDriverServer("local", {}, { log: (line) => lines.push(line) });
  try {
    const auth = { authorization: `Bearer ${server.apiKey}` };
    const recent = await bytesOf(60_000, 11); // over 1 MiB: aggregated on two threads
    assert(recent.length > 1024 * 1024);
    const analyse = async (experimentId: string, body: Uint8Array<ArrayBuffer>) => {
      const res = await fetch(`${server.api}/datasets/upload/?experiment_id=${experimentId}`, {
        method: "POST",
        headers: auth,
        body,
      });
      assertEquals(res.status, 201);
      await res.body?.cancel();
      for (;;) {
        const a = await fetch(`${server.api}/datasets/${experimentId}/analysis/`, {
          headers: auth,
        });
        const analysis = await a.json();
        if (analysis.status !== "pending") return analysis;
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const old = new TextEncoder().encode("user-of-1900,A,1900-01-01,1,5.00\n");
    const both = new Uint8Array(recent.length + old.length);
    both.set(recent);
    both.set(old, recent.length);
    const [before, after] = [await analyse("recent", recent), await analyse("old", both)];
    // The same bytes in two steps (a PUT to the upload URL): checked and hashed beside the
    // reading, on the validator thread, read again the same way.
    const granted = await fetch(`${server.api}/datasets/initiate/`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ experiment_id: "old-two-step", size_bytes: both.length }),
    });
    assertEquals(granted.status, 200);
    const { upload_url } = await granted.json();
    const stored = await fetch(upload_url, { method: "PUT", body: both });
    assertEquals(stored.status, 200);
    await stored.body?.cancel();
    let twoStep;
    for (;;) {
      const a = await fetch(`${server.api}/datasets/old-two-step/analysis/`, { headers: auth });
      twoStep = await a.json();
      if (twoStep.status !== "pending") break;
      await new Promise((r) => setTimeout(r, 20));
    }
    assertEquals(twoStep.status, "ready");
    assertEquals(twoStep.daily, after.daily);
    assertEquals(twoStep.sample.total_users, after.sample.total_users);
    assertEquals(after.status, "ready");
    assertEquals(after.daily[0].date, "1900-01-01");
    assertEquals(after.daily.length, before.daily.length + 1);
    assertEquals(after.sample.total_users, before.sample.total_users + 1);
    const a = (analysis: { variants: { name: string; users: number }[] }) =>
      analysis.variants.find((v) => v.name === "A")!.users;
    assertEquals(a(after), a(before) + 1);
    // The last day's cumulative users are everyone's, the old user included.
    const last = (analysis: { daily: { variants: { cumulative_users: number }[] }[] }) =>
      analysis.daily.at(-1)!.variants.reduce((sum, v) => sum + v.cumulative_users, 0);
    assertEquals(last(after), last(before) + 1);
    await server.service.analysis.whenIdle();
    assertEquals(finishedRuns(lines, "old").length, 1);
    // The next delivery is read with 32-bit days at once (its previous one held such a date).
    const more = new TextEncoder().encode("user-of-1900,A,1900-01-02,0,1.00\n");
    const next = new Uint8Array(both.length + more.length);
    next.set(both);
    next.set(more, both.length);
    const again = await analyse("old", next);
    assertEquals(again.status, "ready");
    assertEquals(again.daily.slice(0, 2).map((d: { date: string }) => d.date), [
      "1900-01-01",
      "1900-01-02",
    ]);
    assertEquals(again.sample.total_users, after.sample.total_users);
    await server.service.analysis.whenIdle();
    assertEquals(finishedRuns(lines, "old").length, 2);
  } finally {
    await server.close();
  }
});
