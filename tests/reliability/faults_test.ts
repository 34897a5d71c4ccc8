/**
 * Faults: storage unreachable, cut mid-upload or failing on disk; clients that disconnect at
 * random points; the service killed mid-upload; the database busy or read-only; a timer run that
 * fails. In every case nothing is lost: the stored file is the previous one or the new one, never
 * a part, no temporary file outlives the request, and the service recovers by itself.
 */
import { DatabaseSync } from "node:sqlite";
import { assert, assertApiError, assertEquals, assertMatch } from "../_assert.ts";
import { type Driver, DRIVERS, DRIVERS_AND_RGW, startDriverServer } from "../_drivers.ts";
import type { DriverServer } from "../_drivers.ts";
import { spawnServer, sqliteOf } from "../_server.ts";
import { SqliteControlPlane } from "../../src/db/sqlite/sqlite_control_plane.ts";
import { rawExchange, startFaultProxy, tmpFiles, waitFor, writeAll } from "../_faults.ts";
import { startS3rver } from "../_s3rver.ts";
import type { FaultyServer } from "./_helpers.ts";
import {
  assertOnlyDatasetAndSoundDb,
  assertSameBytes,
  authed,
  cliOrgWithKey,
  disconnectTrials,
  pendingUploads,
  rawUploadHead,
  readJson,
  startFaultyServer,
  upload,
  VALID,
  validCsv,
} from "./_helpers.ts";

const enc = new TextEncoder();

async function storageError(res: Response): Promise<void> {
  const error = await assertApiError(res, 500, "storage_error");
  assertMatch(error.message, /retry/i);
}

/** Waits until the start-up reconciliation has finished (the list then reads the catalog). */
async function catalogReady(server: { service: { catalog: { ready: boolean } } }): Promise<void> {
  await waitFor(() => server.service.catalog.ready, "the start-up reconciliation");
}

/** The experiment ids the list answers, which must be 200 even with storage down. */
async function listed(server: FaultyServer | DriverServer): Promise<string[]> {
  const res = await authed(server, server.apiKey, "/datasets/");
  const { json } = await readJson(res);
  assertEquals(res.status, 200, JSON.stringify(json));
  return (json as { datasets: { experiment_id: string }[] }).datasets.map((d) => d.experiment_id);
}

async function healthy(url: string): Promise<void> {
  const res = await fetch(`${url}/healthz`);
  assertEquals(res.status, 200);
  await res.body?.cancel();
}

/**
 * Registers the test once per S3 peer: s3rver, and Ceph's gateway where it is installed (named
 * `test` so that the formatter keeps it flat, as it does `Deno.test`). On the gateway the tests
 * also see that no multipart upload is left over; s3rver cannot list them.
 */
function test(name: string, fn: (driver: Driver) => Promise<void>): void {
  for (const driver of DRIVERS_AND_RGW) {
    if (driver !== "local") Deno.test(`${name} (${driver})`, () => fn(driver));
  }
}

// ---------------------------------------------------------------------------------------------
// Storage faults

test("S3 unreachable: 500 storage_error with retry advice, nothing changed, then recovery", async (driver) => {
  const server = await startFaultyServer(driver);
  try {
    assertEquals((await upload(server, "exp", VALID)).status, 201);
    await catalogReady(server);
    server.proxy!.setMode("refuse");
    const next = validCsv(2_000, "n");
    await storageError(await upload(server, "exp", next));
    // The list and a dataset the catalog knows are read from the catalog; what needs storage
    // (an unknown dataset's head, the bytes, a delete) answers 500.
    assertEquals(await listed(server), ["exp"]);
    assertEquals((await authed(server, server.apiKey, "/datasets/exp/")).status, 200);
    await storageError(await authed(server, server.apiKey, "/datasets/other/"));
    await storageError(await authed(server, server.apiKey, "/datasets/exp/file/"));
    await storageError(await authed(server, server.apiKey, "/datasets/exp/", { method: "DELETE" }));
    await healthy(server.url);
    server.proxy!.setMode("pass");
    assertSameBytes(await server.stored(server.orgId, "exp"), VALID);
    assertEquals((await upload(server, "exp", next)).status, 201);
    assertSameBytes(await server.stored(server.orgId, "exp"), next);
  } finally {
    await server.close();
  }
});

