/**
 * The dataset catalog against storage, over real HTTP on both drivers: it follows every delivery
 * the service makes, reconciliation repairs what happened behind the service's back, the list
 * pages stably while deliveries arrive, and it reads storage until the first reconciliation.
 */
import { assert, assertEquals } from "../_assert.ts";
import { deliverTwoStep, driverTest } from "../_drivers.ts";
import type { DriverServer } from "../_drivers.ts";
import { startTestServer } from "../_server.ts";
import { waitFor } from "../_faults.ts";
import { LocalStore } from "../../src/storage/local_store.ts";
import type { ListOptions, ListPage } from "../../src/storage/object_store.ts";
import { StorageError } from "../../src/storage/object_store.ts";
import { UrlSigner } from "../../src/crypto/url_signer.ts";
import { loadOrCreateSecret } from "../../src/crypto/secret_file.ts";

const VALID = await Deno.readFile(new URL("../testdata/small.csv", import.meta.url));
const enc = new TextEncoder();

function csv(tag: string): Uint8Array<ArrayBuffer> {
  return enc.encode(
    `user_id,variant,date,m\nu1,A,2026-01-01,1\nu2,B,2026-01-01,0\n${tag},A,2026-01-02,1\n`,
  );
}

function api(server: DriverServer, path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${server.apiKey}`);
  return fetch(`${server.api}${path}`, { ...init, headers });
}

async function upload(server: DriverServer, id: string, body: Uint8Array<ArrayBuffer>) {
  const res = await api(server, `/datasets/upload/?experiment_id=${id}`, {
    method: "POST",
    headers: { "content-type": "text/csv" },
    body,
  });
  assertEquals(res.status, 201, await res.text());
}

interface Listed {
  experiment_id: string;
  etag: string;
  size_bytes: number;
  analysis_status: string;
}

async function listAll(server: DriverServer, limit = 1000): Promise<Listed[]> {
  const all: Listed[] = [];
  let cursor: string | null = null;
  do {
    const query: string = `?limit=${limit}${cursor ? `&cursor=${cursor}` : ""}`;
    const res = await api(server, `/datasets/${query}`);
    const page = await res.json();
    assertEquals(res.status, 200, JSON.stringify(page));
    all.push(...page.datasets);
    cursor = page.next_cursor;
  } while (cursor);
  return all;
}

/** What storage holds for the org, as `id → etag:size`. */
async function storageState(server: DriverServer): Promise<Record<string, string>> {
  const state: Record<string, string> = {};
  const page = await server.service.store.list(`org/${server.orgId}/experiments/`);
  for (const o of page.objects) state[o.key.split("/")[3]] = `${o.etag}:${o.size}`;
  return state;
}

/**
 * The list and then the catalog rows match what storage holds (on S3 a two-step PUT is recorded
 * when something looks at its open grant: the list does, the timer's scan does).
 */
async function assertCatalogMatchesStorage(server: DriverServer): Promise<void> {
  const expected = await storageState(server);
  const listed = Object.fromEntries(
    (await listAll(server)).map((d) => [d.experiment_id, `${d.etag}:${d.size_bytes}`]),
  );
  assertEquals(listed, expected, "the list");
  const rows = await server.service.db.datasets.page(server.orgId, { limit: 1000 });
  const catalog = Object.fromEntries(
    rows.map((r) => [r.experiment_id, `${r.etag}:${r.size_bytes}`]),
  );
  assertEquals(catalog, expected, "catalog rows");
}

async function allAnalysed(server: DriverServer): Promise<void> {
  await waitFor(
    async () => (await listAll(server)).every((d) => d.analysis_status === "ready"),
    "every listed dataset analysed",
  );
}

driverTest(
  "the catalog follows direct uploads, two-step PUTs, re-deliveries and deletes",
  async (server) => {
    await waitFor(() => server.service.catalog.ready, "the start-up reconciliation");
    await upload(server, "a", csv("a1"));
    await upload(server, "b", csv("b1"));
    await deliverTwoStep(server, "c", csv("c1"));
    await deliverTwoStep(server, "d", csv("d1"));
    await assertCatalogMatchesStorage(server);
    await upload(server, "a", csv("a2")); // re-delivery, direct
    await deliverTwoStep(server, "b", csv("b2")); // re-delivery of a direct upload, two-step
    await upload(server, "d", csv("d2"));
    const del = await api(server, "/datasets/c/", { method: "DELETE" });
    assertEquals(del.status, 200, await del.text());
    await assertCatalogMatchesStorage(server);
    assertEquals((await listAll(server)).map((d) => d.experiment_id), ["a", "b", "d"]);
    await allAnalysed(server);
    // The statuses in the list are those of the stored objects' analyses.
    for (const d of await listAll(server)) {
      const analysis = await (await api(server, `/datasets/${d.experiment_id}/analysis/`)).json();
      assertEquals([analysis.status, analysis.dataset.etag], ["ready", d.etag]);
    }
  },
  { ABN_SCAN_INTERVAL_SECONDS: "1" },
);

driverTest(
  "reconciliation finds an object written straight into storage and forgets one deleted behind the service's back",
  async (server) => {
    await waitFor(() => server.service.catalog.ready, "the start-up reconciliation");
    await upload(server, "known", VALID);
    const store = server.service.store;
    const writer = await store.createWriter(`org/${server.orgId}/experiments/outside/latest.csv`);
    await writer.write(csv("o"));
    await writer.commit();
    // The catalog does not know it yet: the list reads the catalog only.
    assertEquals((await listAll(server)).map((d) => d.experiment_id), ["known"]);
    await server.service.jobs.reconcile.runOnce();
    assertEquals((await listAll(server)).map((d) => d.experiment_id), ["known", "outside"]);
    await allAnalysed(server); // reconciliation delivered it to the analysis too
    await store.delete(`org/${server.orgId}/experiments/known/latest.csv`);
    await server.service.jobs.reconcile.runOnce();
    assertEquals((await listAll(server)).map((d) => d.experiment_id), ["outside"]);
    await assertCatalogMatchesStorage(server);
  },
);

driverTest(
  "a dataset the catalog does not know yet is found by one head: 200 pending, never 404",
  async (server) => {
    await waitFor(() => server.service.catalog.ready, "the start-up reconciliation");
    const writer = await server.service.store.createWriter(
      `org/${server.orgId}/experiments/unseen/latest.csv`,
    );
    await writer.write(VALID);
    await writer.commit();
    const res = await api(server, "/datasets/unseen/");
    const body = await res.json();
    assertEquals(res.status, 200, JSON.stringify(body));
    assert(["pending", "ready"].includes(body.analysis_status), body.analysis_status);
    // The head delivered it: recorded in the catalog and analysed.
    assertEquals((await listAll(server)).map((d) => d.experiment_id), ["unseen"]);
    await allAnalysed(server);
    const missing = await api(server, "/datasets/never/");
    assertEquals(missing.status, 404);
    await missing.body?.cancel();
  },
);

driverTest("the list pages stably while deliveries arrive", async (server) => {
  await waitFor(() => server.service.catalog.ready, "the start-up reconciliation");
  const before = Array.from({ length: 24 }, (_, i) => `e${String(i).padStart(2, "0")}`);
  for (const id of before) await upload(server, id, csv(id));
  const seen: string[] = [];
  let cursor: string | null = null;
  let round = 0;
  do {
    const query: string = `?limit=5${cursor ? `&cursor=${cursor}` : ""}`;
    const page = await (await api(server, `/datasets/${query}`)).json();
    seen.push(...page.datasets.map((d: Listed) => d.experiment_id));
    cursor = page.next_cursor;
    // Between pages: new experiments before, among and after the ones listed, and re-deliveries.
    round++;
    await Promise.all([
      upload(server, `a-${round}`, csv("x")),
      upload(server, `e0${round}x`, csv("x")),
      upload(server, `z-${round}`, csv("x")),
      upload(server, before[(round * 7) % before.length], csv(`r${round}`)),
    ]);
  } while (cursor);
  // Strictly increasing: nothing twice, nothing out of order; every earlier dataset listed.
  for (let i = 1; i < seen.length; i++) assert(seen[i - 1] < seen[i], `${seen[i - 1]} ${seen[i]}`);
  for (const id of before) assert(seen.includes(id), `${id} missing`);
});

/** A local store whose first listing waits for `release` (the start-up reconciliation). */
class GatedStore extends LocalStore {
  #gate: Promise<void> | null;
  release!: () => void;

  constructor(options: ConstructorParameters<typeof LocalStore>[0]) {
    super(options);
    this.#gate = new Promise((resolve) => this.release = resolve);
  }

  override async list(prefix: string, options?: ListOptions): Promise<ListPage> {
    const gate = this.#gate;
    this.#gate = null;
    if (gate) await gate;
    return await super.list(prefix, options);
  }
}

Deno.test("until the first reconciliation has finished, the list reads storage", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "abn-catalog-fallback-" });
  const { freePort } = await import("../_server.ts");
  const port = freePort();
  const signer = new UrlSigner(await loadOrCreateSecret(`${dataDir}/secrets/url-signing.key`));
  const store = new GatedStore({ dataDir, signer, publicUrl: `http://127.0.0.1:${port}` });
  const server = await startTestServer({}, { port, dataDir, store });
  try {
    // Written while the catalog cannot know it (its reconciliation is held).
    const writer = await store.createWriter(`org/${server.orgId}/experiments/early/latest.csv`);
    await writer.write(VALID);
    await writer.commit();
    assertEquals(server.service.catalog.ready, false);
    const listed = await (await fetch(`${server.api}/datasets/`, {
      headers: { authorization: `Bearer ${server.apiKey}` },
    })).json();
    assertEquals(listed.datasets.map((d: Listed) => d.experiment_id), ["early"]);
    assertEquals(listed.datasets[0].analysis_status, "pending");
    store.release();
    await waitFor(() => server.service.catalog.ready, "the start-up reconciliation");
    const rows = await server.service.db.datasets.page(server.orgId, { limit: 10 });
    assertEquals(rows.map((r) => r.experiment_id), ["early"]);
  } finally {
    store.release();
    await server.close();
  }
});

