/**
 * Two service instances on one S3 bucket (s3rver) and one PostgreSQL database, as behind a load
 * balancer: keys, deactivations, settings, the dataset catalog, history and list pages are shared, and
 * the timer's reconciliation and grant scan run on one instance at a time; every delivery is analysed
 * exactly once, wherever it arrived and however it was noticed (upload, storage event, scan,
 * polls); an instance killed mid-analysis loses its lease and the other finishes the job; a
 * database outage answers 503 and loses nothing.
 */
import { assert, assertEquals, eventually } from "../_assert.ts";
import { runMain, spawnServer } from "../_server.ts";
import type { ChildServer } from "../_server.ts";
import { startS3rver } from "../_s3rver.ts";
import { startFaultProxy } from "../_faults.ts";
import { postgresTest, startCluster, withDatabase } from "../_postgres.ts";
import { openPostgres } from "../../src/db/postgres/postgres_control_plane.ts";
import { ANALYSIS_VERSION } from "../../src/analysis/report.ts";
import { growingCsv } from "./_growing_csv.ts";
import {
  analysisOf,
  analysisRuns,
  csvBytes,
  type Instance,
  sharedEnv,
  startInstances,
  upload,
  waitUntil,
} from "./_scale_out.ts";

/** Two in-process instances on a fresh bucket and a fresh database, for the test body. */
function pairTest(
  name: string,
  fn: (a: Instance, b: Instance, env: Record<string, string>) => Promise<void>,
  extraEnv: Record<string, string> = {},
): void {
  postgresTest(name, () =>
    withDatabase(async (database) => {
      const s3 = await startS3rver();
      const env = { ...sharedEnv(s3, database.url), ...extraEnv };
      try {
        const [a, b] = await startInstances(["A", "B"], env);
        try {
          await fn(a, b, env);
        } finally {
          await a.close();
          await b.close();
        }
      } finally {
        await s3.stop();
      }
    }));
}

