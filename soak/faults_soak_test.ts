/**
 * Faults at soak scale: 100 seeded client disconnects per driver, the service killed with SIGKILL
 * at eight random points of an upload (restarted each time), and S3 that never answers.
 */
import { assert, assertApiError, assertEquals, assertMatch } from "../tests/_assert.ts";
import { DRIVERS, startDriverServer } from "../tests/_drivers.ts";
import { spawnServer } from "../tests/_server.ts";
import { Rng, tmpFiles, waitFor, writeAll } from "../tests/_faults.ts";
import {
  assertOnlyDatasetAndSoundDb,
  assertSameBytes,
  cliOrgWithKey,
  disconnectTrials,
  rawUploadHead,
  startFaultyServer,
  upload,
  VALID,
  validCsv,
} from "../tests/reliability/_helpers.ts";

for (const driver of DRIVERS) {
  Deno.test(`soak: 100 clients disconnecting at seeded random points (${driver})`, async () => {
    const lines: string[] = [];
    const server = await startDriverServer(driver, {}, { log: (line) => lines.push(line) });
    try {
      await disconnectTrials(server, lines, { trials: 100, seed: 777 });
    } finally {
      await server.close();
    }
  });
}

Deno.test("soak: SIGKILL at 8 random points of an upload, restart each time, nothing lost", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "abn-sigkill-soak-" });
  const env = { ABN_DATA_DIR: dataDir };
  const rng = new Rng(31337);
  let server = null;
  try {
    const { orgId, apiKey: api_key } = await cliOrgWithKey(env);
    const body = validCsv(10_000_000, "k");
    const stored = `${dataDir}/storage/org/${orgId}/experiments/exp/latest.csv`;
    for (let round = 0; round < 8; round++) {
      server = await spawnServer(env);
      assertEquals(await tmpFiles(dataDir), [], `round ${round}: temporaries left at start-up`);
      const current = validCsv(2_000 + round, `r${round}`);
      const api = { api: `${server.url}/api/v1`, apiKey: api_key };
      assertEquals((await upload(api, "exp", current)).status, 201);
      const conn = await rawUploadHead(server.url, api_key, body.length);
      try {
        await writeAll(conn, body.subarray(0, rng.int(body.length)));
        await waitFor(async () => (await tmpFiles(dataDir)).length > 0, "a temporary file");
        await new Promise((r) => setTimeout(r, rng.int(100)));
        await server.stop("SIGKILL");
      } finally {
        try {
          conn.close();
        } catch { /* closed by the peer */ }
      }
      assertSameBytes(await Deno.readFile(stored), current, `round ${round}`);
    }
    server = await spawnServer(env);
    assertEquals(await tmpFiles(dataDir), []);
    await assertOnlyDatasetAndSoundDb(dataDir, orgId);
    const health = await fetch(`${server.url}/healthz`);
    assert(health.status === 200);
    await health.body?.cancel();
  } finally {
    await server?.stop().catch(() => {});
    await Deno.remove(dataDir, { recursive: true });
  }
});

// Storage that accepts connections and never answers fails a request at the S3 store's 60 s
// deadline (src/storage/s3/s3_store.ts): a minute, so it runs here rather than in the fast suite.
Deno.test("soak: S3 accepting but never answering: the upload answers 500 storage_error in bounded time", async () => {
  const server = await startFaultyServer("s3");
  try {
    assertEquals((await upload(server, "exp", VALID)).status, 201);
    server.proxy!.setMode("blackhole");
    const started = performance.now();
    const res = await fetch(`${server.api}/datasets/upload/?experiment_id=exp`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.apiKey}` },
      body: validCsv(2_000),
      signal: AbortSignal.timeout(90_000),
    });
    const error = await assertApiError(res, 500, "storage_error");
    assertMatch(error.message, /retry/i);
    console.log(`answered after ${((performance.now() - started) / 1000).toFixed(1)} s`);
    server.proxy!.setMode("pass");
    assertSameBytes(await server.stored(server.orgId, "exp"), VALID);
  } finally {
    await server.close();
  }
});

Deno.test("soak: a body trickling inside the idle timeout is dropped with 408 once it averages below the minimum rate", async () => {
  // 8 bytes every 400 ms (20 B/s): never silent for the 1 s idle timeout, far below 1024 B/s.
  const server = await startDriverServer("local", {
    ABN_BODY_IDLE_TIMEOUT_SECONDS: "1",
    ABN_BODY_MIN_BYTES_PER_SECOND: "1024",
  });
  try {
    assertEquals((await upload(server, "trickle", VALID)).status, 201);
    // The header, then a user_id that keeps growing: valid so far, never finished.
    const pieces = [new TextEncoder().encode("user_id,variant,date,converted\nu")];
    let stop = false;
    const trickle = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (stop) return controller.close();
        await new Promise((r) => setTimeout(r, 400));
        controller.enqueue(pieces.pop() ?? new Uint8Array(8).fill(0x75));
      },
    });
    const started = performance.now();
    // Not `upload()`: its 60 s client timeout would end the request first.
    const res = await fetch(`${server.api}/datasets/upload/?experiment_id=trickle`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "text/csv" },
      body: trickle,
      signal: AbortSignal.timeout(90_000),
    });
    stop = true;
    const error = await assertApiError(res, 408, "body_timeout");
    assertMatch(error.message, /below the minimum of 1024 bytes\/s/);
    const seconds = (performance.now() - started) / 1000;
    assert(seconds >= 59 && seconds < 75, `dropped after ${seconds.toFixed(1)} s`);
    assertSameBytes(await server.stored(server.orgId, "trickle"), VALID);
    await waitFor(async () => (await tmpFiles(server.dataDir)).length === 0, "no temporaries");
  } finally {
    await server.close();
  }
});
