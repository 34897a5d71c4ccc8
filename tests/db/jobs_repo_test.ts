/**
 * Analysis jobs on both engines (SQLite and PostgreSQL), two handles on one database as two
 * instances (or the admin CLI and the server): one job per dataset, newest delivery wins, a
 * settings change queues one more run, leases run out and are renewed, claims never overlap.
 */
import { assertEquals } from "../_assert.ts";
import type { AnalysisJob, AnalysisJobOffer } from "../../src/db/control_plane.ts";
import { controlPlaneTest } from "./_control_planes.ts";

function offer(experimentId: string, etag: string, extra: Partial<AnalysisJobOffer> = {}) {
  return {
    orgId: "org_a",
    experimentId,
    key: `org/org_a/experiments/${experimentId}/latest.csv`,
    etag,
    sizeBytes: 100,
    deliveredAt: "2026-03-05T10:00:00.000Z",
    validated: false,
    source: "upload" as const,
    lane: "small" as const,
    ...extra,
  };
}

controlPlaneTest(
  "jobs: the same object offered again joins its job; a newer one runs after the current run",
  async (a, reopen) => {
    const b = await reopen();
    await a.jobs.offer(offer("exp", "e1", { validated: true }));
    await b.jobs.offer(offer("exp", "e1", { source: "scan" })); // joins: nothing changes
    const [job] = await a.jobs.claim("A", 60, 10);
    assertEquals([job.etag, job.generation, job.attempts, job.validated, job.source], [
      "e1",
      1,
      1,
      true,
      "upload",
    ]);
    assertEquals(await b.jobs.claim("B", 60, 10), []); // held by A
    await b.jobs.offer(offer("exp", "e2")); // a newer delivery while A runs
    assertEquals(await b.jobs.claim("B", 60, 10), []); // still one run at a time
    await a.jobs.complete("A", job); // e1 done; the row now holds e2: released, not removed
    const [next] = await b.jobs.claim("B", 60, 10);
    assertEquals([next.etag, next.generation, next.validated], ["e2", 2, false]);
    await b.jobs.complete("B", next);
    assertEquals(await a.jobs.claim("A", 60, 10), []);
  },
);

controlPlaneTest(
  "jobs: a settings change queues exactly one more run of the same object",
  async (a, reopen) => {
    const b = await reopen();
    await a.jobs.offer(offer("exp", "e1", { validated: true }));
    const [job] = await a.jobs.claim("A", 60, 10);
    for (let i = 0; i < 3; i++) await b.jobs.offer(offer("exp", "e1", { source: "settings" }));
    await a.jobs.complete("A", job);
    const [rerun] = await b.jobs.claim("B", 60, 10);
    assertEquals([rerun.source, rerun.validated, rerun.generation], ["settings", true, 4]);
    await b.jobs.complete("B", rerun);
    assertEquals(await b.jobs.claim("B", 60, 10), []);
  },
);

controlPlaneTest(
  "jobs: instances claiming at the same time never take the same job",
  async (a, reopen) => {
    const b = await reopen();
    for (let i = 0; i < 30; i++) await a.jobs.offer(offer(`exp${i}`, `e${i}`));
    const taken: string[][] = [[], []];
    // Rounds in lockstep: both claims of a round are sent together, so they overlap in the
    // database (or one follows the other); either way each must see rows the other left.
    for (let round = 0;; round++) {
      const claimed = await Promise.all(
        [a, b].map((db, n) => db.jobs.claim(`I${n}`, 60, 3, taken[n].map((id) => `org_a/${id}`))),
      );
      claimed.forEach((jobs, n) => taken[n].push(...jobs.map((j) => j.experimentId)));
      if (round === 0) {
        assertEquals(claimed.map((jobs) => jobs.length), [3, 3], "each claims its full batch");
      }
      if (claimed.every((jobs) => jobs.length === 0)) break;
    }
    const all = [...taken[0], ...taken[1]];
    assertEquals(all.length, 30);
    assertEquals(new Set(all).size, 30);
  },
);