async function status(url: string, apiKey: string): Promise<number> {
  const res = await fetch(`${url}/api/v1/keys/`, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
  await res.body?.cancel();
  return res.status;
}

pairTest(
  "a key made through one instance's admin works on the other; revocation and deactivation reach both within a second",
  async (a, b, env) => {
    const cli = { ...env, ABN_DATA_DIR: a.dataDir };
    const org = JSON.parse(
      (await runMain(["admin", "org", "create", "acme", "--json"], cli)).stdout,
    );
    const made = await runMain(["admin", "key", "create", org.org_id, "--json"], cli);
    assertEquals(made.code, 0, made.stderr);
    const { api_key, key_id } = JSON.parse(made.stdout);
    const spare = JSON.parse(
      (await runMain(["admin", "key", "create", org.org_id, "--json"], cli)).stdout,
    ).api_key;
    assertEquals(await status(a.url, api_key), 200);
    assertEquals(await status(b.url, api_key), 200);

    assertEquals((await runMain(["admin", "key", "revoke", key_id], cli)).code, 0);
    const revoked = await Promise.all(
      [a, b].map((i) => eventually(() => status(i.url, api_key), 401, 1000)),
    );
    assert(revoked.every((ms) => ms <= 1000), `revocation seen after ${revoked} ms`);
    assertEquals(await status(b.url, spare), 200);

    assertEquals((await runMain(["admin", "org", "deactivate", org.org_id], cli)).code, 0);
    const deactivated = await Promise.all(
      [a, b].map((i) => eventually(() => status(i.url, spare), 403, 1000)),
    );
    assert(deactivated.every((ms) => ms <= 1000), `deactivation seen after ${deactivated} ms`);
  },
);

pairTest(
  "40 deliveries spread over both instances are each analysed exactly once",
  async (a, b) => {
    // One organization, made through A, used on both.
    const key = a.apiKey;
    const ids = Array.from({ length: 40 }, (_, i) => `exp-${String(i).padStart(2, "0")}`);
    const etags = new Map<string, string>();
    let next = 0;
    const worker = async () => {
      while (next < ids.length) {
        const i = next++;
        const [here, there] = i % 2 === 0 ? [a, b] : [b, a];
        const body = await csvBytes(i);
        if (i % 4 === 3) {
          // Two-step: the PUT goes to the bucket; the other instance hears of it by an event.
          const g = await (await fetch(`${here.api}/datasets/initiate/`, {
            method: "POST",
            headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
            body: JSON.stringify({ experiment_id: ids[i] }),
          })).json();
          const put = await fetch(g.upload_url, {
            method: "PUT",
            headers: { "content-type": "text/csv" },
            body,
          });
          assertEquals(put.status, 200, await put.text());
          const event = await fetch(`${there.api}/storage-events/`, {
            method: "POST",
            headers: {
              authorization: "Bearer events-token-0123456789abcdef",
              "content-type": "application/json",
            },
            body: JSON.stringify({ Records: [{ s3: { object: { key: g.key } } }] }),
          });
          assertEquals(event.status, 200, await event.text());
          etags.set(ids[i], JSON.parse(put.headers.get("etag") ?? '""'));
        } else {
          const res = await upload(here.api, key, ids[i], body);
          assertEquals(res.status, 201, JSON.stringify(res.body));
          etags.set(ids[i], res.body.etag as string);
        }
        // Polls on both instances while it is pending join the run instead of adding one.
        await analysisOf(there.api, key, ids[i]);
        await analysisOf(here.api, key, ids[i]);
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
    for (const [i, id] of ids.entries()) {
      const viewer = i % 2 === 0 ? b : a;
      await waitUntil(async () => {
        const r = await analysisOf(viewer.api, key, id);
        return r.status === "ready" && r.etag === etags.get(id);
      }, `the analysis of ${id}`);
    }
    // Scans (every second, on one instance at a time) and polls had time to add a stray run.
    await new Promise((r) => setTimeout(r, 2500));
    await a.service.analysis.whenIdle();
    await b.service.analysis.whenIdle();
    const runs = analysisRuns([a, b]);
    const perExperiment = new Map<string, number>();
    for (const run of runs) {
      perExperiment.set(run.experiment_id, (perExperiment.get(run.experiment_id) ?? 0) + 1);
    }
    assertEquals([...perExperiment.keys()].sort(), ids);
    assertEquals([...perExperiment.values()].filter((n) => n !== 1), [], JSON.stringify(runs));
    assertEquals(runs.length, 40);
    // Which instance ran each is not fixed: these files are small, and an instance holds small
    // analyses back while its own uploads stream, so the less busy one (here often B, which
    // receives fewer uploads) takes most or all of them.
    for (const run of runs) assertEquals(run.etag, etags.get(run.experiment_id));
  },
  { ABN_SCAN_INTERVAL_SECONDS: "1", ABN_STORAGE_EVENTS_TOKEN: "events-token-0123456789abcdef" },
);

pairTest(
  "settings saved on one instance are used by the other; a list page from one continues on the other",
  async (a, b) => {
    const key = a.apiKey;
    const saved = await fetch(`${a.api}/datasets/checkout/settings/`, {
      method: "PUT",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ control: "B", mde: 0.1 }),
    });
    assertEquals(saved.status, 200, await saved.text());
    const stored = await upload(b.api, key, "checkout", await csvBytes(1));
    assertEquals(stored.status, 201);
    const ready = await waitUntil(async () => {
      const r = await analysisOf(a.api, key, "checkout");
      return r.status === "ready" && r;
    }, "the analysis");
    assertEquals(ready.control, "B");
    const read = await (await fetch(`${b.api}/datasets/checkout/settings/`, {
      headers: { authorization: `Bearer ${key}` },
    })).json();
    assertEquals(read, { control: "B", mde: 0.1 });

    // A settings change through B re-runs the analysis; A shows the new control.
    const changed = await fetch(`${b.api}/datasets/checkout/settings/`, {
      method: "PUT",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ control: "A" }),
    });
    assertEquals(changed.status, 200, await changed.text());
    await waitUntil(async () => {
      const r = await analysisOf(a.api, key, "checkout");
      return r.status === "ready" && r.control === "A";
    }, "the re-run with the new control");

    // Cursors are sealed with the shared secret: a page issued by A continues on B.
    for (const id of ["list-a", "list-b"]) {
      assertEquals((await upload(a.api, key, id, await csvBytes(2))).status, 201);
    }
    const first = await (await fetch(`${a.api}/datasets/?limit=1`, {
      headers: { authorization: `Bearer ${key}` },
    })).json();
    assertEquals(first.datasets.map((d: { experiment_id: string }) => d.experiment_id), [
      "checkout",
    ]);
    assert(typeof first.next_cursor === "string");
    const second = await fetch(
      `${b.api}/datasets/?limit=2&cursor=${encodeURIComponent(first.next_cursor)}`,
      { headers: { authorization: `Bearer ${key}` } },
    );
    const page = await second.json();
    assertEquals(second.status, 200, JSON.stringify(page));
    assertEquals(page.datasets.map((d: { experiment_id: string }) => d.experiment_id), [
      "list-a",
      "list-b",
    ]);
  },
);