/** A local store whose first listing fails (storage unreachable at start-up). */
class FailingOnceStore extends LocalStore {
  #failed = false;

  override async list(prefix: string, options?: ListOptions): Promise<ListPage> {
    if (!this.#failed) {
      this.#failed = true;
      throw new StorageError("injected: storage unreachable");
    }
    return await super.list(prefix, options);
  }
}

Deno.test("a start-up reconciliation that fails is tried again at the scan's pace, not an hour later", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "abn-catalog-retry-" });
  const { freePort } = await import("../_server.ts");
  const port = freePort();
  const signer = new UrlSigner(await loadOrCreateSecret(`${dataDir}/secrets/url-signing.key`));
  const store = new FailingOnceStore({ dataDir, signer, publicUrl: `http://127.0.0.1:${port}` });
  const server = await startTestServer({ ABN_SCAN_INTERVAL_SECONDS: "1" }, {
    port,
    dataDir,
    store,
  });
  try {
    await waitFor(() => server.service.catalog.ready, "a second reconciliation", 5_000);
    const runs = server.service.metrics.timerRuns;
    assertEquals(runs.get({ job: "reconcile", outcome: "failed" }), 1);
    assertEquals(runs.get({ job: "reconcile", outcome: "ok" }), 1);
  } finally {
    await server.close();
  }
});