controlPlaneTest(
  "jobs: a lease that runs out lets another instance claim the job; renewal keeps it",
  async (a, reopen) => {
    const b = await reopen();
    await a.jobs.offer(offer("exp", "e1"));
    const [job] = await a.jobs.claim("A", 1, 10);
    await new Promise((r) => setTimeout(r, 600));
    assertEquals(await a.jobs.renew("A", job, 1), true);
    await new Promise((r) => setTimeout(r, 600));
    assertEquals(await b.jobs.claim("B", 1, 10), []); // renewed 600 ms ago: still A's
    await new Promise((r) => setTimeout(r, 700));
    const [taken] = await b.jobs.claim("B", 60, 10); // A went silent: its lease ran out
    assertEquals([taken.etag, taken.attempts], ["e1", 2]);
    assertEquals(await a.jobs.renew("A", job, 60), false);
    await a.jobs.complete("A", job); // too late: not A's any more, nothing happens
    assertEquals(await a.jobs.claim("A", 60, 10), []);
    await b.jobs.complete("B", taken);
  },
);

controlPlaneTest(
  "jobs: an instance takes back at once a job it holds but does not run (an answer lost in an outage)",
  async (a, reopen) => {
    const b = await reopen();
    await a.jobs.offer(offer("exp", "e1"));
    const [job] = await a.jobs.claim("A", 60, 10);
    assertEquals(await a.jobs.claim("A", 60, 10, ["org_a/exp"]), []); // running it: left alone
    assertEquals(await b.jobs.claim("B", 60, 10), []); // another instance waits for the lease
    const [back] = await a.jobs.claim("A", 60, 10, []); // A lost track of it: taken back
    assertEquals([back.etag, back.attempts], [job.etag, 2]);
    await a.jobs.complete("A", back);
  },
);

controlPlaneTest(
  "jobs: a postponed job is claimable again after its delay, and that is no attempt",
  async (a, reopen) => {
    const b = await reopen();
    await a.jobs.offer(offer("exp", "e1"));
    const [job] = await a.jobs.claim("A", 60, 10);
    await a.jobs.postpone("A", job, 1);
    assertEquals(await b.jobs.claim("B", 60, 10), []);
    await new Promise((r) => setTimeout(r, 1100));
    const [again] = await b.jobs.claim("B", 60, 10);
    assertEquals(again.attempts, 1);
    await b.jobs.complete("B", again);
  },
);

controlPlaneTest(
  "jobs: a claim takes one lane's jobs, offered long enough ago, re-runs of older results last",
  async (a, reopen) => {
    const b = await reopen();
    const MB = 1 << 20;
    // Offered a few milliseconds apart (SQLite's clock reads milliseconds).
    const tick = () => new Promise((r) => setTimeout(r, 3));
    await a.jobs.offer(offer("old", "u1", { source: "upgrade" }));
    await tick();
    await a.jobs.offer(offer("small", "s1"));
    await tick();
    await a.jobs.offer(offer("large", "l1", { sizeBytes: 2 * MB, lane: "large" }));
    const ids = (jobs: { experimentId: string }[]) => jobs.map((j) => j.experimentId);
    // Re-runs of older results come after deliveries, however long they waited.
    const peek: AnalysisJob[] = [];
    for (let i = 0; i < 3; i++) {
      peek.push(...await b.jobs.claim("B", 60, 1, peek.map((j) => `org_a/${j.experimentId}`)));
    }
    assertEquals(ids(peek), ["small", "large", "old"]);
    for (const job of peek) await b.jobs.postpone("B", job, 0);
    assertEquals(ids(await a.jobs.claim("A", 60, 10, [], { lane: "large" })), [
      "large",
    ]);
    assertEquals(ids(await a.jobs.claim("A", 60, 10, [], { lane: "small" })), [
      "small",
    ]);
    assertEquals(ids(await a.jobs.claim("A", 60, 10, [], { lane: "upgrade" })), ["old"]);
    // Offered just now: not yet 500 ms old.
    await b.jobs.offer(offer("fresh", "f1"));
    assertEquals(await b.jobs.claim("B", 60, 10, [], { offeredAgoMs: 500 }), []);
    await new Promise((r) => setTimeout(r, 600));
    assertEquals(ids(await b.jobs.claim("B", 60, 10, [], { offeredAgoMs: 500 })), ["fresh"]);
  },
);