pairTest(
  "the catalog is shared: a delivery through one instance is listed by the other from it; reconciliation and the grant scan run on one instance at a time",
  async (a, b, env) => {
    const key = a.apiKey;
    const headers = { authorization: `Bearer ${key}` };
    const list = async (i: Instance) =>
      (await (await fetch(`${i.api}/datasets/`, { headers })).json()).datasets.map((
        d: { experiment_id: string; etag: string; analysis_status: string },
      ) => [d.experiment_id, d.etag, d.analysis_status]);
    // Each instance's list reads the catalog once a reconciliation of its own finished; the
    // instance that found the other's lock held tries again a second later.
    await waitUntil(
      () => Promise.resolve(a.service.catalog.ready && b.service.catalog.ready),
      "both instances' first reconciliation",
      15_000,
    );
    const stored = await upload(a.api, key, "shared", await csvBytes(3));
    assertEquals(stored.status, 201);
    const etag = stored.body.etag as string;
    await waitUntil(
      async () => (await analysisOf(b.api, key, "shared")).status === "ready",
      "the analysis",
    );
    assertEquals(await list(b), [["shared", etag, "ready"]]);
    // From the catalog, not from storage: an object deleted behind the service's back stays
    // listed by both until a reconciliation.
    await a.service.store.delete(`org/${a.orgId}/experiments/shared/latest.csv`);
    assertEquals(await list(b), [["shared", etag, "ready"]]);

    // A third holder of the database's timer locks stands in for an instance at work.
    const holder = await openPostgres(env.ABN_DATABASE_URL);
    const hold = async (name: string) => {
      let release = () => {};
      let held = () => {};
      const taken = new Promise<void>((r) => held = r);
      const done = holder.withTimerLock(name, () => {
        held();
        return new Promise<void>((r) => release = r);
      });
      await taken;
      return async () => {
        release();
        await done;
      };
    };
    try {
      // Reconciliation while another holds its lock: nothing changes; once released, one run
      // through B repairs the catalog both read.
      const releaseReconcile = await hold("reconcile");
      assertEquals(await b.service.jobs.reconcile.runOnce(), true);
      assertEquals(await list(a), [["shared", etag, "ready"]]);
      await releaseReconcile();
      assertEquals(await b.service.jobs.reconcile.runOnce(), true);
      assertEquals(await list(a), []);
      assertEquals(await list(b), []);

      // The grant scan (every second here) while another holds its lock: a two-step PUT with
      // no event stays unnoticed; released, one scan notices it, once.
      const releaseScan = await hold("scan");
      const g = await (await fetch(`${b.api}/datasets/initiate/`, {
        method: "POST",
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify({ experiment_id: "two-step" }),
      })).json();
      const put = await fetch(g.upload_url, {
        method: "PUT",
        headers: { "content-type": "text/csv" },
        body: await csvBytes(4),
      });
      assertEquals(put.status, 200, await put.text());
      await new Promise((r) => setTimeout(r, 2500));
      assertEquals(await a.service.db.datasets.get(a.orgId, "two-step"), null);
      await releaseScan();
      const row = await waitUntil(
        () => a.service.db.datasets.get(a.orgId, "two-step"),
        "the scan to notice the PUT",
        10_000,
      );
      assertEquals(row.etag, JSON.parse(put.headers.get("etag") ?? '""'));
      // Log lines are written in batches: wait for the scan's, then for any later scan's.
      const noticed = () =>
        [a, b].flatMap((i) =>
          i.lines().filter((l) => l.msg === "timer scan").map((l) => Number(l.noticed ?? 0))
        ).reduce((x, y) => x + y, 0);
      await waitUntil(() => Promise.resolve(noticed() > 0), "the scan's log line", 5_000, 20);
      await new Promise((r) => setTimeout(r, 1500));
      assertEquals(noticed(), 1);
    } finally {
      await holder.close();
    }
  },
  { ABN_SCAN_INTERVAL_SECONDS: "1" },
);

