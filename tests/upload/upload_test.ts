/**
 * `Uploads` over an in-memory store: one way through for both routes, what is committed and what
 * is aborted, what is counted, and when the connection is to be closed.
 */
import { assert, assertEquals, assertRejects } from "../_assert.ts";
import { DeliveryHub } from "../../src/deliveries.ts";
import type { Delivery } from "../../src/deliveries.ts";
import { ServiceError } from "../../src/errors.ts";
import { createLogger } from "../../src/log.ts";
import { Metrics } from "../../src/metrics.ts";
import type {
  ListPage,
  ObjectInfo,
  ObjectStore,
  ObjectWriter,
} from "../../src/storage/object_store.ts";
import { StorageError } from "../../src/storage/object_store.ts";
import { type UploadCall, Uploads } from "../../src/upload/upload.ts";

const encoder = new TextEncoder();
const CSV = encoder.encode(
  "user_id,variant,date,converted\nu1,A,2026-01-01,1\nu2,B,2026-01-01,0\n",
);
const KEY = "org/o1/experiments/e1/latest.csv";

/** Objects in memory; `failWriteAfter` bytes makes a write fail (a full disk). */
class MemoryStore implements ObjectStore {
  readonly driver = "local" as const;
  readonly bucket = "memory";
  readonly objects = new Map<string, Uint8Array>();
  commits = 0;
  aborts = 0;
  failWriteAfter = Infinity;

  open(): Promise<void> {
    return Promise.resolve();
  }

  createWriter(key: string): Promise<ObjectWriter> {
    const parts: Uint8Array[] = [];
    let written = 0;
    return Promise.resolve({
      write: (chunk: Uint8Array) => {
        written += chunk.length;
        if (written > this.failWriteAfter) {
          return Promise.reject(new StorageError("Cannot write to memory"));
        }
        parts.push(chunk.slice());
        return Promise.resolve();
      },
      commit: () => {
        this.commits++;
        const bytes = new Uint8Array(written);
        let at = 0;
        for (const part of parts) {
          bytes.set(part, at);
          at += part.length;
        }
        this.objects.set(key, bytes);
        return Promise.resolve(this.#info(key)!);
      },
      abort: () => {
        this.aborts++;
        return Promise.resolve();
      },
    });
  }

  #info(key: string): ObjectInfo | null {
    const bytes = this.objects.get(key);
    if (!bytes) return null;
    return { key, size: bytes.length, etag: `e${this.commits}`, lastModified: new Date() };
  }

  head(key: string): Promise<ObjectInfo | null> {
    return Promise.resolve(this.#info(key));
  }
  get(): Promise<null> {
    return Promise.resolve(null);
  }
  delete(): Promise<void> {
    return Promise.resolve();
  }
  list(): Promise<ListPage> {
    return Promise.resolve({ objects: [], nextCursor: null });
  }
  presignPut(): Promise<string> {
    return Promise.resolve("");
  }
  sweep(): Promise<number> {
    return Promise.resolve(0);
  }
}

function setup(options: { maxUploadBytes?: number; maxConcurrentUploads?: number } = {}) {
  const store = new MemoryStore();
  const metrics = new Metrics();
  const deliveries = new DeliveryHub({ log: createLogger({ sink: () => {} }) });
  const delivered: Delivery[] = [];
  deliveries.subscribe((delivery) => delivered.push(delivery));
  const uploads = new Uploads({
    store,
    metrics,
    deliveries,
    maxUploadBytes: options.maxUploadBytes ?? 1 << 30,
    bodyIdleTimeoutSeconds: 5,
    bodyMinBytesPerSecond: 0,
    maxConcurrentUploads: options.maxConcurrentUploads ?? 0,
  });
  return { store, metrics, delivered, uploads };
}

/** A request carrying `body`: bytes with their declared length, a stream as a chunked body. */
function call(
  body: Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array>,
  headers: Record<string, string> = {},
) {
  const length: Record<string, string> = body instanceof Uint8Array
    ? { "content-length": String(body.length) }
    : {};
  const req = new Request("http://x/", {
    method: "POST",
    body,
    headers: { ...length, ...headers },
  });
  const state = { closed: false };
  const upload: UploadCall = {
    req,
    logFields: {},
    closeConnection: () => state.closed = true,
  };
  return { upload, state };
}

function chunks(bytes: Uint8Array, size: number): ReadableStream<Uint8Array> {
  const parts: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += size) parts.push(bytes.slice(at, at + size));
  return ReadableStream.from(parts);
}