Deno.test("S3 stopped: uploads answer 500 storage_error, the list reads the catalog, the service stays up", async () => {
  const server = await startDriverServer("s3");
  try {
    assertEquals((await upload(server, "exp", VALID)).status, 201);
    await catalogReady(server);
    await server.s3!.stop();
    await storageError(await upload(server, "exp", validCsv(1_000)));
    assertEquals(await listed(server), ["exp"]);
    await healthy(server.url);
  } finally {
    await server.close();
  }
});

test("S3 connection cut mid-upload (multipart): 500 storage_error, no partial object", async (driver) => {
  const server = await startFaultyServer(driver);
  try {
    assertEquals((await upload(server, "exp", VALID)).status, 201);
    // A connection may send 256 KiB: every 8 MiB part is cut mid-body, every retry too.
    server.proxy!.setMode("cut", 256 * 1024);
    const started = performance.now();
    await storageError(await upload(server, "exp", validCsv(12_000_000, "cut")));
    assert(performance.now() - started < 20_000, "the failure took too long");
    server.proxy!.setMode("pass");
    assert(server.proxy!.stats.cut >= 1, JSON.stringify(server.proxy!.stats));
    assertSameBytes(await server.stored(server.orgId, "exp"), VALID, "after a cut upload");
    assertEquals(await pendingUploads(server) ?? [], [], "multipart uploads left over");
    const next = validCsv(12_000_000, "ok");
    assertEquals((await upload(server, "exp", next)).status, 201);
    assertSameBytes(await server.stored(server.orgId, "exp"), next);
  } finally {
    await server.close();
  }
});

Deno.test("S3 accepting connections but never answering: uploads fail by the request deadline, the list answers", async () => {
  // The same store as production with a 1.5 s deadline instead of 60 s (the soak test keeps 60 s).
  const server = await startFaultyServer("s3", {}, { requestDeadlineMs: 1_500 });
  try {
    assertEquals((await upload(server, "exp", VALID)).status, 201);
    await catalogReady(server);
    server.proxy!.setMode("blackhole");
    for (const body of [validCsv(2_000), validCsv(12_000_000, "parts")]) {
      const started = performance.now();
      await storageError(await upload(server, "exp", body));
      const took = performance.now() - started;
      assert(took >= 1_400 && took < 15_000, `answered after ${took.toFixed(0)} ms`);
    }
    const started = performance.now();
    assertEquals(await listed(server), ["exp"]);
    assert(performance.now() - started < 1_000, "the list waited for storage");
    // A dataset the catalog does not know needs a head, which fails by the deadline.
    await storageError(await authed(server, server.apiKey, "/datasets/other/"));
    server.proxy!.setMode("pass");
    assertSameBytes(await server.stored(server.orgId, "exp"), VALID, "after the silent store");
    await healthy(server.url);
  } finally {
    await server.close();
  }
});

test("every write to S3 is a multipart part with Content-MD5, never a bare PutObject", async (driver) => {
  const server = await startFaultyServer(driver);
  try {
    server.proxy!.recordHeads = true;
    assertEquals((await upload(server, "small", validCsv(1_000_000, "one"))).status, 201);
    assertEquals((await upload(server, "big", validCsv(20_000_000, "parts"))).status, 201);
    server.proxy!.recordHeads = false;
    const puts = server.proxy!.heads.filter((h) => h.startsWith("PUT "));
    const lines = puts.map((h) => h.split("\r\n")[0]);
    const part = (name: string) =>
      puts.filter((h) => new RegExp(`^PUT \\S*/${name}/latest\\.csv\\?\\S*partNumber=`).test(h));
    const bare = puts.filter((h) => /^PUT \S*\/latest\.csv(?: |\?x-id=PutObject)/.test(h));
    assertEquals(bare.map((h) => h.split("\r\n")[0]), [], "a bare PutObject was sent");
    assertEquals(part("small").length, 1, `small: ${lines}`);
    assert(part("big").length >= 2, `no parts seen: ${lines}`);
    for (const head of [...part("small"), ...part("big")]) {
      assertMatch(head, /\r\ncontent-md5: [A-Za-z0-9+/]{22}==\r\n/i, head.split("\r\n")[0]);
    }
  } finally {
    await server.close();
  }
});