pairTest(
  "history is shared: deliveries through either instance make one history, each compared with the one before",
  async (a, b) => {
    const key = a.apiKey;
    const headers = { authorization: `Bearer ${key}` };
    const analysis = async (i: Instance, etag: string) =>
      await waitUntil(async () => {
        const res = await fetch(`${i.api}/datasets/nightly/analysis/`, { headers });
        const body = res.status === 200 ? await res.json() : await res.body?.cancel();
        return body?.status === "ready" && body.dataset?.etag === etag && body;
      }, `the analysis of ${etag}`);
    const texts = [{ days: 8 }, { days: 9, switched: true }].map(growingCsv);
    const etags: string[] = [];
    const bodies = [];
    for (const [n, text] of texts.entries()) {
      // Night 1 through A, night 2 through B; each read back on the other instance.
      const [here, there] = n === 0 ? [a, b] : [b, a];
      const res = await upload(here.api, key, "nightly", new TextEncoder().encode(text));
      assertEquals(res.status, 201, JSON.stringify(res.body));
      etags.push(res.body.etag as string);
      bodies.push(await analysis(there, etags[n]));
    }
    assertEquals(bodies[0].changes, null);
    assertEquals(bodies[0].analysis_version, ANALYSIS_VERSION);
    assertEquals(
      [bodies[1].changes.previous_etag, bodies[1].changes.users_added],
      [etags[0], 120],
    );
    assertEquals(bodies[1].changes.users_switched_variant, 1);
    for (const i of [a, b]) {
      const history = await (await fetch(`${i.api}/datasets/nightly/history/`, { headers }))
        .json();
      assertEquals(history.snapshots.map((s: { etag: string }) => s.etag), etags);
      assertEquals(history.snapshots[1].changes, bodies[1].changes);
    }
  },
);

