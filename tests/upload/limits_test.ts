import { assert, assertEquals, assertRejects } from "../_assert.ts";
import { limitBody } from "./_byte_stream.ts";
import { ServiceError } from "../../src/errors.ts";

/** A body of `chunks` chunks of `size` bytes; `pulled` counts the bytes handed out so far. */
function countingBody(chunks: number, size: number) {
  const state = { pulled: 0, cancelled: false };
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent === chunks) return controller.close();
      sent++;
      state.pulled += size;
      controller.enqueue(new Uint8Array(size));
    },
    cancel() {
      state.cancelled = true;
    },
  }, { highWaterMark: 0 });
  return { body, state };
}

async function drain(stream: ReadableStream<Uint8Array>): Promise<number> {
  let total = 0;
  for await (const chunk of stream) total += chunk.length;
  return total;
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  const error = await assertRejects(() => promise, ServiceError);
  return (error as ServiceError).code;
}

Deno.test("limitBody passes a body within its limits through unchanged", async () => {
  const { body } = countingBody(10, 1000);
  assertEquals(await drain(limitBody(body, { maxBytes: 10_000, idleTimeoutMs: 1000 })), 10_000);
});

Deno.test("limitBody refuses a body at the first chunk past the limit and cancels it", async () => {
  const { body, state } = countingBody(1024, 1024); // 1 MiB, chunked
  const code = await codeOf(drain(limitBody(body, { maxBytes: 16 * 1024, idleTimeoutMs: 1000 })));
  assertEquals(code, "payload_too_large");
  assert(state.pulled <= 17 * 1024, `read ${state.pulled} bytes`);
  assert(state.cancelled);
});

Deno.test("limitBody refuses a body where admit throws, at that chunk, and cancels it", async () => {
  const { body, state } = countingBody(64, 1024);
  const totals: number[] = [];
  const admit = (total: number) => {
    totals.push(total);
    if (total > 3000) throw new ServiceError("quota_exceeded", "Storage quota exceeded");
  };
  let handedOn = 0;
  const stream = limitBody(body, { maxBytes: 1 << 20, idleTimeoutMs: 1000, admit });
  const code = await codeOf((async () => {
    for await (const chunk of stream) handedOn += chunk.length;
  })());
  assertEquals(code, "quota_exceeded");
  assertEquals(totals, [1024, 2048, 3072]);
  assertEquals(handedOn, 2048); // the crossing chunk is not handed on
  assert(state.cancelled);
});

Deno.test("limitBody abandons a body that stops sending with 408", async () => {
  const stalled = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new Uint8Array(10));
    },
  });
  const started = performance.now();
  const code = await codeOf(drain(limitBody(stalled, { maxBytes: 100, idleTimeoutMs: 200 })));
  assertEquals(code, "body_timeout");
  assert(performance.now() - started < 2000);
});

Deno.test("limitBody ends a trickling body at its deadline", async () => {
  let timer: ReturnType<typeof setInterval> | undefined;
  const trickle = new ReadableStream<Uint8Array>({
    start(controller) {
      timer = setInterval(() => controller.enqueue(new Uint8Array(1)), 20);
    },
    cancel() {
      clearInterval(timer);
    },
  });
  const started = performance.now();
  const code = await codeOf(
    drain(limitBody(trickle, { maxBytes: 1e6, idleTimeoutMs: 1000, deadlineMs: 300 })),
  );
  clearInterval(timer);
  assertEquals(code, "body_timeout");
  const took = performance.now() - started;
  assert(took >= 250 && took < 2000, `took ${took} ms`);
});

Deno.test("limitBody does not count a slow consumer's time as the body's silence", async () => {
  const { body } = countingBody(3, 10);
  const reader = limitBody(body, { maxBytes: 100, idleTimeoutMs: 100 }).getReader();
  let total = 0;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 250)); // the consumer dawdles
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
  }
  assertEquals(total, 30);
});

Deno.test("limitBody refuses a body below the minimum rate once its grace period passed", async () => {
  let timer: ReturnType<typeof setInterval> | undefined;
  const slow = new ReadableStream<Uint8Array>({
    start(controller) {
      timer = setInterval(() => controller.enqueue(new Uint8Array(1)), 20);
    },
    cancel() {
      clearInterval(timer);
    },
  });
  const code = await codeOf(drain(limitBody(slow, {
    maxBytes: 1e6,
    idleTimeoutMs: 1000,
    minBytesPerSecond: 1000,
    minRateAfterMs: 200,
  })));
  clearInterval(timer);
  assertEquals(code, "body_timeout");
});

