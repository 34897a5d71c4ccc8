/**
 * Shared pieces of the reliability tests: requests, the in-process verdict of the validator,
 * and servers whose storage can be made to fail.
 */
import { ListMultipartUploadsCommand, S3Client } from "@aws-sdk/client-s3";
import { assertEquals } from "../_assert.ts";
import type { Driver, DriverServer } from "../_drivers.ts";
import type { TestServer } from "../_server.ts";
import { freePort, runMain, startTestServer } from "../_server.ts";
import type { S3rverFixture } from "../_s3rver.ts";
import { startS3rver } from "../_s3rver.ts";
import { startRgw } from "../_rgw.ts";
import type { FaultProxy } from "../_faults.ts";
import {
  abandonUpload,
  FaultyStore,
  listFiles,
  Rng,
  startFaultProxy,
  tmpFiles,
  waitFor,
  writeAll,
} from "../_faults.ts";
import { DatabaseSync } from "node:sqlite";
import { DatasetValidator } from "../../src/pipeline/mod.ts";
import { LocalStore } from "../../src/storage/local_store.ts";
import { S3Store } from "../../src/storage/s3/s3_store.ts";
import { UrlSigner } from "../../src/crypto/url_signer.ts";
import { loadOrCreateSecret } from "../../src/crypto/secret_file.ts";

const enc = new TextEncoder();

/** Longest wait for any one request of these tests. */
export const REQUEST_TIMEOUT_MS = 60_000;

export const VALID = await Deno.readFile(new URL("../testdata/small.csv", import.meta.url));

export function upload(
  server: { api: string; apiKey: string },
  experimentId: string,
  body: BodyInit | null,
  apiKey = server.apiKey,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(
    `${server.api}/datasets/upload/?experiment_id=${encodeURIComponent(experimentId)}`,
    {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "text/csv", ...headers },
      body,
      // A hang is a failure, not a stalled suite.
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    },
  );
}