Deno.test("Uploads.upload stores every byte, then records and announces the checked delivery", async () => {
  const { store, metrics, delivered, uploads } = setup();
  const { upload, state } = call(chunks(CSV, 7));
  const stored = await uploads.upload(upload, { orgId: "o1", experimentId: "e1" });
  assertEquals(store.objects.get(KEY), CSV);
  assertEquals(stored.bytes, CSV.length);
  assertEquals(stored.summary.rows, 2);
  assertEquals(delivered.length, 1);
  assertEquals(delivered[0].validated, true);
  assertEquals(delivered[0].sha256, stored.sha256);
  assertEquals(delivered[0].hasDimensions, false);
  assertEquals(delivered[0].source, "upload");
  assertEquals(metrics.uploadsStored.get({ route: "upload" }), 1);
  assertEquals(metrics.bytesReceived.get({ route: "upload" }), CSV.length);
  assertEquals(upload.logFields.bytes_in, CSV.length);
  for (const step of ["receive_ms", "commit_ms", "record_ms"]) {
    assert(typeof upload.logFields[step] === "number", step);
  }
  assertEquals(state.closed, false);
});

Deno.test("Uploads.upload aborts a refused body: nothing committed, nothing announced, counted", async () => {
  const { store, metrics, delivered, uploads } = setup();
  const bad = encoder.encode("user_id,variant,date,converted\nu1,A,2026-02-30,1\n");
  const { upload } = call(bad);
  const error = await assertRejects(
    () => uploads.upload(upload, { orgId: "o1", experimentId: "e1" }),
    ServiceError,
  );
  assertEquals(error.code, "invalid_date");
  assertEquals([store.commits, store.aborts, delivered.length], [0, 1, 0]);
  assertEquals(metrics.uploadsRejected.get({ reason: "invalid_date" }), 1);
  assertEquals(metrics.bytesReceived.get({ route: "upload" }), bad.length);
  assertEquals(upload.logFields.receive_ms, undefined);
});

Deno.test("Uploads.upload answers a failed write as the store's error and aborts", async () => {
  const { store, metrics, uploads } = setup();
  store.failWriteAfter = 10;
  const { upload } = call(chunks(CSV, 8));
  await assertRejects(
    () => uploads.upload(upload, { orgId: "o1", experimentId: "e1" }),
    StorageError,
  );
  assertEquals([store.commits, store.aborts], [0, 1]);
  assertEquals(metrics.uploadsRejected.get({ reason: "storage_error" }), 1);
});

Deno.test("Uploads.upload answers a body that breaks as request_aborted and aborts", async () => {
  const { store, uploads } = setup();
  const broken = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(CSV.slice(0, 20));
      controller.error(new Error("connection reset"));
    },
  });
  const { upload } = call(broken);
  const error = await assertRejects(
    () => uploads.upload(upload, { orgId: "o1", experimentId: "e1" }),
    ServiceError,
  );
  assertEquals(error.code, "request_aborted");
  assertEquals([store.commits, store.aborts], [0, 1]);
});

Deno.test("Uploads.upload refuses before the body: a declared length over the limit, multipart", async () => {
  const { store, metrics, uploads } = setup({ maxUploadBytes: 10 });
  const { upload: big, state } = call(CSV);
  const tooLarge = await assertRejects(
    () => uploads.upload(big, { orgId: "o1", experimentId: "e1" }),
    ServiceError,
  );
  assertEquals(tooLarge.code, "payload_too_large");
  assertEquals(big.logFields.bytes_in, 0);
  assertEquals(state.closed, false); // the code's own answer closes it (see http/errors.ts)
  const { upload: form } = call(new Uint8Array(5), { "content-type": "multipart/form-data; b=x" });
  const multipart = await assertRejects(
    () => uploads.upload(form, { orgId: "o1", experimentId: "e1" }),
    ServiceError,
  );
  assertEquals(multipart.code, "multipart_not_supported");
  assertEquals([store.commits, store.aborts], [0, 0]);
  assertEquals(metrics.uploadsRejected.get({ reason: "payload_too_large" }), 1);
  assertEquals(metrics.uploadsRejected.get({ reason: "multipart_not_supported" }), 1);
});