test("S3 connection cut mid-upload (a body under one part): 500 storage_error, no partial object", async (driver) => {
  // s3rver writes a PutObject body straight under its key and keeps it when the connection
  // breaks; a body stored as one multipart part is only visible after CompleteMultipartUpload.
  const server = await startFaultyServer(driver);
  try {
    assertEquals((await upload(server, "exp", VALID)).status, 201);
    server.proxy!.setMode("cut", 256 * 1024);
    await storageError(await upload(server, "exp", validCsv(1_000_000, "one")));
    server.proxy!.setMode("pass");
    assert(server.proxy!.stats.cut >= 1, JSON.stringify(server.proxy!.stats));
    assertSameBytes(await server.stored(server.orgId, "exp"), VALID, "after a cut upload");
    assertEquals(await pendingUploads(server) ?? [], [], "multipart uploads left over");
    const next = validCsv(1_000_000, "ok");
    assertEquals((await upload(server, "exp", next)).status, 201);
    assertSameBytes(await server.stored(server.orgId, "exp"), next);
  } finally {
    await server.close();
  }
});

Deno.test("local storage failing to open, to commit, or on the disk: 500 storage_error, nothing left behind", async () => {
  const server = await startFaultyServer("local");
  try {
    assertEquals((await upload(server, "exp", VALID)).status, 201);
    const big = validCsv(6_000_000, "w");
    for (const op of ["createWriter", "commit"] as const) {
      server.faulty.failNext(op);
      await storageError(await upload(server, "exp", big));
      assertEquals(server.faulty.pending(op), 0, `${op} was not reached`);
      assertSameBytes(await server.stored(server.orgId, "exp"), VALID, op);
      assertEquals(await tmpFiles(server.dataDir), [], op);
    }
    // A real disk fault: the folder of a new experiment cannot be created (a file is in the way).
    const experiments = `${server.dataDir}/storage/org/${server.orgId}/experiments`;
    await Deno.writeTextFile(`${experiments}/blocked`, "not a folder");
    await storageError(await upload(server, "blocked", VALID));
    assertEquals(await tmpFiles(server.dataDir), []);
    // The temporary folder itself is gone and a file stands in its place.
    await Deno.remove(`${server.dataDir}/tmp`, { recursive: true });
    await Deno.writeTextFile(`${server.dataDir}/tmp`, "not a folder");
    await storageError(await upload(server, "exp", big));
    assertSameBytes(await server.stored(server.orgId, "exp"), VALID);
    await Deno.remove(`${server.dataDir}/tmp`);
    await Deno.mkdir(`${server.dataDir}/tmp`);
    assertEquals((await upload(server, "exp", big)).status, 201);
    assertSameBytes(await server.stored(server.orgId, "exp"), big);
    await healthy(server.url);
  } finally {
    await server.close();
  }
});

Deno.test({
  name: "local storage failing on a batched write: 500 storage_error, nothing left behind",
  async fn() {
    const server = await startFaultyServer("local");
    try {
      assertEquals((await upload(server, "exp", VALID)).status, 201);
      server.faulty.failNext("write");
      // The client pauses after the first 4 MiB batch, so the failed write waits for a handler.
      const body = validCsv(6_000_000, "w");
      const paused = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(body.subarray(0, 4_500_000));
          await new Promise((r) => setTimeout(r, 300));
          controller.enqueue(body.subarray(4_500_000));
          controller.close();
        },
      });
      await storageError(await upload(server, "exp", paused));
      assertSameBytes(await server.stored(server.orgId, "exp"), VALID);
      assertEquals(await tmpFiles(server.dataDir), []);
    } finally {
      await server.close();
    }
  },
});

