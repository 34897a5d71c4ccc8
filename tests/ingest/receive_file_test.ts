/**
 * `receiveIntoFile`: a body piped into a real local temporary file (the local store's spool),
 * with the file's growth standing for the body's progress.
 */
import { assert, assertEquals, assertRejects } from "../_assert.ts";
import { receiveIntoFile } from "../../src/ingest/receive.ts";
import { ApiError } from "../../src/http/errors.ts";
import { copyBody, LocalStore } from "../../src/storage/local_store.ts";
import type { FileSpool, ObjectWriter } from "../../src/storage/object_store.ts";
import { StorageError } from "../../src/storage/object_store.ts";
import { UrlSigner } from "../../src/crypto/url_signer.ts";
import { Rng } from "../_faults.ts";

async function withSpool(fn: (writer: ObjectWriter, spool: FileSpool) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "abn-spool-" });
  try {
    const store = new LocalStore({
      dataDir: dir,
      signer: new UrlSigner(new Uint8Array(32).fill(3)),
      publicUrl: "http://127.0.0.1:1",
    });
    await store.open();
    const writer = await store.createWriter("org/o/experiments/e/latest.csv");
    assert(writer.spool, "the local store offers its temporary file");
    try {
      await fn(writer, writer.spool);
    } finally {
      await writer.abort();
    }
    assertEquals([...Deno.readDirSync(`${dir}/tmp`)], [], "the temporary file is gone");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function bytes(length: number, seed: number): Uint8Array<ArrayBuffer> {
  const rng = new Rng(seed);
  return Uint8Array.from({ length }, () => rng.int(256));
}

/** `first`, then nothing until `release()`. */
function stalling(first: Uint8Array): { body: ReadableStream<Uint8Array>; release(): void } {
  let release!: () => void;
  const held = new Promise<void>((r) => release = r);
  let sent = false;
  return {
    body: new ReadableStream({
      async pull(controller) {
        if (!sent) {
          sent = true;
          controller.enqueue(first);
          return;
        }
        await held;
        controller.close();
      },
    }),
    release,
  };
}

const options = { maxBytes: 1 << 30, idleTimeoutMs: 5_000, tickMs: 20 };

Deno.test("receiveIntoFile stores every byte of the body and answers the file's size", async () => {
  await withSpool(async (writer, spool) => {
    const body = bytes(3_000_000, 1);
    const pieces = [body.subarray(0, 1), body.subarray(1, 70_000), body.subarray(70_000)];
    const size = await receiveIntoFile(ReadableStream.from(pieces), spool, options);
    assertEquals(size, body.length);
    assertEquals(await Deno.readFile(spool.path), body);
    assertEquals((await writer.commit()).size, body.length);
  });
});

/**
 * A byte stream (as a request's body is) of `body`, in pieces of `sizes` bytes in turn: read in
 * place by a BYOB reader, a piece larger than the reader's view comes in several reads.
 */
function byteStream(body: Uint8Array, sizes: number[]): ReadableStream<Uint8Array> {
  let at = 0;
  let turn = 0;
  return new ReadableStream({
    type: "bytes",
    pull(controller) {
      if (at >= body.length) {
        controller.close();
        controller.byobRequest?.respond(0);
        return;
      }
      const size = sizes[turn++ % sizes.length];
      controller.enqueue(body.slice(at, at += size));
    },
  });
}

Deno.test("receiveIntoFile stores every byte of a byte stream, read in place", async () => {
  await withSpool(async (writer, spool) => {
    // Pieces below, at and above the copy's 1 MiB view, and a last short one.
    const body = bytes(5_000_000, 7);
    const stream = byteStream(body, [1, 65_536, 1_048_576, 2_500_000, 333]);
    const size = await receiveIntoFile(stream, spool, options);
    assertEquals(size, body.length);
    assertEquals(await Deno.readFile(spool.path), body);
    assertEquals((await writer.commit()).size, body.length);
  });
});

Deno.test("receiveIntoFile shows every chunk to `see`, in order, as it is written", async () => {
  await withSpool(async (_writer, spool) => {
    const body = bytes(5_000_000, 11);
    const stream = byteStream(body, [1, 65_536, 1_048_576, 2_500_000, 333]);
    const seen: Uint8Array[] = [];
    const size = await receiveIntoFile(stream, spool, {
      ...options,
      // A copy: the chunk's buffer is read into again once its write is done.
      see: (chunk) => seen.push(chunk.slice()),
    });
    assertEquals(size, body.length);
    const joined = new Uint8Array(seen.reduce((n, c) => n + c.length, 0));
    seen.reduce((at, c) => (joined.set(c, at), at + c.length), 0);
    assertEquals(joined, body);
    assert(seen.every((c) => c.length <= 1_048_576), "at most a MiB at a time");
    assertEquals(await Deno.readFile(spool.path), body);
  });
});

Deno.test("receiveIntoFile stops at a refusal from `see` with its reason, the chunk written", async () => {
  await withSpool(async (_writer, spool) => {
    const stop = new AbortController();
    const refused = new ApiError("invalid_date", "line 2: not a date");
    let cancelled: unknown = null;
    let chunks = 0;
    const body = new ReadableStream<Uint8Array>({
      type: "bytes",
      pull(controller) {
        controller.enqueue(bytes(1000, 12 + chunks++));
      },
      cancel(reason) {
        cancelled = reason;
      },
    });
    let seen = 0;
    const error = await assertRejects(
      () =>
        receiveIntoFile(body, spool, {
          ...options,
          signal: stop.signal,
          see: () => {
            if (++seen === 3) stop.abort(refused);
          },
        }),
      ApiError,
    );
    assertEquals(error, refused);
    assertEquals(seen, 3, "nothing is shown after the refusal");
    assertEquals(cancelled, refused, "the body was cancelled with the reason");
    assertEquals((await Deno.stat(spool.path)).size, 3000);
  });
});

Deno.test("receiveIntoFile tells the file's size as it grows, never more than was written", async () => {
  await withSpool(async (_writer, spool) => {
    const body = bytes(200_000, 4);
    let at = 0;
    const slow = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (at >= body.length) return controller.close();
        await new Promise((r) => setTimeout(r, 30));
        controller.enqueue(body.subarray(at, at += 20_000));
      },
    });
    const sizes: number[] = [];
    const size = await receiveIntoFile(slow, spool, { ...options, onSize: (n) => sizes.push(n) });
    assertEquals(size, body.length);
    // Ten pieces 30 ms apart, looked at every 20 ms: a growing series within the body.
    assert(sizes.length >= 5, `${sizes.length} sizes`);
    assert(sizes.every((n, i) => n >= (sizes[i - 1] ?? 0) && n <= body.length), `${sizes}`);
    assert(new Set(sizes).size >= 3, `${sizes}`);
  });
});

