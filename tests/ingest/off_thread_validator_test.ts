/**
 * `OffThreadValidator.follow`: the worker reads a file while the test is still writing it.
 */
import { assert, assertEquals, assertRejects } from "../_assert.ts";
import { createHash } from "node:crypto";
import {
  LARGE_SESSION_BYTES,
  OffThreadValidator,
  ValidatorThread,
} from "../../src/ingest/off_thread_validator.ts";
import { ValidationError } from "../../src/pipeline/mod.ts";

function csv(rows: number, badLine?: number): Uint8Array<ArrayBuffer> {
  const lines = ["user_id,variant,date,converted,revenue"];
  for (let i = 2; i <= rows + 1; i++) {
    lines.push(
      i === badLine ? `u${i},A,2026-13-01,1,2` : `u${i},${i % 2 ? "A" : "B"},2026-01-02,1,${i}.5`,
    );
  }
  return new TextEncoder().encode(lines.join("\n") + "\n");
}

/** Writes `data` to `path` in pieces with pauses, as a slow body would arrive. */
async function writeSlowly(path: string, data: Uint8Array, pieces: number): Promise<void> {
  const file = await Deno.open(path, { write: true, append: true });
  try {
    const size = Math.ceil(data.length / pieces);
    for (let at = 0; at < data.length; at += size) {
      await file.write(data.subarray(at, at + size));
      await new Promise((r) => setTimeout(r, 5));
    }
  } finally {
    file.close();
  }
}

Deno.test("a follow validates and hashes a file while it grows, then answers at its final size", async () => {
  const dir = await Deno.makeTempDir({ prefix: "abn-follow-" });
  const thread = new ValidatorThread();
  try {
    const data = csv(200_000);
    const paths = [`${dir}/a.part`, `${dir}/b.part`];
    for (const path of paths) await Deno.writeFile(path, new Uint8Array(0));
    const errors: Error[] = [];
    // Two at once: the worker takes turns between them.
    const follows = paths.map((path) =>
      OffThreadValidator.follow(thread, path, (e) => errors.push(e))
    );
    await Promise.all(paths.map((path, i) => writeSlowly(path, data, 20 + i * 7)));
    const results = await Promise.all(follows.map((f) => f.finish(data.length)));
    for (const result of results) {
      assertEquals(result.summary.rows, 200_000);
      assertEquals(result.sha256, createHash("sha256").update(data).digest("hex"));
    }
    assertEquals(errors, []);
  } finally {
    thread.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a follow reports the first bad line while the file is still being written", async () => {
  const dir = await Deno.makeTempDir({ prefix: "abn-follow-" });
  const thread = new ValidatorThread();
  try {
    const data = csv(100_000, 777);
    const path = `${dir}/bad.part`;
    await Deno.writeFile(path, data.subarray(0, 100_000)); // line 777 is in there
    let heard = null as Error | null;
    const follow = OffThreadValidator.follow(thread, path, (e) => heard = e);
    for (let i = 0; i < 200 && heard === null; i++) await new Promise((r) => setTimeout(r, 10));
    assert(heard !== null, "the error was heard before the end of the body");
    assert(heard instanceof ValidationError);
    assert(/line 777/.test(heard.message), heard.message);
    await assertRejects(() => follow.finish(data.length), ValidationError);
    follow.abort();
    // A file shorter than its announced size is an error, not a summary.
    const short = `${dir}/short.part`;
    await Deno.writeFile(short, csv(10));
    const cut = OffThreadValidator.follow(thread, short, () => {});
    await assertRejects(() => cut.finish(csv(10).length + 5), Error, "ended at");
  } finally {
    thread.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the validator thread ends at once after a large session, and stays after a small one", async () => {
  const dir = await Deno.makeTempDir({ prefix: "abn-follow-" });
  // An idle time no test waits for: only the size of the session can end the thread.
  const thread = new ValidatorThread(60_000);
  try {
    const small = csv(1_000);
    const large = csv(600_000);
    assert(large.length >= LARGE_SESSION_BYTES, `${large.length} bytes`);
    await Deno.writeFile(`${dir}/small.part`, small);
    await Deno.writeFile(`${dir}/large.part`, large);
    const follow = (name: string, size: number) =>
      OffThreadValidator.follow(thread, `${dir}/${name}`, () => {}).finish(size);
    assertEquals((await follow("small.part", small.length)).summary.rows, 1_000);
    assert(thread.running, "kept after a small session");
    // A large session beside another one: the thread stays while the other is open.
    const other = OffThreadValidator.follow(thread, `${dir}/small.part`, () => {});
    assertEquals((await follow("large.part", large.length)).summary.rows, 600_000);
    assert(thread.running, "kept while another session is open");
    await other.finish(small.length);
    assert(thread.running, "the small session that closed last keeps it");
    assertEquals((await follow("large.part", large.length)).summary.rows, 600_000);
    assert(!thread.running, "ended as the large session closed");
    // Batches count too, and a later upload starts the thread again.
    const batches = new OffThreadValidator(thread, () => {});
    for (let at = 0; at < large.length; at += 1 << 20) {
      batches.push(large.slice(at, at + (1 << 20)));
    }
    assertEquals((await batches.finish()).summary.bytes, large.length);
    assert(!thread.running, "ended after a large session of batches");
  } finally {
    thread.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the validator thread ends once idle, and a later upload starts it again", async () => {
  const dir = await Deno.makeTempDir({ prefix: "abn-follow-" });
  const thread = new ValidatorThread(50);
  try {
    const data = csv(1_000);
    const path = `${dir}/a.part`;
    await Deno.writeFile(path, data);
    for (let round = 0; round < 2; round++) {
      const result = await OffThreadValidator.follow(thread, path, () => {}).finish(data.length);
      assertEquals(result.summary.rows, 1_000);
      assert(thread.running, "up right after a session");
      await new Promise((r) => setTimeout(r, 150));
      assert(!thread.running, "ended after the idle time");
    }
    // An aborted session counts as ended too.
    OffThreadValidator.follow(thread, path, () => {}).abort();
    await new Promise((r) => setTimeout(r, 150));
    assert(!thread.running, "ended after an abort");
  } finally {
    thread.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