Deno.test({
  name: "S3 failing while a slow client is still sending: the service answers and stays up",
  async fn() {
    const s3 = await startS3rver();
    const proxy = startFaultProxy(Number(new URL(s3.endpoint).port));
    const dataDir = await Deno.makeTempDir({ prefix: "abn-s3-fail-" });
    const env = {
      ABN_DATA_DIR: dataDir,
      ABN_STORAGE: "s3",
      ABN_S3_ENDPOINT: proxy.endpoint,
      ABN_S3_REGION: s3.region,
      ABN_S3_BUCKET: s3.bucket,
      ABN_S3_ACCESS_KEY_ID: s3.accessKeyId,
      ABN_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
      ABN_BODY_IDLE_TIMEOUT_SECONDS: "3",
    };
    let server = null;
    try {
      const { apiKey: api_key } = await cliOrgWithKey(env);
      server = await spawnServer(env);
      const body = validCsv(12_000_000, "slow");
      proxy.setMode("cut", 256 * 1024);
      // 9 MB at once (one 8 MiB part goes to S3 and is cut), then the client goes quiet.
      const result = rawExchange(Number(new URL(server.url).port), async (conn) => {
        await writeAll(
          conn,
          enc.encode(
            `POST /api/v1/datasets/upload/?experiment_id=exp HTTP/1.1\r\nHost: x\r\n` +
              `Authorization: Bearer ${api_key}\r\nContent-Length: ${body.length}\r\n\r\n`,
          ),
        );
        await writeAll(conn, body.subarray(0, 9_000_000));
      }, 15_000);
      const answer = await result;
      // 500 when the failure is seen first, 408 when the idle timeout is.
      assert(answer.status === 500 || answer.status === 408, `${answer.status} ${answer.head}`);
      assertMatch(answer.body, /"code":"(storage_error|body_timeout)"/);
      await healthy(server.url);
    } finally {
      await server?.stop().catch(() => {});
      await proxy.close();
      await s3.stop();
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});

// ---------------------------------------------------------------------------------------------
// Clients that go away

for (const driver of DRIVERS_AND_RGW) {
  Deno.test(`clients disconnecting at 10 seeded random points leave the stored file and no temporaries (${driver})`, async () => {
    const lines: string[] = [];
    const server = await startDriverServer(driver, {}, { log: (line) => lines.push(line) });
    try {
      await disconnectTrials(server, lines, { trials: 10, seed: 4242 });
    } finally {
      await server.close();
    }
  });
}

Deno.test("clients disconnecting from 40 MB local uploads leave the stored file and no temporaries", async () => {
  const lines: string[] = [];
  const server = await startDriverServer("local", {}, { log: (line) => lines.push(line) });
  try {
    await disconnectTrials(server, lines, { trials: 6, seed: 77, bodyBytes: 40_000_000 });
  } finally {
    await server.close();
  }
});

Deno.test("a 40 MB local upload that stops mid-body is dropped with 408, the file unchanged", async () => {
  const server = await startDriverServer("local", { ABN_BODY_IDLE_TIMEOUT_SECONDS: "1" });
  try {
    assertEquals((await upload(server, "exp", VALID)).status, 201);
    const body = validCsv(40_000_000, "s");
    const conn = await rawUploadHead(server.url, server.apiKey, body.length);
    try {
      await writeAll(conn, body.subarray(0, 3_000_000));
      const started = performance.now();
      const answer = new Uint8Array(4096);
      const n = await conn.read(answer);
      const seconds = (performance.now() - started) / 1000;
      const text = new TextDecoder().decode(answer.subarray(0, n ?? 0));
      assertMatch(text, /^HTTP\/1\.1 408/);
      assertMatch(text, /"code":"body_timeout"/);
      assert(seconds >= 0.8 && seconds < 10, `dropped after ${seconds.toFixed(1)} s`);
    } finally {
      conn.close();
    }
    assertSameBytes(await server.stored(server.orgId, "exp"), VALID);
    await waitFor(async () => (await tmpFiles(server.dataDir)).length === 0, "no temporaries");
  } finally {
    await server.close();
  }
});

Deno.test("the service killed with SIGKILL mid-upload restarts with the previous file and sweeps temporaries", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "abn-sigkill-" });
  const env = { ABN_DATA_DIR: dataDir };
  let server = null;
  try {
    const { orgId, apiKey: api_key } = await cliOrgWithKey(env);
    server = await spawnServer(env);
    const first = await upload({ api: `${server.url}/api/v1`, apiKey: api_key }, "exp", VALID);
    assertEquals(first.status, 201);
    const body = validCsv(8_000_000, "k");
    const conn = await rawUploadHead(server.url, api_key, body.length);
    try {
      // Several batches, so the temporary file holds bytes when the process dies.
      await writeAll(conn, body.subarray(0, 6_000_000));
      const part = await waitFor(async () => {
        for (const name of await tmpFiles(dataDir)) {
          const info = await Deno.stat(`${dataDir}/tmp/${name}`).catch(() => null);
          if (info && info.size > 0) return name;
        }
        return null;
      }, "a temporary file with bytes");
      assert(part.endsWith(".part"), part);
      await server.stop("SIGKILL");
    } finally {
      try {
        conn.close();
      } catch { /* closed by the peer */ }
    }
    assert((await tmpFiles(dataDir)).length > 0, "the kill left no temporary behind to sweep");
    server = await spawnServer(env);
    assertEquals(await tmpFiles(dataDir), [], "temporaries were not swept at start-up");
    // The start-up log is batched: it follows the "listening" line within milliseconds.
    await waitFor(() => server!.output().includes("swept"), "the start-up sweep's log line");
    const stored = await Deno.readFile(
      `${dataDir}/storage/org/${orgId}/experiments/exp/latest.csv`,
    );
    assertSameBytes(stored, VALID);
    // Nothing else was written under storage/, and the database is sound.
    await assertOnlyDatasetAndSoundDb(dataDir, orgId);
    const again = await upload({ api: `${server.url}/api/v1`, apiKey: api_key }, "exp", body);
    assertEquals(again.status, 201, await again.text());
  } finally {
    await server?.stop().catch(() => {});
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("every 201 survives SIGKILL: the stored file and its catalog row", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "abn-sigkill-201-" });
  const env = { ABN_DATA_DIR: dataDir };
  let server = null;
  try {
    const { orgId, apiKey } = await cliOrgWithKey(env);
    server = await spawnServer(env);
    const body = (id: string) => enc.encode(`user_id,variant,date,m\n${id},A,2026-01-01,1\n`);
    // Eight clients deliver new experiments without a pause; the kill lands among them.
    const acknowledged = new Map<string, string>();
    let stopped = false;
    const client = async (w: number) => {
      for (let i = 0; !stopped; i++) {
        const id = `k${w}-${i}`;
        try {
          const res = await fetch(`${server!.url}/api/v1/datasets/upload/?experiment_id=${id}`, {
            method: "POST",
            headers: { authorization: `Bearer ${apiKey}`, "content-type": "text/csv" },
            body: body(id),
          });
          const text = await res.text();
          if (res.status === 201) acknowledged.set(id, JSON.parse(text).etag);
        } catch {
          return; // the connection died with the process
        }
      }
    };
    const clients = Array.from({ length: 8 }, (_, w) => client(w));
    await waitFor(() => acknowledged.size >= 40, "forty acknowledged uploads", 30_000);
    await server.stop("SIGKILL");
    stopped = true;
    await Promise.all(clients);
    server = null;
    const db = new SqliteControlPlane(`${dataDir}/abn.sqlite`);
    try {
      for (const [id, etag] of acknowledged) {
        const row = await db.datasets.get(orgId, id);
        assertEquals(row?.etag, etag, `the catalog row of ${id}`);
        const stored = await Deno.readFile(
          `${dataDir}/storage/org/${orgId}/experiments/${id}/latest.csv`,
        );
        assertSameBytes(stored, body(id), `the file of ${id}`);
      }
    } finally {
      await db.close();
    }
  } finally {
    await server?.stop().catch(() => {});
    await Deno.remove(dataDir, { recursive: true });
  }
});