Deno.test("receiveIntoFile abandons a body whose file stops growing with 408", async () => {
  await withSpool(async (_writer, spool) => {
    const { body, release } = stalling(bytes(1000, 2));
    const started = performance.now();
    const error = await assertRejects(
      () => receiveIntoFile(body, spool, { ...options, idleTimeoutMs: 300 }),
      ApiError,
    );
    release();
    assertEquals(error.code, "body_timeout");
    const took = performance.now() - started;
    assert(took >= 300 && took < 2_000, `took ${took.toFixed(0)} ms`);
  });
});

Deno.test("receiveIntoFile abandons a body below the minimum rate with 408", async () => {
  await withSpool(async (_writer, spool) => {
    let sent = 0;
    const trickle = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (sent++ === 100) return controller.close();
        await new Promise((r) => setTimeout(r, 30));
        controller.enqueue(bytes(5, sent));
      },
    });
    const error = await assertRejects(
      () =>
        receiveIntoFile(trickle, spool, {
          ...options,
          minBytesPerSecond: 1_000,
          minRateAfterMs: 200,
        }),
      ApiError,
    );
    assertEquals(error.code, "body_timeout");
    assert(/below the minimum of 1000 bytes\/s/.test(error.message), error.message);
  });
});

Deno.test("receiveIntoFile fails a file that holds less than the declared length", async () => {
  await withSpool(async (_writer, spool) => {
    const body = bytes(5_000, 7);
    const error = await assertRejects(
      () =>
        receiveIntoFile(ReadableStream.from([body]), spool, { ...options, expectedBytes: 5_001 }),
      StorageError,
    );
    assert(/Only 5000 of the body's 5001 bytes/.test(error.message), error.message);
  });
});

Deno.test("receiveIntoFile refuses a body past the limit with 413", async () => {
  await withSpool(async (_writer, spool) => {
    const error = await assertRejects(
      () =>
        receiveIntoFile(ReadableStream.from([bytes(10_001, 3)]), spool, {
          ...options,
          maxBytes: 10_000,
        }),
      ApiError,
    );
    assertEquals(error.code, "payload_too_large");
  });
});

/** Receives `body` with a signal that a refusal aborts 100 ms in; answers the error and it. */
async function refusedMidway(body: ReadableStream<Uint8Array>, spool: FileSpool) {
  const stop = new AbortController();
  const refused = new ApiError("invalid_date", "line 2: not a date");
  setTimeout(() => stop.abort(refused), 100);
  const error = await assertRejects(
    () => receiveIntoFile(body, spool, { ...options, signal: stop.signal }),
    ApiError,
  );
  return { error, refused };
}

Deno.test("receiveIntoFile throws the reason of an aborted signal and stops the body", async () => {
  await withSpool(async (_writer, spool) => {
    const { body, release } = stalling(bytes(100, 4));
    const { error, refused } = await refusedMidway(body, spool);
    release();
    assertEquals(error, refused);
  });
});

Deno.test("receiveIntoFile stops a byte stream at an aborted signal and cancels it", async () => {
  await withSpool(async (_writer, spool) => {
    let cancelled: unknown = null;
    let sent = false;
    const body = new ReadableStream<Uint8Array>({
      type: "bytes",
      pull(controller) {
        if (sent) return new Promise<void>(() => {}); // nothing more, ever
        sent = true;
        controller.enqueue(bytes(1000, 8));
      },
      cancel(reason) {
        cancelled = reason;
      },
    });
    const { error, refused } = await refusedMidway(body, spool);
    assertEquals(error, refused);
    assertEquals(cancelled, refused, "the body was cancelled with the reason");
    assertEquals((await Deno.stat(spool.path)).size, 1000);
  });
});

Deno.test("receiveIntoFile tells a client that went away from a file that failed", async () => {
  await withSpool(async (_writer, spool) => {
    let sent = false;
    const broken = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent) return controller.error(new Deno.errors.BadResource("connection gone"));
        sent = true;
        controller.enqueue(bytes(100, 5));
      },
    });
    const error = await assertRejects(() => receiveIntoFile(broken, spool, options), ApiError);
    assertEquals(error.code, "request_aborted");
  });
  // A real device that is always full: writing to it fails with ENOSPC (the store's own copy).
  const spool: FileSpool = {
    path: "/dev/full",
    pipeFrom: async (body, signal) => {
      const full = await Deno.open("/dev/full", { write: true });
      try {
        await copyBody(body, full, signal);
      } finally {
        full.close();
      }
    },
    size: () => Promise.resolve(0),
  };
  const body = bytes(300_000, 6);
  const chunks = [
    body.subarray(0, 100_000),
    body.subarray(100_000, 200_000),
    body.subarray(200_000),
  ];
  const error = await assertRejects(
    () => receiveIntoFile(ReadableStream.from(chunks), spool, options),
    StorageError,
  );
  assert(/Cannot write to local storage/.test(error.message), error.message);
  assertEquals((error.cause as { code?: string }).code, "ENOSPC");
});
