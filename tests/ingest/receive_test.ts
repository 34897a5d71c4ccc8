/**
 * `receiveBody` on both kinds of body: a byte stream (what `Deno.serve` hands over, read in place
 * with a BYOB reader) and a plain stream (copied from its own chunks).
 */
import { assert, assertEquals, assertRejects } from "../_assert.ts";
import { receiveBody } from "../../src/ingest/receive.ts";
import { ApiError } from "../../src/http/errors.ts";
import type { ObjectInfo, ObjectWriter } from "../../src/storage/object_store.ts";

/** Keeps copies of what it was given, as a store must (the caller reuses its buffers). */
class MemoryWriter implements ObjectWriter {
  writes: Uint8Array[] = [];
  write(chunk: Uint8Array): Promise<void> {
    this.writes.push(chunk.slice());
    return Promise.resolve();
  }
  commit(): Promise<ObjectInfo> {
    return Promise.reject(new Error("not used"));
  }
  abort(): Promise<void> {
    return Promise.resolve();
  }
  bytes(): Uint8Array {
    return concat(this.writes);
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** Deterministic bytes and piece sizes from a seed. */
function data(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  let x = seed;
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

function pieces(bytes: Uint8Array, seed: number, most: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  let x = seed;
  for (let at = 0; at < bytes.length;) {
    x = (x * 1103515245 + 12345) >>> 0;
    const n = Math.min(bytes.length - at, 1 + (x % most));
    out.push(bytes.slice(at, at + n));
    at += n;
  }
  return out;
}

function byteStream(parts: Uint8Array[], hold?: Promise<void>): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream({
    type: "bytes",
    async pull(controller) {
      if (i === 1 && hold) await hold;
      if (i < parts.length) {
        controller.enqueue(parts[i++].slice());
        return;
      }
      controller.close();
      // A BYOB read waiting at the end resolves once its request is answered (as Deno's own
      // request bodies do).
      controller.byobRequest?.respond(0);
    },
  });
}

function plainStream(parts: Uint8Array[], hold?: Promise<void>): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream({
    async pull(controller) {
      if (i === 1 && hold) await hold;
      if (i < parts.length) controller.enqueue(parts[i++].slice());
      else controller.close();
    },
  });
}

const KINDS = [["byte stream", byteStream], ["plain stream", plainStream]] as const;
const options = { maxBytes: 1 << 30, idleTimeoutMs: 5_000, batchBytes: 4096, maxBuffers: 3 };

for (const [kind, stream] of KINDS) {
  Deno.test(`receiveBody stores every byte in order in full batches (${kind})`, async () => {
    for (const seed of [1, 2, 3]) {
      const body = data(50_000 + seed * 777, seed);
      const writer = new MemoryWriter();
      const seen: Uint8Array[] = [];
      const total = await receiveBody(stream(pieces(body, seed, 9000)), writer, {
        ...options,
        onChunk: (chunk) => seen.push(chunk.slice()),
      });
      assertEquals(total, body.length);
      assertEquals(writer.bytes(), body);
      assertEquals(concat(seen), body);
      // Every write but the last fills a batch.
      for (const write of writer.writes.slice(0, -1)) assertEquals(write.length, 4096);
    }
  });

  Deno.test(`receiveBody hands each batch to onBatch and reuses the buffers it gives back (${kind})`, async () => {
    const body = data(40_000, 7);
    const writer = new MemoryWriter();
    const batches: Uint8Array[] = [];
    await receiveBody(stream(pieces(body, 7, 5000)), writer, {
      ...options,
      onBatch(batch, pool) {
        batches.push(batch.slice());
        pool.give(batch.buffer as ArrayBuffer);
      },
    });
    assertEquals(concat(batches), body);
  });

  Deno.test(`receiveBody refuses one byte over the limit with 413 and takes exactly the limit (${kind})`, async () => {
    const body = data(10_000, 4);
    const exact = await receiveBody(stream(pieces(body, 4, 3000)), new MemoryWriter(), {
      ...options,
      maxBytes: 10_000,
    });
    assertEquals(exact, 10_000);
    const error = await assertRejects(
      () =>
        receiveBody(stream(pieces(body, 4, 3000)), new MemoryWriter(), {
          ...options,
          maxBytes: 9_999,
        }),
      ApiError,
    );
    assertEquals(error.code, "payload_too_large");
  });

  Deno.test(`receiveBody abandons a body that stops arriving with 408 (${kind})`, async () => {
    let release!: () => void;
    const hold = new Promise<void>((resolve) => release = resolve);
    const started = performance.now();
    const error = await assertRejects(
      () =>
        receiveBody(stream([data(100, 1), data(100, 2)], hold), new MemoryWriter(), {
          ...options,
          idleTimeoutMs: 200,
        }),
      ApiError,
    );
    release();
    assertEquals(error.code, "body_timeout");
    const took = performance.now() - started;
    assert(took >= 190 && took < 2_000, `took ${took.toFixed(0)} ms`);
  });

  Deno.test(`receiveBody answers request_aborted when the body breaks (${kind})`, async () => {
    let i = 0;
    const broken = new ReadableStream<Uint8Array>({
      ...(kind === "byte stream" ? { type: "bytes" as const } : {}),
      pull(controller) {
        if (i++ === 0) controller.enqueue(data(100, 1));
        else controller.error(new Error("connection reset"));
      },
    });
    const error = await assertRejects(
      () => receiveBody(broken, new MemoryWriter(), options),
      ApiError,
    );
    assertEquals(error.code, "request_aborted");
  });
}

/** A body of `pieces` pieces of `size` bytes, one every `everyMs`. */
function paced(pieces: number, size: number, everyMs: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    async pull(controller) {
      if (sent === pieces) return controller.close();
      await new Promise((r) => setTimeout(r, everyMs));
      controller.enqueue(data(size, ++sent));
    },
  });
}

Deno.test("receiveBody abandons a body trickling below the minimum rate with 408, once the grace period passed", async () => {
  // 10 bytes every 40 ms (250 B/s): never silent long enough for the idle timeout.
  const started = performance.now();
  const error = await assertRejects(
    () =>
      receiveBody(paced(100, 10, 40), new MemoryWriter(), {
        ...options,
        idleTimeoutMs: 1_000,
        minBytesPerSecond: 1_000,
        minRateAfterMs: 300,
      }),
    ApiError,
  );
  assertEquals(error.code, "body_timeout");
  assert(/below the minimum of 1000 bytes\/s/.test(error.message), error.message);
  const took = performance.now() - started;
  assert(took >= 300 && took < 1_500, `took ${took.toFixed(0)} ms`);
});

Deno.test("receiveBody keeps a slow body that stays above the minimum rate", async () => {
  // 100 bytes every 20 ms (about 5 kB/s) for about 0.6 s against a minimum of 1000 B/s.
  const total = await receiveBody(paced(30, 100, 20), new MemoryWriter(), {
    ...options,
    minBytesPerSecond: 1_000,
    minRateAfterMs: 100,
  });
  assertEquals(total, 3_000);
});

Deno.test("receiveBody answers 0 for an empty or absent body", async () => {
  assertEquals(await receiveBody(null, new MemoryWriter(), options), 0);
  const writer = new MemoryWriter();
  assertEquals(await receiveBody(byteStream([]), writer, options), 0);
  assertEquals(writer.writes, []);
});
