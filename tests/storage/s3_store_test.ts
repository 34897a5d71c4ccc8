import assert from "node:assert/strict";
import {
  AbortMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteBucketCommand,
  HeadBucketCommand,
  ListMultipartUploadsCommand,
  type ListMultipartUploadsCommandInput,
  S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { type ObjectStore, StorageError } from "../../src/storage/object_store.ts";
import { type S3Like, S3Store, type S3StoreOptions } from "../../src/storage/s3/s3_store.ts";
import { sweepMultipartUploads } from "../../src/storage/s3/_s3_sweep.ts";
import { S3_PEERS, type S3Fixture, type S3Peer, startS3Peer } from "../_s3_peers.ts";

const MIB = 1024 * 1024;

/**
 * Registers the test once per S3 peer (named `test` so that the formatter keeps it flat, as it
 * does `Deno.test`): s3rver, and Ceph's RADOS Gateway where it is installed. What only the gateway
 * can check (signatures, Content-MD5, real aborts, long listings) is in the tests marked
 * "(gateway)"; tests of the driver's own logic through an injected client run on s3rver alone.
 */
function test(name: string, fn: (peer: S3Peer) => Promise<void>): void {
  for (const peer of S3_PEERS) Deno.test(`${name} (${peer})`, () => fn(peer));
}

interface Context {
  s3: S3Fixture;
  store: S3Store;
  /** A plain client on the same service, to look behind the store's back. */
  raw: S3Client;
}

async function withS3(
  peer: S3Peer,
  fn: (context: Context) => Promise<void>,
  options: Partial<S3StoreOptions> | ((s3: S3Fixture, raw: S3Client) => S3Like) = {},
): Promise<void> {
  const s3 = await startS3Peer(peer);
  const raw = new S3Client({
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  });
  const overrides = typeof options === "function" ? { client: options(s3, raw) } : options;
  const store = new S3Store({
    endpoint: s3.endpoint,
    region: s3.region,
    bucket: s3.bucket,
    accessKeyId: s3.accessKeyId,
    secretAccessKey: s3.secretAccessKey,
    forcePathStyle: true,
    createBucket: false,
    partSize: 5 * MIB,
    ...overrides,
  });
  try {
    await fn({ s3, store, raw });
  } finally {
    await store.close();
    raw.destroy();
    await s3.stop();
  }
}

/** Deterministic bytes that differ from one seed to the next. */
function bytes(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  let x = seed * 2654435761 + 1;
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

async function read(store: ObjectStore, key: string): Promise<Uint8Array | null> {
  const object = await store.get(key);
  if (object === null) return null;
  return concat(await Array.fromAsync(object.body));
}

async function put(store: ObjectStore, key: string, data: Uint8Array) {
  const writer = await store.createWriter(key);
  await writer.write(data);
  return await writer.commit();
}

/** Rejects when `promise` takes longer than `ms`. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took more than ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Whether `promise` settles within `ms`. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  try {
    await within(promise.catch(() => {}), ms, "");
    return true;
  } catch {
    return false;
  }
}

function sdkError(name: string, status: number): Error {
  return Object.assign(new Error(`${name} (injected)`), {
    name,
    $metadata: { httpStatusCode: status },
  });
}

type Handler = (command: object, forward: () => Promise<unknown>) => Promise<unknown>;

/** A client that forwards to `raw` through `handler` and records every command's name. */
function recording(raw: S3Client, log: string[], handler?: Handler): S3Like {
  const send = (command: object) => {
    log.push(command.constructor.name);
    const forward = () => raw.send(command as never) as Promise<unknown>;
    return handler ? handler(command, forward) : forward();
  };
  return { config: raw.config, send: send as unknown as S3Like["send"] };
}

/** A client whose every request fails with `error`. */
function failing(error: Error): S3Like {
  const send = () => Promise.reject(error);
  return { config: {} as S3Like["config"], send: send as unknown as S3Like["send"] };
}

/**
 * The bucket's incomplete multipart uploads, as the store lists them: only the gateway can
 * (s3rver answers ListMultipartUploads with 501), so on s3rver this answers null.
 */
async function pendingUploads(peer: S3Peer, s3: S3Fixture, raw: S3Client) {
  if (peer !== "rgw") return null;
  const listed = await raw.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket }));
  return (listed.Uploads ?? []).map((upload) => upload.Key);
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !condition(); waited += 10) {
    if (waited > 5000) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

test("S3Store writer streams chunks as a multipart upload visible only after commit", async (peer) => {
  const log: string[] = [];
  await withS3(peer, async ({ store }) => {
    const key = "org/o1/experiments/e1/latest.csv";
    const chunks = [bytes(2 * MIB, 1), bytes(3 * MIB, 2), bytes(2 * MIB, 3), bytes(17, 4)];
    const writer = await store.createWriter(key);
    for (const chunk of chunks) await writer.write(chunk);
    await until(() => log.includes("UploadPartCommand"), "the first part");
    assert.equal(await store.head(key), null);
    assert.deepEqual((await store.list("org/o1/")).objects, []);

    const info = await writer.commit();
    const expected = concat(chunks);
    assert.ok(log.includes("CompleteMultipartUploadCommand"), log.join());
    assert.ok(!log.includes("PutObjectCommand"), log.join());
    assert.equal(info.key, key);
    assert.equal(info.size, expected.byteLength);
    // The gateway completes the upload with an empty ETag: the writer reads it back with HEAD.
    assert.match(info.etag, /^[^"]+$/);
    assert.ok(info.lastModified instanceof Date);
    assert.deepEqual(await store.head(key), info);
    assert.deepEqual(await read(store, key), expected);
  }, (_s3, raw) => recording(raw, log));
});

test("S3Store writer stores a small object as a one-part multipart upload at commit", async (peer) => {
  const log: string[] = [];
  await withS3(peer, async ({ store }) => {
    const key = "org/o1/experiments/small/latest.csv";
    const writer = await store.createWriter(key);
    const data = new TextEncoder().encode("user_id,variant,date,converted\nu1,A,2024-01-01,1\n");
    await writer.write(data.subarray(0, 10));
    await writer.write(data.subarray(10));
    assert.equal(await store.head(key), null);
    assert.deepEqual(log, ["HeadObjectCommand"], "nothing is sent before commit");
    const info = await writer.commit();
    // Never a bare PutObject: a store keeping a cut PutObject body would show it under the key.
    assert.deepEqual(log.filter((name) => name !== "HeadObjectCommand"), [
      "CreateMultipartUploadCommand",
      "UploadPartCommand",
      "CompleteMultipartUploadCommand",
    ]);
    assert.equal(info.size, data.byteLength);
    assert.deepEqual(await read(store, key), data);
  }, (_s3, raw) => recording(raw, log));
});

test("S3Store writer keeps the bytes it was given even if the caller reuses its buffer", async (peer) => {
  await withS3(peer, async ({ store }) => {
    const buffer = new Uint8Array(4).fill(65);
    const writer = await store.createWriter("k.csv");
    await writer.write(buffer);
    buffer.fill(66);
    await writer.write(buffer);
    await writer.commit();
    assert.equal(new TextDecoder().decode((await read(store, "k.csv"))!), "AAAABBBB");
  });
});

test("S3Store writer abort leaves the previous object unchanged and aborts the upload", async (peer) => {
  const log: string[] = [];
  await withS3(peer, async ({ s3, store, raw }) => {
    const key = "org/o1/experiments/e1/latest.csv";
    const previous = bytes(1000, 9);
    const before = await put(store, key, previous);
    log.length = 0;

    const writer = await store.createWriter(key);
    for (let i = 0; i < 6; i++) await writer.write(bytes(MIB, 20 + i));
    await until(() => log.includes("UploadPartCommand"), "the first part");
    await writer.abort();
    await writer.abort();
    assert.ok(log.includes("AbortMultipartUploadCommand"), log.join());
    assert.ok(!log.includes("CompleteMultipartUploadCommand"), log.join());
    await assert.rejects(writer.write(bytes(1, 1)), StorageError);
    await assert.rejects(writer.commit(), StorageError);

    assert.deepEqual(await store.head(key), before);
    assert.deepEqual(await read(store, key), previous);
    assert.deepEqual((await store.list("org/")).objects.map((object) => object.key), [key]);
    // The gateway shows the multipart upload gone (s3rver answers the abort with 501).
    assert.deepEqual(await pendingUploads(peer, s3, raw) ?? [], []);
  }, (_s3, raw) => recording(raw, log));
});

test("S3Store writer abort of a small pending object stores nothing", async (peer) => {
  await withS3(peer, async ({ store }) => {
    const writer = await store.createWriter("org/o1/experiments/e2/latest.csv");
    await writer.write(bytes(100, 1));
    await writer.abort();
    assert.deepEqual((await store.list("org/")).objects, []);
  });
});

test("S3Store writer commits a zero-byte object without hanging", async (peer) => {
  await withS3(peer, async ({ store }) => {
    const key = "org/o1/experiments/empty/latest.csv";
    const writer = await store.createWriter(key);
    await writer.write(new Uint8Array(0));
    const info = await within(writer.commit(), 5000, "commit of an empty object");
    assert.equal(info.size, 0);
    assert.equal((await store.head(key))?.size, 0);
    assert.deepEqual(await read(store, key), new Uint8Array(0));
  });
});

test("S3Store writer write waits while the upload cannot take more (backpressure)", async (peer) => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  const log: string[] = [];
  await withS3(peer, async ({ store }) => {
    const writer = await store.createWriter("org/o1/experiments/big/latest.csv");
    let accepted = 0;
    let stalled = false;
    while (accepted < 100 * MIB) {
      const wrote = writer.write(new Uint8Array(MIB));
      if (!(await settlesWithin(wrote, 300))) {
        stalled = true;
        release();
        await wrote;
        break;
      }
      accepted += MIB;
    }
    release();
    assert.ok(stalled, "write() never waited");
    // Four 5 MiB parts in flight, one being gathered, plus the stream's 1 MiB buffer.
    assert.ok(accepted >= 5 * MIB && accepted <= 27 * MIB, `accepted ${accepted / MIB} MiB`);
    await writer.abort();
  }, (_s3, raw) =>
    recording(raw, log, async (command, forward) => {
      if (command.constructor.name === "UploadPartCommand") await gate;
      return await forward();
    }));
});

test("S3Store writer commit fails with StorageError when UploadPart fails", async (peer) => {
  const injected = sdkError("InternalError", 500);
  const log: string[] = [];
  let broken = false;
  await withS3(peer, async ({ s3, store, raw }) => {
    const key = "org/o1/experiments/e1/latest.csv";
    const previous = bytes(3000, 5);
    await put(store, key, previous);
    broken = true;

    const writer = await store.createWriter(key);
    const error = await (async () => {
      try {
        for (let i = 0; i < 12; i++) await writer.write(bytes(MIB, i));
        await writer.commit();
      } catch (error) {
        return error;
      }
      assert.fail("the write succeeded");
    })();
    assert.ok(error instanceof StorageError);
    assert.match(error.message, /^Storage failed/);
    assert.equal(error.cause, injected);
    await writer.abort();
    assert.ok(log.includes("AbortMultipartUploadCommand"), log.join());
    assert.deepEqual(await read(store, key), previous);
    assert.deepEqual(await pendingUploads(peer, s3, raw) ?? [], []);
  }, (_s3, raw) =>
    recording(raw, log, (command, forward) => {
      const name = command.constructor.name;
      if (broken && name === "UploadPartCommand") return Promise.reject(injected);
      // s3rver cannot abort multipart uploads; answer as S3 would. The gateway aborts for real.
      if (name === "AbortMultipartUploadCommand" && peer === "s3rver") return Promise.resolve({});
      return forward();
    }));
});

test("S3Store writer commit fails with StorageError when the one part or the empty PutObject fails", async (peer) => {
  const injected = sdkError("ServiceUnavailable", 503);
  const log: string[] = [];
  let broken = false;
  await withS3(peer, async ({ s3, store, raw }) => {
    const key = "org/o1/experiments/e1/latest.csv";
    const previous = bytes(300, 6);
    await put(store, key, previous);
    broken = true;
    for (const data of [bytes(200, 7), new Uint8Array(0)]) {
      const writer = await store.createWriter(key);
      await writer.write(data);
      const error = await writer.commit().then(() => null, (error) => error);
      assert.ok(error instanceof StorageError, String(error));
      assert.match(error.message, /^Storage failed/);
      assert.equal(error.cause, injected);
      await writer.abort();
      assert.deepEqual(await read(store, key), previous);
    }
    // The one-part upload that failed was aborted.
    assert.ok(log.includes("AbortMultipartUploadCommand"), log.join());
    assert.deepEqual(await pendingUploads(peer, s3, raw) ?? [], []);
  }, (_s3, raw) =>
    recording(raw, log, (command, forward) => {
      const name = command.constructor.name;
      if (broken && (name === "PutObjectCommand" || name === "UploadPartCommand")) {
        return Promise.reject(injected);
      }
      // s3rver cannot abort multipart uploads; answer as S3 would. The gateway aborts for real.
      if (name === "AbortMultipartUploadCommand" && peer === "s3rver") return Promise.resolve({});
      return forward();
    }));
});

test("S3Store head, get and delete answer a stored object and nothing once deleted", async (peer) => {
  await withS3(peer, async ({ store }) => {
    const key = "org/o1/experiments/e1/latest.csv";
    assert.equal(await store.head(key), null);
    assert.equal(await store.get(key), null);
    const data = bytes(4321, 3);
    const info = await put(store, key, data);

    const object = await store.get(key);
    assert.ok(object);
    assert.deepEqual(object.info, info);
    assert.deepEqual(concat(await Array.fromAsync(object.body)), data);

    await store.delete(key);
    assert.equal(await store.head(key), null);
    assert.equal(await store.get(key), null);
    await store.delete(key);
    await store.delete("org/o1/experiments/never/latest.csv");
  });
});

Deno.test("S3Store head fails with StorageError when the service fails", async () => {
  const injected = sdkError("AccessDenied", 403);
  await withS3("s3rver", async ({ store }) => {
    const error = await store.head("k.csv").then(() => null, (error) => error);
    assert.ok(error instanceof StorageError);
    assert.equal(error.cause, injected);
  }, () => failing(injected));
});

test("S3Store list pages through a prefix in key order", async (peer) => {
  await withS3(peer, async ({ store }) => {
    const keys = [1, 2, 3, 4, 5].map((n) => `org/o1/experiments/e${n}/latest.csv`);
    const stored = [];
    for (const [n, key] of keys.entries()) stored.push(await put(store, key, bytes(10 + n, n)));

    const pages = [];
    let cursor: string | null = null;
    do {
      const page = await store.list("org/o1/experiments/", { limit: 2, cursor });
      pages.push(page.objects);
      cursor = page.nextCursor;
    } while (cursor !== null && pages.length < 10);
    assert.deepEqual(pages.map((page) => page.length), [2, 2, 1]);
    const listed = pages.flat();
    assert.deepEqual(listed.map((object) => object.key), keys);
    for (const [i, object] of listed.entries()) {
      assert.equal(object.size, 10 + i);
      assert.equal(object.etag, stored[i].etag);
      assert.doesNotMatch(object.etag, /"/);
      assert.equal(object.lastModified.getTime(), stored[i].lastModified.getTime());
    }
  });
});

test("S3Store list keeps org/a/ apart from org/ab/", async (peer) => {
  await withS3(peer, async ({ store }) => {
    await put(store, "org/a/experiments/x/latest.csv", bytes(5, 1));
    await put(store, "org/ab/experiments/y/latest.csv", bytes(5, 2));
    const a = await store.list("org/a/");
    assert.deepEqual(a.objects.map((object) => object.key), ["org/a/experiments/x/latest.csv"]);
    assert.equal(a.nextCursor, null);
    const ab = await store.list("org/ab/");
    assert.deepEqual(ab.objects.map((object) => object.key), ["org/ab/experiments/y/latest.csv"]);
  });
});

test("S3Store presignPut answers a URL a plain PUT stores the object through", async (peer) => {
  await withS3(peer, async ({ s3, store }) => {
    const key = "org/o1/experiments/two-step/latest.csv";
    const url = await store.presignPut(key, { expiresInSeconds: 60 });
    assert.equal(new URL(url).host, new URL(s3.endpoint).host);
    // Checked on the URL: both peers accept a checksum parameter; Garage, R2 and MinIO do not.
    assert.doesNotMatch(url, /x-amz-checksum/i);
    const signed = new URL(url).searchParams.get("X-Amz-SignedHeaders")!.split(";");
    assert.ok(signed.includes("content-type"), signed.join());
    assert.ok(!signed.includes("content-length"), signed.join());

    const data = new TextEncoder().encode("user_id,variant,date,x\nu1,A,2024-01-01,1\n");
    const response = await fetch(url, {
      method: "PUT",
      headers: { "content-type": "text/csv" },
      body: data,
    });
    await response.body?.cancel();
    assert.equal(response.status, 200);
    assert.deepEqual(await read(store, key), data);
  });
});

test("S3Store presignPut URL is refused once expired", async (peer) => {
  await withS3(peer, async ({ store }) => {
    const key = "org/o1/experiments/late/latest.csv";
    const url = await store.presignPut(key, { expiresInSeconds: 1 });
    assert.equal(new URL(url).searchParams.get("X-Amz-Expires"), "1");
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const response = await fetch(url, {
      method: "PUT",
      headers: { "content-type": "text/csv" },
      body: "a,b\n",
    });
    await response.body?.cancel();
    assert.equal(response.status, 403);
    assert.equal(await store.head(key), null);
  });
});

Deno.test("S3Store presignPut signs content-length when a length is declared", async () => {
  await withS3("s3rver", async ({ store }) => {
    const url = new URL(
      await store.presignPut("k.csv", { expiresInSeconds: 60, contentLength: 42 }),
    );
    const signed = url.searchParams.get("X-Amz-SignedHeaders")!.split(";");
    assert.ok(signed.includes("content-length"), signed.join());
    assert.ok(signed.includes("content-type"), signed.join());
    assert.doesNotMatch(url.href, /x-amz-checksum/i);
  });
});

Deno.test("S3Store presignPut signs for the public endpoint when one is set", async () => {
  await withS3("s3rver", async ({ s3, store }) => {
    const url = new URL(await store.presignPut("org/o1/k.csv", { expiresInSeconds: 60 }));
    assert.equal(url.origin, "https://storage.example.test:9000");
    assert.equal(url.pathname, `/${s3.bucket}/org/o1/k.csv`);
    assert.doesNotMatch(url.href, /x-amz-checksum/i);
    // Everything else still goes to the internal endpoint.
    await put(store, "org/o1/k.csv", bytes(3, 1));
    assert.equal((await store.head("org/o1/k.csv"))?.size, 3);
  }, { publicEndpoint: "https://storage.example.test:9000" });
});

test("S3Store open refuses a missing bucket with one line naming the settings", async (peer) => {
  await withS3(peer, async ({ s3, raw }) => {
    await new S3Store({ ...storeOptions(s3), createBucket: false }).open();
    const store = new S3Store({ ...storeOptions(s3), bucket: "abn-missing", createBucket: false });
    const error = await store.open().then(() => null, (error) => error);
    await store.close();
    assert.ok(error instanceof StorageError);
    assert.match(error.message, /abn-missing/);
    assert.match(error.message, /ABN_S3_BUCKET/);
    assert.match(error.message, /ABN_S3_CREATE_BUCKET/);
    assert.doesNotMatch(error.message, /\n/);
    await assert.rejects(raw.send(new HeadBucketCommand({ Bucket: "abn-missing" })));
  });
});

test("S3Store open creates a missing bucket when asked to", async (peer) => {
  await withS3(peer, async ({ s3, raw }) => {
    const store = new S3Store({ ...storeOptions(s3), bucket: "abn-created", createBucket: true });
    try {
      await store.open();
      await raw.send(new HeadBucketCommand({ Bucket: "abn-created" }));
      await store.open();
      await put(store, "k.csv", bytes(3, 1));
      assert.equal((await store.head("k.csv"))?.size, 3);
    } finally {
      await store.close();
    }
  });
});

Deno.test("S3Store open fails with StorageError when the bucket cannot be reached", async () => {
  const injected = sdkError("Forbidden", 403);
  await withS3("s3rver", async ({ store }) => {
    const error = await store.open().then(() => null, (error) => error);
    assert.ok(error instanceof StorageError);
    assert.match(error.message, /^Storage failed/);
    assert.equal(error.cause, injected);
  }, () => failing(injected));
});

Deno.test("S3Store open names the credential settings when the SDK finds no credentials", async () => {
  // What the SDK throws when neither the settings nor its own sources give credentials.
  const injected = Object.assign(new Error("Could not load credentials from any providers"), {
    name: "CredentialsProviderError",
  });
  await withS3("s3rver", async ({ store }) => {
    const error = await store.open().then(() => null, (error) => error);
    assert.ok(error instanceof StorageError);
    assert.match(error.message, /ABN_S3_ACCESS_KEY_ID and ABN_S3_SECRET_ACCESS_KEY/);
    assert.equal(error.cause, injected);
  }, () => failing(injected));
});

function storeOptions(s3: S3Fixture): S3StoreOptions {
  return {
    endpoint: s3.endpoint,
    region: s3.region,
    bucket: s3.bucket,
    accessKeyId: s3.accessKeyId,
    secretAccessKey: s3.secretAccessKey,
    forcePathStyle: true,
    createBucket: false,
  };
}

/** A client that answers ListMultipartUploads from `pages` and records aborts. */
function multipartClient(
  pages: { Uploads: { Key: string; UploadId: string; Initiated: Date }[]; next?: string }[],
  calls: { lists: ListMultipartUploadsCommandInput[]; aborts: string[] },
  abortError?: (uploadId: string) => Error | undefined,
): S3Like {
  const send = (command: object) => {
    if (command instanceof ListMultipartUploadsCommand) {
      calls.lists.push(command.input);
      const marker = command.input.KeyMarker;
      const page = marker === undefined
        ? pages[0]
        : pages.find((_, i) => i > 0 && pages[i - 1].next === marker);
      if (page === undefined) return Promise.reject(new Error(`unexpected marker ${marker}`));
      return Promise.resolve({
        Uploads: page.Uploads,
        IsTruncated: page.next !== undefined,
        NextKeyMarker: page.next,
        NextUploadIdMarker: page.next === undefined ? undefined : `${page.next}-id`,
      });
    }
    if (command instanceof AbortMultipartUploadCommand) {
      const uploadId = command.input.UploadId!;
      calls.aborts.push(uploadId);
      const error = abortError?.(uploadId);
      return error ? Promise.reject(error) : Promise.resolve({});
    }
    return Promise.reject(new Error(`unexpected ${command.constructor.name}`));
  };
  return { config: {} as S3Like["config"], send: send as unknown as S3Like["send"] };
}

function hoursAgo(hours: number): Date {
  return new Date(Date.now() - hours * 60 * 60 * 1000);
}

Deno.test("S3Store sweep aborts only multipart uploads older than 24 hours", async () => {
  const calls = { lists: [] as ListMultipartUploadsCommandInput[], aborts: [] as string[] };
  const client = multipartClient(
    [
      {
        Uploads: [
          { Key: "org/o1/experiments/a/latest.csv", UploadId: "old-1", Initiated: hoursAgo(25) },
          { Key: "org/o1/experiments/b/latest.csv", UploadId: "new-1", Initiated: hoursAgo(23) },
        ],
        next: "org/o1/experiments/b/latest.csv",
      },
      {
        Uploads: [
          { Key: "org/o2/experiments/c/latest.csv", UploadId: "old-2", Initiated: hoursAgo(72) },
          { Key: "org/o2/experiments/d/latest.csv", UploadId: "gone", Initiated: hoursAgo(30) },
          { Key: "org/o2/experiments/e/latest.csv", UploadId: "new-2", Initiated: hoursAgo(1) },
        ],
      },
    ],
    calls,
    (uploadId) => uploadId === "gone" ? sdkError("NoSuchUpload", 404) : undefined,
  );
  const store = new S3Store({
    region: "us-east-1",
    bucket: "b",
    forcePathStyle: true,
    createBucket: false,
    client,
  });
  try {
    assert.equal(await store.sweep(), 2);
  } finally {
    await store.close();
  }
  assert.deepEqual(calls.aborts, ["old-1", "old-2", "gone"]);
  assert.equal(calls.lists.length, 2);
  assert.equal(calls.lists[1].KeyMarker, "org/o1/experiments/b/latest.csv");
  assert.equal(calls.lists[1].UploadIdMarker, "org/o1/experiments/b/latest.csv-id");
});

Deno.test("S3Store sweep fails with StorageError when an abort fails", async () => {
  const calls = { lists: [] as ListMultipartUploadsCommandInput[], aborts: [] as string[] };
  const client = multipartClient(
    [{ Uploads: [{ Key: "k", UploadId: "old", Initiated: hoursAgo(48) }] }],
    calls,
    () => sdkError("AccessDenied", 403),
  );
  const store = new S3Store({
    region: "us-east-1",
    bucket: "b",
    forcePathStyle: true,
    createBucket: false,
    client,
  });
  try {
    await assert.rejects(store.sweep(), StorageError);
  } finally {
    await store.close();
  }
});

Deno.test("S3Store sweep finds nothing on a store without ListMultipartUploads", async () => {
  await withS3("s3rver", async ({ store }) => {
    assert.equal(await store.sweep(), 0);
  });
});

// ---------------------------------------------------------------------------------------------
// What only the gateway checks: s3rver verifies no SigV4 signature and no Content-MD5, and
// cannot list or abort multipart uploads.

/** Registers the test on Ceph's gateway only, when it is installed. */
function gatewayTest(name: string, fn: () => Promise<void>): void {
  if (S3_PEERS.includes("rgw")) Deno.test(`${name} (gateway)`, fn);
}

async function putThrough(url: string | URL, body: string, init: RequestInit = {}) {
  const response = await fetch(url, {
    method: "PUT",
    headers: { "content-type": "text/csv" },
    body,
    ...init,
  });
  return { status: response.status, text: await response.text() };
}

gatewayTest(
  "S3Store presignPut URL is verified by the store: altered ones are refused, the URL itself stores",
  async () => {
    await withS3("rgw", async ({ store }) => {
      // A key that needs encoding, so the hand-written signer's path encoding is checked too.
      const key = "org/o1/experiments/a b+c~d(é)/latest.csv";
      const body = "user_id,variant,date,x\nu1,A,2024-01-01,1\n";
      const url = new URL(await store.presignPut(key, { expiresInSeconds: 60 }));
      const sized = new URL(
        await store.presignPut(key, { expiresInSeconds: 60, contentLength: body.length }),
      );
      const altered = (edit: (url: URL) => void, from = url) => {
        const copy = new URL(from);
        edit(copy);
        return copy;
      };
      const refused: [string, () => ReturnType<typeof putThrough>][] = [
        [
          "another key",
          () => putThrough(altered((u) => u.pathname = u.pathname.replace("/o1/", "/o2/")), body),
        ],
        [
          "a longer life",
          () => putThrough(altered((u) => u.searchParams.set("X-Amz-Expires", "3600")), body),
        ],
        [
          "another signature",
          () =>
            putThrough(
              altered((u) => {
                const signature = u.searchParams.get("X-Amz-Signature")!;
                u.searchParams.set(
                  "X-Amz-Signature",
                  signature.replace(/.$/, (c) => c === "0" ? "1" : "0"),
                );
              }),
              body,
            ),
        ],
        [
          "another content type",
          () => putThrough(url, body, { headers: { "content-type": "text/plain" } }),
        ],
        ["another method", () => putThrough(url, body, { method: "POST" })],
        [
          "another length than the one declared",
          () => putThrough(sized, body + "u2,B,2024-01-01,0\n"),
        ],
      ];
      for (const [what, send] of refused) {
        const { status, text } = await send();
        assert.equal(status, 403, `${what}: ${status} ${text}`);
        assert.match(text, /<Code>SignatureDoesNotMatch<\/Code>/, what);
      }
      assert.equal(await store.head(key), null);
      assert.equal(await store.head(key.replace("/o1/", "/o2/")), null);

      const stored = await putThrough(url, body);
      assert.equal(stored.status, 200, stored.text);
      assert.equal(new TextDecoder().decode((await read(store, key))!), body);
      const again = await putThrough(sized, body);
      assert.equal(again.status, 200, again.text);
    });
  },
);

gatewayTest("S3Store presignPut URL is refused by the store once expired", async () => {
  await withS3("rgw", async ({ store }) => {
    const url = await store.presignPut("org/o1/experiments/late/latest.csv", {
      expiresInSeconds: 1,
    });
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const { status, text } = await putThrough(url, "a,b\n");
    assert.equal(status, 403, text);
    // AWS answers AccessDenied "Request has expired"; the gateway AccessDenied without a message.
    assert.match(text, /<Code>AccessDenied<\/Code>/);
    assert.equal(await store.head("org/o1/experiments/late/latest.csv"), null);
  });
});

gatewayTest(
  "S3Store writer: a part whose bytes do not match its Content-MD5 is refused, nothing is stored",
  async () => {
    let corrupt = false;
    await withS3("rgw", async ({ s3, store, raw }) => {
      const key = "org/o1/experiments/md5/latest.csv";
      const previous = bytes(500, 1);
      await put(store, key, previous);
      corrupt = true;
      // One part sent at commit, and parts streamed by lib-storage.
      for (const size of [3000, 12 * MIB]) {
        const writer = await store.createWriter(key);
        const error = await (async () => {
          try {
            for (let at = 0; at < size; at += MIB) {
              await writer.write(bytes(Math.min(MIB, size - at), at));
            }
            await writer.commit();
          } catch (error) {
            return error;
          }
          assert.fail(`a ${size}-byte write with altered parts succeeded`);
        })();
        assert.ok(error instanceof StorageError, String(error));
        const cause = error.cause as { name?: string; $metadata?: { httpStatusCode?: number } };
        assert.equal(cause?.name, "BadDigest", String(cause));
        assert.equal(cause?.$metadata?.httpStatusCode, 400);
        await writer.abort();
        assert.deepEqual(await read(store, key), previous);
        assert.deepEqual(await pendingUploads("rgw", s3, raw), []);
      }
    }, (_s3, raw) =>
      recording(raw, [], (command, forward) => {
        // A byte changed in transit, after the writer computed the part's Content-MD5.
        const input = (command as { input: { Body?: unknown; ContentMD5?: string } }).input;
        if (corrupt && command instanceof UploadPartCommand && input.Body instanceof Uint8Array) {
          assert.ok(input.ContentMD5, "a part without Content-MD5");
          const body = input.Body.slice();
          body[body.length >> 1] ^= 0xff;
          input.Body = body;
        }
        return forward();
      }));
  },
);

gatewayTest(
  "S3Store sweep aborts the store's multipart uploads older than 24 hours, not newer ones",
  async () => {
    await withS3("rgw", async ({ s3, store, raw }) => {
      for (const name of ["a", "b"]) {
        await raw.send(
          new CreateMultipartUploadCommand({
            Bucket: s3.bucket,
            Key: `org/o1/experiments/${name}/latest.csv`,
          }),
        );
      }
      assert.equal(await store.sweep(), 0);
      assert.equal((await pendingUploads("rgw", s3, raw))?.length, 2);
      // A day and an hour later, as the timer would see them.
      const later = new Date(Date.now() + 25 * 60 * 60 * 1000);
      assert.equal(await sweepMultipartUploads(raw, s3.bucket, later), 2);
      assert.deepEqual(await pendingUploads("rgw", s3, raw), []);
    });
  },
);

gatewayTest(
  "S3Store open creates a bucket in the gateway's zonegroup and names a region it does not know",
  async () => {
    await withS3("rgw", async ({ s3, raw }) => {
      // A region other than us-east-1 is sent as the LocationConstraint, which the gateway checks
      // against its zonegroup's name ("default" on a fresh cluster); it signs with any region.
      const created = new S3Store({
        ...storeOptions(s3),
        region: "default",
        bucket: `${s3.bucket}-zonegroup`,
        createBucket: true,
      });
      const unknown = new S3Store({
        ...storeOptions(s3),
        region: "eu-west-1",
        bucket: `${s3.bucket}-elsewhere`,
        createBucket: true,
      });
      try {
        await created.open();
        await raw.send(new HeadBucketCommand({ Bucket: `${s3.bucket}-zonegroup` }));
        await put(created, "k.csv", bytes(3, 1));
        assert.equal((await created.head("k.csv"))?.size, 3);
        await created.delete("k.csv");
        const error = await unknown.open().then(() => null, (error) => error);
        assert.ok(error instanceof StorageError, String(error));
        assert.match(error.message, /InvalidLocationConstraint/);
        assert.doesNotMatch(error.message, /\n/);
      } finally {
        await created.close();
        await unknown.close();
        await raw.send(new DeleteBucketCommand({ Bucket: `${s3.bucket}-zonegroup` }));
      }
    });
  },
);