export function authed(
  server: { api: string },
  apiKey: string,
  path: string,
  init: RequestInit = {},
): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${apiKey}`);
  return fetch(`${server.api}${path}`, {
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    ...init,
    headers,
  });
}

/** A valid dataset of about `bytes` bytes, cut at a line end; `tag` makes its content unique. */
export function validCsv(bytes: number, tag = "u"): Uint8Array<ArrayBuffer> {
  const header = "user_id,variant,date,converted,revenue\n";
  const line = (i: number) =>
    `${tag}${i},${i % 2 ? "B" : "A"},2026-01-${String(1 + (i % 28)).padStart(2, "0")},${
      i % 3 === 0 ? 1 : 0
    },${i % 97}.25\n`;
  const rows: string[] = [header];
  let size = header.length;
  for (let i = 0; size < bytes; i++) {
    const l = line(i);
    rows.push(l);
    size += l.length;
  }
  return enc.encode(rows.join(""));
}

/** What the validator says of these chunks in-process: `accept` or the error code. */
export function verdict(chunks: Uint8Array[]): string {
  const validator = new DatasetValidator();
  try {
    for (const chunk of chunks) validator.push(chunk);
    validator.finish();
    return "accept";
  } catch (error) {
    return (error as { code?: string }).code ?? `thrown: ${String(error)}`;
  }
}

/** A body that sends `first`, then nothing until `release()` (or never). */
export function stallingBody(first: Uint8Array): {
  body: ReadableStream<Uint8Array>;
  release: (rest?: Uint8Array) => void;
} {
  let release!: (rest?: Uint8Array) => void;
  const gate = new Promise<Uint8Array | undefined>((r) => release = r);
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      controller.enqueue(first);
      const rest = await gate;
      try {
        if (rest) controller.enqueue(rest);
        controller.close();
      } catch { /* the request was already dropped */ }
    },
  });
  return { body, release };
}

export interface FaultyServer extends TestServer {
  driver: Driver;
  faulty: FaultyStore;
  s3?: S3rverFixture;
  proxy?: FaultProxy;
  /** The stored bytes, read from the storage directly (past the proxy and the faults). */
  stored(orgId: string, experimentId: string): Promise<Uint8Array | null>;
}

/**
 * The real service on one driver with its store wrapped in a `FaultyStore`; on S3 the driver
 * talks to s3rver (or Ceph's gateway) through a `FaultProxy` (pass mode until a test changes it).
 */
export async function startFaultyServer(
  driver: Driver,
  env: Record<string, string> = {},
  s3Options: { requestDeadlineMs?: number } = {},
): Promise<FaultyServer> {
  const dataDir = await Deno.makeTempDir({ prefix: "abn-faulty-" });
  const port = freePort();
  let s3: S3rverFixture | undefined;
  let proxy: FaultProxy | undefined;
  let inner;
  let direct;
  if (driver !== "local") {
    s3 = driver === "s3" ? await startS3rver() : await startRgw();
    proxy = startFaultProxy(Number(new URL(s3.endpoint).port));
    const options = {
      region: s3.region,
      bucket: s3.bucket,
      accessKeyId: s3.accessKeyId,
      secretAccessKey: s3.secretAccessKey,
      forcePathStyle: true,
      createBucket: false,
    };
    inner = new S3Store({ ...options, ...s3Options, endpoint: proxy.endpoint });
    direct = new S3Store({ ...options, endpoint: s3.endpoint });
  } else {
    const signer = new UrlSigner(
      await loadOrCreateSecret(`${dataDir}/secrets/url-signing.key`),
    );
    inner = new LocalStore({ dataDir, signer, publicUrl: `http://127.0.0.1:${port}` });
    direct = inner;
  }
  const faulty = new FaultyStore(inner);
  // On a port known before the store is built (local upload URLs).
  const server = await startTestServer(env, { port, dataDir, store: faulty });
  return {
    ...server,
    driver,
    dataDir,
    faulty,
    s3,
    proxy,
    async stored(orgId: string, experimentId: string) {
      const object = await direct.get(`org/${orgId}/experiments/${experimentId}/latest.csv`);
      if (!object) return null;
      return new Uint8Array(await new Response(object.body).arrayBuffer());
    },
    async close() {
      // Storage calls hung on a swallowing proxy would keep their requests (and the server)
      // from finishing: cut them first.
      proxy?.setMode("refuse");
      await server.close();
      for (const store of [inner, direct]) {
        if (store instanceof S3Store) await store.close();
      }
      await proxy?.close();
      await s3?.stop();
    },
  };
}

/**
 * The keys of the bucket's incomplete multipart uploads, on Ceph's gateway; null on the other
 * drivers (s3rver cannot list them, the local driver has none).
 */
export async function pendingUploads(
  server: { driver: Driver; s3?: S3rverFixture },
): Promise<string[] | null> {
  const s3 = server.s3;
  if (server.driver !== "s3-rgw" || s3 === undefined) return null;
  const client = new S3Client({
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  });
  try {
    const listed = await client.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket }));
    return (listed.Uploads ?? []).map((upload) => upload.Key ?? "");
  } finally {
    client.destroy();
  }
}

/**
 * Byte-for-byte equality with a short message (assert's deep diff of large arrays takes minutes):
 * the lengths, and the first offset that differs.
 */
export function assertSameBytes(
  actual: Uint8Array | null,
  expected: Uint8Array | null,
  what = "bytes",
): void {
  if (actual === null || expected === null) {
    if (actual === expected) return;
    throw new Error(
      `${what}: ${actual === null ? "nothing stored" : "something stored"}, expected ${
        expected === null ? "nothing" : `${expected.length} bytes`
      }`,
    );
  }
  const n = Math.min(actual.length, expected.length);
  let i = 0;
  while (i < n && actual[i] === expected[i]) i++;
  if (i === n && actual.length === expected.length) return;
  throw new Error(
    `${what}: ${actual.length} bytes, expected ${expected.length}; first difference at byte ${i}`,
  );
}

/** Reads a response as JSON (or null), never throwing. */
export async function readJson(res: Response): Promise<{ text: string; json: unknown }> {
  const text = await res.text();
  try {
    return { text, json: JSON.parse(text) };
  } catch {
    return { text, json: null };
  }
}