Deno.test("Uploads asks to close the connection after a body of 1 MiB or more, stored or not", async () => {
  const { uploads } = setup();
  const rows = ["user_id,variant,date,m"];
  for (let i = 0; rows.length < 70_000; i++) rows.push(`u${i},${"AB"[i % 2]},2026-01-01,${i}`);
  const large = encoder.encode(rows.join("\n") + "\n");
  assert(large.length > 1024 * 1024);
  const stored = call(chunks(large, 65536));
  await uploads.upload(stored.upload, { orgId: "o1", experimentId: "e1" });
  assertEquals(stored.state.closed, true);
  const refused = call(encoder.encode("user_id,variant,date,m\nu1,A\n")); // a short row
  await assertRejects(
    () => uploads.upload(refused.upload, { orgId: "o1", experimentId: "e2" }),
    ServiceError,
  );
  assertEquals(refused.state.closed, false);
  const declared = call(new Uint8Array(large.length)); // a NUL at once, 1 MiB declared
  await assertRejects(
    () => uploads.upload(declared.upload, { orgId: "o1", experimentId: "e3" }),
    ServiceError,
  );
  assertEquals(declared.state.closed, true);
});

Deno.test("Uploads.put stores the body unchecked and delivers it for the analysis to check", async () => {
  const { store, metrics, delivered, uploads } = setup();
  const body = encoder.encode("not, a dataset\n");
  const { upload } = call(body);
  const info = await uploads.put(upload, KEY, { orgId: "o1", experimentId: "e1" }, body.length);
  assertEquals(info.size, body.length);
  assertEquals(store.objects.get(KEY), body);
  assertEquals(delivered.map((d) => [d.validated, d.sha256, d.source]), [
    [false, undefined, "presigned_put"],
  ]);
  assertEquals(metrics.bytesReceived.get({ route: "presigned_put" }), body.length);
  assertEquals(upload.logFields.commit_ms !== undefined, true);
});

Deno.test("Uploads.put refuses a body of another length than the URL was signed for", async () => {
  const { store, metrics, uploads } = setup();
  const target = { orgId: "o1", experimentId: "e1" };
  const cases: [Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array>, RegExp][] = [
    [CSV.slice(0, 10), /Content-Length is 10/],
    [chunks(CSV.slice(0, 10), 3), /received 10$/],
    [chunks(CSV, 3), /received more$/],
  ];
  for (const [body, message] of cases) {
    const { upload } = call(body);
    const error = await assertRejects(() => uploads.put(upload, KEY, target, 20), ServiceError);
    assertEquals(error.code, "invalid_signature");
    assert(message.test(error.message), error.message);
  }
  assertEquals(store.commits, 0);
  assertEquals(metrics.uploadsRejected.get({ reason: "invalid_signature" }), 3);
});

Deno.test("Uploads answers 503 when every slot is taken, and frees the slot after each body", async () => {
  const { uploads } = setup({ maxConcurrentUploads: 1 });
  let release!: () => void;
  const held = new Promise<void>((resolve) => release = resolve);
  const slow = new ReadableStream<Uint8Array>({
    async pull(controller) {
      await held;
      controller.enqueue(CSV);
      controller.close();
    },
  });
  const first = uploads.upload(call(slow).upload, { orgId: "o1", experimentId: "e1" });
  await new Promise((resolve) => setTimeout(resolve, 10));
  assertEquals(uploads.inProgress, 1);
  assert(uploads.busy);
  const second = await assertRejects(
    () => uploads.upload(call(CSV).upload, { orgId: "o1", experimentId: "e2" }),
    ServiceError,
  );
  assertEquals(second.code, "service_unavailable");
  release();
  await first;
  assertEquals(uploads.inProgress, 0);
  await uploads.upload(call(CSV).upload, { orgId: "o1", experimentId: "e2" });
});