// ---------------------------------------------------------------------------------------------
// Database faults

async function analysisStatus(server: FaultyServer, experimentId: string): Promise<string> {
  const res = await authed(server, server.apiKey, `/datasets/${experimentId}/`);
  const { json } = await readJson(res);
  return (json as { analysis_status: string }).analysis_status;
}

function integrity(path: string): string {
  const db = new DatabaseSync(path);
  try {
    return String(db.prepare("PRAGMA integrity_check").get()?.integrity_check);
  } finally {
    db.close();
  }
}

Deno.test("the database held busy by another connection: 503 JSON for writes, reads go on, no corruption", async () => {
  const server = await startFaultyServer("local", { ABN_SCAN_INTERVAL_SECONDS: "1" });
  const dbPath = `${server.dataDir}/abn.sqlite`;
  const other = new DatabaseSync(dbPath);
  try {
    // The test shortens the busy wait so that it takes milliseconds, not the default seconds.
    sqliteOf(server).exec("PRAGMA busy_timeout = 300");
    assertEquals((await upload(server, "exp", VALID)).status, 201);
    await waitFor(async () => (await analysisStatus(server, "exp")) === "ready", "analysis");
    other.exec("BEGIN EXCLUSIVE");
    other.exec("UPDATE orgs SET name = name");
    const settings = await authed(server, server.apiKey, "/datasets/exp/settings/", {
      method: "PUT",
      body: JSON.stringify({ mde: 0.1 }),
    });
    await assertApiError(settings, 503, "service_unavailable");
    assert(Number(settings.headers.get("retry-after")) > 0, "no Retry-After");
    await assertApiError(
      await authed(server, server.apiKey, "/datasets/exp/", { method: "DELETE" }),
      503,
      "service_unavailable",
    );
    assertSameBytes(await server.stored(server.orgId, "exp"), VALID, "a refused DELETE deleted");
    // Reads go on (WAL), and a direct upload is stored; its analysis waits for the database.
    const keys = await authed(server, server.apiKey, "/keys/");
    assertEquals(keys.status, 200);
    await keys.body?.cancel();
    const next = validCsv(3_000, "b");
    assertEquals((await upload(server, "exp", next)).status, 201);
    await healthy(server.url);
    await new Promise((r) => setTimeout(r, 1_500)); // a timer run while the lock is held
    other.exec("ROLLBACK");
    // Everything catches up: the delivery made during the lock is analysed, writes work.
    await waitFor(
      async () => (await analysisStatus(server, "exp")) === "ready",
      "the analysis of the delivery made while the database was busy",
    );
    const ok = await authed(server, server.apiKey, "/datasets/exp/settings/", {
      method: "PUT",
      body: JSON.stringify({ mde: 0.1 }),
    });
    assertEquals(ok.status, 200, await ok.text());
    assertEquals(integrity(dbPath), "ok");
  } finally {
    other.close();
    await server.close();
  }
});

