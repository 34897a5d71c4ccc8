import { assert, assertEquals, assertRejects } from "../_assert.ts";
import { limitBody } from "../../src/upload/limits.ts";
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