/** Deterministic bytes from a seed. */
function data(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  let x = seed;
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

/** `parts` as a byte stream (what `Deno.serve` hands over) or a plain one; `hold` delays the second. */
function bodyOf(
  kind: "byte" | "plain",
  parts: Uint8Array[],
  hold?: Promise<void>,
): ReadableStream<Uint8Array> {
  let i = 0;
  if (kind === "plain") {
    return new ReadableStream({
      async pull(controller) {
        if (i === 1 && hold) await hold;
        if (i < parts.length) controller.enqueue(parts[i++].slice());
        else controller.close();
      },
    });
  }
  return new ReadableStream({
    type: "bytes",
    async pull(controller) {
      if (i === 1 && hold) await hold;
      if (i < parts.length) {
        controller.enqueue(parts[i++].slice());
        return;
      }
      controller.close();
      controller.byobRequest?.respond(0);
    },
  });
}

async function collect(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts = await Array.fromAsync(stream);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

for (const kind of ["byte", "plain"] as const) {
  Deno.test(`limitBody passes every byte in order and counts them (${kind} stream)`, async () => {
    const body = data(50_000, 3);
    const parts = Array.from({ length: 10 }, (_, i) => body.subarray(i * 5000, (i + 1) * 5000));
    let counted = 0;
    const out = await collect(limitBody(bodyOf(kind, parts), {
      maxBytes: 1 << 30,
      idleTimeoutMs: 5000,
      onBytes: (bytes) => counted += bytes,
    }));
    assertEquals(out, body);
    assertEquals(counted, body.length);
  });

  Deno.test(`limitBody takes exactly the limit and refuses one byte more (${kind} stream)`, async () => {
    const body = data(10_000, 4);
    const parts = [body.subarray(0, 3000), body.subarray(3000)];
    const limits = (maxBytes: number) => ({ maxBytes, idleTimeoutMs: 5000 });
    assertEquals((await collect(limitBody(bodyOf(kind, parts), limits(10_000)))).length, 10_000);
    assertEquals(
      await codeOf(collect(limitBody(bodyOf(kind, parts), limits(9_999)))),
      "payload_too_large",
    );
  });

  Deno.test(`limitBody abandons a body that stops arriving with 408 after the idle time (${kind} stream)`, async () => {
    let release!: () => void;
    const hold = new Promise<void>((resolve) => release = resolve);
    const started = performance.now();
    const body = bodyOf(kind, [data(100, 1), data(100, 2)], hold);
    const code = await codeOf(collect(limitBody(body, { maxBytes: 1e6, idleTimeoutMs: 200 })));
    release();
    assertEquals(code, "body_timeout");
    const took = performance.now() - started;
    assert(took >= 190 && took < 2_000, `took ${took.toFixed(0)} ms`);
  });

  Deno.test(`limitBody answers request_aborted when the body breaks (${kind} stream)`, async () => {
    let i = 0;
    const broken = new ReadableStream<Uint8Array>({
      ...(kind === "byte" ? { type: "bytes" as const } : {}),
      pull(controller) {
        if (i++ === 0) controller.enqueue(data(100, 1));
        else controller.error(new Error("connection reset"));
      },
    });
    const code = await codeOf(collect(limitBody(broken, { maxBytes: 1e6, idleTimeoutMs: 5000 })));
    assertEquals(code, "request_aborted");
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

Deno.test("limitBody names the rate of a body below the minimum, once the grace period passed", async () => {
  // 10 bytes every 40 ms (250 B/s): never silent long enough for the idle timeout.
  const started = performance.now();
  const error = await assertRejects(
    () =>
      collect(limitBody(paced(100, 10, 40), {
        maxBytes: 1e6,
        idleTimeoutMs: 1_000,
        minBytesPerSecond: 1_000,
        minRateAfterMs: 300,
      })),
    ServiceError,
  );
  assertEquals(error.code, "body_timeout");
  assert(/below the minimum of 1000 bytes\/s/.test(error.message), error.message);
  const took = performance.now() - started;
  assert(took >= 300 && took < 1_500, `took ${took.toFixed(0)} ms`);
});

Deno.test("limitBody keeps a slow body that stays above the minimum rate", async () => {
  // 100 bytes every 20 ms (about 5 kB/s) for about 0.6 s against a minimum of 1000 B/s.
  const out = await collect(limitBody(paced(30, 100, 20), {
    maxBytes: 1e6,
    idleTimeoutMs: 5_000,
    minBytesPerSecond: 1_000,
    minRateAfterMs: 100,
  }));
  assertEquals(out.length, 3_000);
});

Deno.test("limitBody passes an empty body as an empty stream", async () => {
  assertEquals(
    await collect(limitBody(bodyOf("byte", []), { maxBytes: 10, idleTimeoutMs: 100 })),
    new Uint8Array(),
  );
});