Deno.test("a read-only database: 503 JSON for writes, nothing deleted, recovery once writable", async () => {
  const server = await startFaultyServer("local", { ABN_SCAN_INTERVAL_SECONDS: "1" });
  try {
    assertEquals((await upload(server, "exp", VALID)).status, 201);
    await waitFor(async () => (await analysisStatus(server, "exp")) === "ready", "analysis");
    // What a read-only file or file system does to the live connection.
    sqliteOf(server).exec("PRAGMA query_only = 1");
    await assertApiError(
      await authed(server, server.apiKey, "/datasets/exp/settings/", {
        method: "PUT",
        body: "{}",
      }),
      503,
      "service_unavailable",
    );
    await assertApiError(
      await authed(server, server.apiKey, "/datasets/exp/", { method: "DELETE" }),
      503,
      "service_unavailable",
    );
    assertSameBytes(await server.stored(server.orgId, "exp"), VALID);
    const next = validCsv(3_000, "r");
    assertEquals((await upload(server, "exp", next)).status, 201);
    const show = await authed(server, server.apiKey, "/datasets/exp/");
    assertEquals(show.status, 200);
    await show.body?.cancel();
    await healthy(server.url);
    sqliteOf(server).exec("PRAGMA query_only = 0");
    await waitFor(
      async () => (await analysisStatus(server, "exp")) === "ready",
      "the analysis of the delivery made while the database was read-only",
    );
    assertEquals(integrity(`${server.dataDir}/abn.sqlite`), "ok");
  } finally {
    await server.close();
  }
});