postgresTest(
  "SIGKILL of the instance holding an analysis: the other completes it once its lease ran out",
  () =>
    withDatabase(async (database) => {
      const s3 = await startS3rver();
      const s3Port = Number(new URL(s3.endpoint).port);
      // Each instance reads the bucket through a proxy that can be slowed down.
      const proxies = [startFaultProxy(s3Port), startFaultProxy(s3Port)];
      const children: ChildServer[] = [];
      const dataDirs: string[] = [];
      try {
        for (const proxy of proxies) {
          dataDirs.push(await Deno.makeTempDir({ prefix: "abn-kill-" }));
          children.push(
            await spawnServer({
              ...sharedEnv(s3, database.url, proxy.endpoint),
              ABN_DATA_DIR: dataDirs.at(-1)!,
              ABN_ANALYSIS_LEASE_SECONDS: "2",
            }),
          );
        }
        const cli = { ABN_DATABASE_URL: database.url, ABN_DATA_DIR: "/nonexistent" };
        const org = JSON.parse(
          (await runMain(["admin", "org", "create", "k", "--json"], cli)).stdout,
        );
        const { api_key } = JSON.parse(
          (await runMain(["admin", "key", "create", org.org_id, "--json"], cli)).stdout,
        );
        // About 1 MB, read back at 128 KB/s: an analysis of several seconds on either instance.
        const body = await csvBytes(3, 25_000);
        for (const proxy of proxies) proxy.downBytesPerSecond = 128 * 1024;
        const stored = await upload(`${children[0].url}/api/v1`, api_key, "slow", body);
        assertEquals(stored.status, 201, JSON.stringify(stored.body));

        const pids = children.map((c) => c.process.pid);
        const holder = await waitUntil(
          async () => {
            const rows = await database.query<{ lease_owner: string | null }>(
              "SELECT lease_owner FROM analysis_jobs",
            );
            const owner = rows[0]?.lease_owner;
            return owner ? pids.findIndex((pid) => owner.includes(`/${pid}/`)) + 1 : null;
          },
          "an instance to claim the job",
          10_000,
          20,
        );
        const victim = children[holder - 1];
        const survivor = children[2 - holder];
        await victim.stop("SIGKILL");
        const killedAt = Date.now();
        for (const proxy of proxies) proxy.downBytesPerSecond = null;

        const ready = await waitUntil(
          async () => {
            const r = await analysisOf(`${survivor.url}/api/v1`, api_key, "slow");
            return r.status === "ready" && r;
          },
          "the survivor to finish the analysis",
          30_000,
        );
        assertEquals(ready.etag, stored.body.etag);
        // The saved run started after the kill, once the victim's lease (renewed every 2/3 s)
        // had run out; the survivor logged it (log lines are written in batches: wait for it).
        const [row] = await database.query<{ started_at: Date }>(
          "SELECT started_at FROM analyses WHERE experiment_id = 'slow'",
        );
        const waited = row.started_at.getTime() - killedAt;
        assert(waited >= 1000, `the saved run started ${waited} ms after the kill`);
        const finished = (c: ChildServer) =>
          c.output().split("\n").filter((l) => l.includes('"msg":"analysis finished"'));
        await waitUntil(
          () => Promise.resolve(finished(survivor).length > 0),
          "the survivor's log line",
          5_000,
        );
        assertEquals(finished(survivor).length, 1, survivor.output());
        assertEquals(finished(victim), [], "the killed instance never finished it");
        assertEquals(await database.query("SELECT * FROM analysis_jobs"), [], "no job left");
      } finally {
        for (const child of children) await child.stop().catch(() => {});
        for (const proxy of proxies) await proxy.close();
        await s3.stop();
        for (const dir of dataDirs) await Deno.remove(dir, { recursive: true }).catch(() => {});
      }
    }),
);