controlPlaneTest(
  "jobs: a re-run of an older result never replaces a job; a settings change replaces it; the upload's SHA-256 is kept",
  async (a, reopen) => {
    const b = await reopen();
    await a.jobs.offer(offer("exp", "e2", { sha256: "abc" }));
    await b.jobs.offer(offer("exp", "e1", { source: "upgrade" })); // an older object: ignored
    await b.jobs.offer(offer("exp", "e2", { source: "scan" })); // joins, SHA-256 kept
    const [job] = await a.jobs.claim("A", 60, 10);
    assertEquals([job.etag, job.source, job.sha256, job.generation], ["e2", "upload", "abc", 1]);
    await a.jobs.complete("A", job);
    await a.jobs.offer(offer("exp", "e2", { source: "upgrade" }));
    await b.jobs.offer(offer("exp", "e2", { source: "settings" }));
    const [rerun] = await b.jobs.claim("B", 60, 10);
    assertEquals([rerun.source, rerun.sha256], ["settings", undefined]);
    await b.jobs.complete("B", rerun);
  },
);

controlPlaneTest(
  "jobs: admit records several deliveries in one write as markPending and offer would, one by one",
  async (a, reopen) => {
    const b = await reopen();
    const ready = { status: "ready" as const, error: null, rows: 1, result: {}, version: 1 };
    // "done" has its object's result saved; "again" is pending for its object; "newer" has a
    // result of an older object; "old" holds a result a re-run upgrades; "fresh" has no row.
    for (const [experiment, etag] of [["done", "d1"], ["newer", "n1"], ["old", "o1"]]) {
      await a.analyses.markPending("org_a", experiment, etag, 100, "2026-03-05T10:00:00.000Z");
      await a.analyses.saveResult("org_a", experiment, etag, ready, "2026-03-05T10:00:01.000Z");
    }
    await a.analyses.markPending("org_a", "again", "a1", 100, "2026-03-05T10:00:00.000Z");
    await b.jobs.admit([
      offer("done", "d1", { source: "scan" }),
      offer("again", "a1", { source: "event" }),
      offer("newer", "n2"),
      offer("old", "o1", { source: "upgrade" }),
      offer("fresh", "f1", { sha256: "abc", hasDimensions: false }),
    ]);
    const status = async (experiment: string) => {
      const row = await a.analyses.get("org_a", experiment);
      return `${row?.etag}:${row?.status}`;
    };
    assertEquals(
      await Promise.all(["done", "again", "newer", "old", "fresh"].map(status)),
      ["d1:ready", "a1:pending", "n2:pending", "o1:ready", "f1:pending"],
    );
    const jobs = await a.jobs.claim("A", 60, 10, [], {});
    assertEquals(
      jobs.map((j) => `${j.experimentId}:${j.etag}:${j.source}`).sort(),
      ["again:a1:event", "fresh:f1:upload", "newer:n2:upload", "old:o1:upgrade"],
    );
    assertEquals(jobs.find((j) => j.experimentId === "fresh")?.sha256, "abc");
    // What the upload's checks found travels with the job; unknown stays unknown.
    assertEquals(jobs.find((j) => j.experimentId === "fresh")?.hasDimensions, false);
    assertEquals(jobs.find((j) => j.experimentId === "again")?.hasDimensions, undefined);
    for (const job of jobs) await a.jobs.complete("A", job);
    // A settings change re-runs a saved result: pending again, one more job.
    await b.jobs.admit([offer("done", "d1", { source: "settings" })]);
    assertEquals(await status("done"), "d1:pending");
    const [rerun] = await a.jobs.claim("A", 60, 10, [], {});
    assertEquals([rerun.experimentId, rerun.source], ["done", "settings"]);
    // Nothing to admit writes nothing.
    await b.jobs.admit([]);
  },
);