Deno.test("an analysis whose result cannot be saved (database locked) does not take the service down", async () => {
  // Before the fix, the failed save was an unhandled rejection that ended the process; in this
  // in-process test it would fail the test runner.
  const server = await startFaultyServer("local", { ABN_SCAN_INTERVAL_SECONDS: "1" });
  const other = new DatabaseSync(`${server.dataDir}/abn.sqlite`);
  try {
    sqliteOf(server).exec("PRAGMA busy_timeout = 200");
    // Big enough that the analysis is still running when the lock is taken.
    const res = await upload(server, "big", validCsv(12_000_000, "L"));
    assertEquals(res.status, 201, await res.text());
    other.exec("BEGIN EXCLUSIVE");
    other.exec("UPDATE orgs SET name = name");
    await new Promise((r) => setTimeout(r, 1_500));
    other.exec("ROLLBACK");
    await healthy(server.url);
    await waitFor(
      async () => (await analysisStatus(server, "big")) === "ready",
      "the analysis to be saved once the lock is gone",
      20_000,
    );
  } finally {
    other.close();
    await server.close();
  }
});

// ---------------------------------------------------------------------------------------------
// Timer faults

for (const driver of DRIVERS) {
  Deno.test(`timer runs that fail (a listing, a head throws once) are followed by ones that work (${driver})`, async () => {
    const server = await startFaultyServer(driver, {
      ABN_SCAN_INTERVAL_SECONDS: "1",
      ABN_RECONCILE_INTERVAL_SECONDS: "1",
    });
    try {
      const runs = (job: string, outcome: string) =>
        server.service.metrics.timerRuns.get({ job, outcome });
      await catalogReady(server);
      server.faulty.failNext("list", 1);
      await server.service.jobs.reconcile.runOnce();
      assertEquals(runs("reconcile", "failed"), 1);
      // A two-step delivery: on S3 the scan of open grants notices it, and its first try fails.
      const g = await authed(server, server.apiKey, "/datasets/initiate/", {
        method: "POST",
        body: JSON.stringify({ experiment_id: "twostep" }),
      });
      const grant = await g.json();
      const put = await fetch(grant.upload_url, {
        method: "PUT",
        headers: { "content-type": "text/csv" },
        body: VALID,
      });
      assertEquals(put.status, 200, await put.text());
      if (driver === "s3") {
        server.faulty.failNext("head", 1);
        await server.service.jobs.scan.runOnce();
        assertEquals(runs("scan", "failed"), 1);
        await waitFor(() => runs("scan", "ok") >= 1, "a scan that works after the failed one");
      }
      await waitFor(
        async () => (await analysisStatus(server, "twostep")) === "ready",
        "the two-step delivery to be analysed",
      );
      const okBefore = runs("reconcile", "ok");
      await waitFor(() => runs("reconcile", "ok") > okBefore, "a reconciliation that works");
      assertEquals(runs("reconcile", "failed"), 1);
      assertEquals(runs("scan", "failed"), driver === "s3" ? 1 : 0);
    } finally {
      await server.close();
    }
  });
}

Deno.test({
  name: "an analysis that failed on a transient storage error is retried by the timer",
  async fn() {
    const server = await startFaultyServer("local", { ABN_SCAN_INTERVAL_SECONDS: "1" });
    try {
      server.faulty.failNext("get", 1);
      assertEquals((await upload(server, "exp", VALID)).status, 201);
      await waitFor(
        async () => (await analysisStatus(server, "exp")) === "ready",
        "the analysis to be retried after the storage failure",
      );
    } finally {
      await server.close();
    }
  },
});