postgresTest(
  "the database stopped and started mid-traffic: 503 with Retry-After, then recovery by itself, nothing lost",
  async () => {
    const cluster = await startCluster();
    const s3 = await startS3rver();
    let instances: Instance[] = [];
    try {
      const database = await cluster.database();
      instances = await startInstances(["A", "B"], {
        ...sharedEnv(s3, database.url),
        ABN_SCAN_INTERVAL_SECONDS: "1",
      });
      const key = instances[0].apiKey;
      type Phase = "before" | "outage" | "after";
      let phase: Phase = "before";
      // Per phase: HTTP statuses, and `network` for a connection reset while the body was sent
      // (a 503 answered before the body was read; the upload client retries those too).
      const seen: Record<Phase, Record<string, number>> = { before: {}, outage: {}, after: {} };
      const count = (at: Phase, what: string) => seen[at][what] = (seen[at][what] ?? 0) + 1;
      const lastStored = new Map<string, string>(); // experiment → sha256 of its last 201
      let retryAfterMissing = 0;
      let stop = false;
      const traffic = async (worker: number) => {
        for (let n = 0; !stop; n++) {
          const instance = instances[(worker + n) % 2];
          const id = `exp-${worker}-${n % 3}`;
          const at = phase;
          const body = await csvBytes(worker * 1000 + n);
          const res = await upload(instance.api, key, id, body).catch(() => null);
          count(at, res ? String(res.status) : "network");
          if (res?.status === 201) lastStored.set(id, res.body.sha256 as string);
          if (res?.status === 503 && res.retryAfter === null) retryAfterMissing++;
          await new Promise((r) => setTimeout(r, 20));
        }
      };
      const workers = [0, 1, 2].map(traffic);
      await new Promise((r) => setTimeout(r, 1500));
      phase = "outage";
      await cluster.stop();
      await new Promise((r) => setTimeout(r, 2500));
      const health = await Promise.all(instances.map((i) => fetch(`${i.url}/healthz`)));
      for (const h of health) await h.body?.cancel();
      assertEquals(health.map((h) => h.status), [503, 503]);
      await cluster.start();
      phase = "after";
      const restarted = Date.now();
      // Service comes back by itself: uploads answer 201 again soon after the server does.
      const recovered = await waitUntil(
        () => Promise.resolve((seen.after["201"] ?? 0) > 0 && Date.now() - restarted),
        "uploads to succeed again",
        10_000,
        20,
      );
      await new Promise((r) => setTimeout(r, 1500));
      stop = true;
      await Promise.all(workers);

      const story = JSON.stringify(seen);
      assert((seen.before["201"] ?? 0) > 0, story);
      assert((seen.outage["503"] ?? 0) > 0, `503s during the outage: ${story}`);
      assertEquals(retryAfterMissing, 0);
      const unexpected = (at: Phase, allowed: string[]) =>
        Object.keys(seen[at]).filter((s) => !allowed.includes(s));
      assertEquals(unexpected("before", ["201"]), [], story);
      assertEquals(unexpected("outage", ["201", "503", "network"]), [], story);
      assertEquals(unexpected("after", ["201", "503", "network"]), [], story);
      assert(recovered < 6000, `recovered ${recovered} ms after the restart; ${story}`);
      // Every delivery answered 201 is stored, and its analysis catches up on its own.
      for (const [id, sha] of lastStored) {
        const file = await fetch(`${instances[1].api}/datasets/${id}/file/`, {
          headers: { authorization: `Bearer ${key}` },
        });
        const bytes = new Uint8Array(await file.arrayBuffer());
        const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
        assertEquals([...digest].map((b) => b.toString(16).padStart(2, "0")).join(""), sha, id);
        await waitUntil(
          async () => {
            const r = await analysisOf(instances[0].api, key, id);
            return r.status === "ready";
          },
          `the analysis of ${id} after the outage`,
          20_000,
        ).catch((error) => {
          const lines = instances.flatMap((i) =>
            i.lines().filter((l) => l.msg !== "request" && l.msg !== "database unavailable")
              .map((l) => `${i.name} ${JSON.stringify(l)}`)
          );
          throw new Error(`${error.message}; ${story}\n${lines.join("\n")}`);
        });
      }
      const healthy = await Promise.all(instances.map((i) => fetch(`${i.url}/healthz`)));
      for (const h of healthy) await h.body?.cancel();
      assertEquals(healthy.map((h) => h.status), [200, 200]);
    } finally {
      for (const i of instances) await i.close();
      await s3.stop();
      await cluster.destroy();
    }
  },
);
