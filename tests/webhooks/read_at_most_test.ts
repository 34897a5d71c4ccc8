import { assertEquals } from "../_assert.ts";
import { readAtMost } from "../../src/webhooks/read_at_most.ts";

function source(chunks: Uint8Array[], fail = false) {
  const state = { cancelled: false, pulled: 0 };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (state.pulled < chunks.length) {
        controller.enqueue(chunks[state.pulled++]);
      } else if (fail) {
        controller.error(new Error("connection reset"));
      } else {
        controller.close();
      }
    },
    cancel() {
      state.cancelled = true;
    },
  });
  return { stream, state };
}

const bytes = (n: number, value = 1) => new Uint8Array(n).fill(value);

Deno.test("readAtMost reads a body within the limit whole", async () => {
  const { stream, state } = source([bytes(3, 1), bytes(2, 2)]);
  assertEquals(await readAtMost(stream, 5), {
    bytes: new Uint8Array([1, 1, 1, 2, 2]),
    cut: false,
  });
  assertEquals(state.cancelled, false);
  assertEquals(await readAtMost(null, 5), { bytes: new Uint8Array(0), cut: false });
});

Deno.test("readAtMost keeps the first bytes up to the limit and cancels the rest", async () => {
  const { stream, state } = source([bytes(4, 1), bytes(4, 2), bytes(4, 3), bytes(4, 4)]);
  const read = await readAtMost(stream, 6);
  assertEquals(read, { bytes: new Uint8Array([1, 1, 1, 1, 2, 2]), cut: true });
  assertEquals(state.cancelled, true);
  assertEquals(state.pulled < 4, true);
});

Deno.test("readAtMost cuts a body exactly at the limit only when more follows", async () => {
  const exact = source([bytes(4), bytes(4)]);
  assertEquals((await readAtMost(exact.stream, 8)).cut, false);
  const more = source([bytes(4), bytes(4), bytes(1)]);
  const read = await readAtMost(more.stream, 8);
  assertEquals([read.bytes.length, read.cut, more.state.cancelled], [8, true, true]);
});

Deno.test("readAtMost answers what arrived before a body failed", async () => {
  const { stream } = source([bytes(3, 7)], true);
  assertEquals(await readAtMost(stream, 10), { bytes: new Uint8Array([7, 7, 7]), cut: true });
});