/** The `error.code` of a JSON error body, if any. */
export function errorCode(json: unknown): string | undefined {
  return (json as { error?: { code?: string } } | null)?.error?.code;
}

export type { DriverServer };

/**
 * Clients that send the head of an upload and part of its body (Content-Length or chunked, at
 * seeded random points), then close: each request ends with a 4xx, the stored file stays, and no
 * temporary file outlives it. `lines` is the server's captured request log.
 */
export async function disconnectTrials(
  server: DriverServer,
  lines: string[],
  options: { trials: number; seed: number; bodyBytes?: number },
): Promise<void> {
  const port = Number(new URL(server.url).port);
  const first = await upload(server, "victim", VALID);
  await first.body?.cancel();
  if (first.status !== 201) throw new Error(`the first upload answered ${first.status}`);
  const body = validCsv(options.bodyBytes ?? 6_000_000, "d");
  const rng = new Rng(options.seed);
  const finished = () =>
    lines.filter((l) => l.includes('"path":"/api/v1/datasets/upload/"')).length;
  for (let trial = 0; trial < options.trials; trial++) {
    const before = finished();
    const sent = rng.int(body.length);
    await abandonUpload(port, server.apiKey, "victim", body, sent, trial % 2 === 1, rng);
    // The server notices asynchronously: wait for the request to end, then for its clean-up.
    await waitFor(() => finished() > before, `trial ${trial}: the request to end`);
    const last = JSON.parse(lines.findLast((l) => l.includes("/datasets/upload/"))!);
    if (!(last.status >= 400 && last.status < 500)) {
      throw new Error(`trial ${trial} (${sent} bytes sent): ${JSON.stringify(last)}`);
    }
    if (server.driver === "local") {
      await waitFor(
        async () => (await tmpFiles(server.dataDir)).length === 0,
        `trial ${trial}: no temporaries`,
        5_000,
      );
    }
    assertSameBytes(await server.stored(server.orgId, "victim"), VALID, `trial ${trial}`);
  }
  const health = await fetch(`${server.url}/healthz`);
  await health.body?.cancel();
  if (health.status !== 200) throw new Error(`/healthz answered ${health.status}`);
  const again = await upload(server, "victim", body);
  await again.body?.cancel();
  if (again.status !== 201) throw new Error(`the upload after the trials answered ${again.status}`);
  assertSameBytes(await server.stored(server.orgId, "victim"), body);
  // On the gateway: every abandoned upload's multipart upload was aborted, none is left over.
  assertEquals(await pendingUploads(server) ?? [], []);
}

/** An organization and its key made through the admin CLI, as an operator would. */
export async function cliOrgWithKey(
  env: Record<string, string>,
): Promise<{ orgId: string; apiKey: string }> {
  const org = JSON.parse((await runMain(["admin", "org", "create", "acme", "--json"], env)).stdout);
  const key = JSON.parse(
    (await runMain(["admin", "key", "create", org.org_id, "--json"], env)).stdout,
  );
  return { orgId: org.org_id, apiKey: key.api_key };
}

/** Opens a raw connection and sends the head of a direct upload declaring `length` bytes. */
export async function rawUploadHead(
  url: string,
  apiKey: string,
  length: number,
): Promise<Deno.Conn> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(url).port) });
  await writeAll(
    conn,
    enc.encode(
      `POST /api/v1/datasets/upload/?experiment_id=exp HTTP/1.1\r\nHost: x\r\n` +
        `Authorization: Bearer ${apiKey}\r\nContent-Length: ${length}\r\n\r\n`,
    ),
  );
  return conn;
}

/** After crashes: storage holds only the experiment's latest.csv and SQLite is intact. */
export async function assertOnlyDatasetAndSoundDb(dataDir: string, orgId: string): Promise<void> {
  assertEquals(await listFiles(`${dataDir}/storage`), [
    `org/${orgId}/experiments/exp/latest.csv`,
  ]);
  const db = new DatabaseSync(`${dataDir}/abn.sqlite`);
  try {
    assertEquals(db.prepare("PRAGMA integrity_check").get()?.integrity_check, "ok");
  } finally {
    db.close();
  }
}
