/**
 * `OffThreadValidator.follow`: the worker reads a file while the test is still writing it.
 */
import { assert, assertEquals, assertRejects } from "../_assert.ts";
import { createHash } from "node:crypto";
import { OffThreadValidator, ValidatorThread } from "../../src/ingest/off_thread_validator.ts";
import { WarmWorker } from "../../src/warm_worker.ts";
import { TallyWorkers } from "../../src/analysis/aggregate/tally_workers.ts";
import { aggregateThreaded } from "../../src/analysis/aggregate/_aggregate_threaded.ts";
import { CsvAggregator } from "../../src/analysis/aggregate/aggregate.ts";
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

/** Waits (at most a second) until the thread has handed its worker back. */
async function handedBack(thread: ValidatorThread): Promise<void> {
  for (let i = 0; i < 100 && thread.running; i++) await new Promise((r) => setTimeout(r, 10));
}

Deno.test("the validator thread hands its worker back once its last session closed", async () => {
  const dir = await Deno.makeTempDir({ prefix: "abn-follow-" });
  // A wait no test sees end: only the sessions decide when the worker goes back.
  const warm = new WarmWorker(60_000);
  const thread = new ValidatorThread(warm);
  try {
    const small = csv(1_000);
    const large = csv(600_000);
    await Deno.writeFile(`${dir}/small.part`, small);
    await Deno.writeFile(`${dir}/large.part`, large);
    const follow = (name: string, size: number) =>
      OffThreadValidator.follow(thread, `${dir}/${name}`, () => {}).finish(size);
    assertEquals((await follow("small.part", small.length)).summary.rows, 1_000);
    await handedBack(thread);
    assert(!thread.running && warm.idle, "handed back after its session");
    // The next session takes the waiting worker; another one beside it keeps it.
    const other = OffThreadValidator.follow(thread, `${dir}/small.part`, () => {});
    assert(thread.running && !warm.idle, "taken by the next session");
    assertEquals((await follow("large.part", large.length)).summary.rows, 600_000);
    await new Promise((r) => setTimeout(r, 50));
    assert(thread.running, "kept while another session is open");
    await other.finish(small.length);
    await handedBack(thread);
    assert(!thread.running && warm.idle, "handed back as the last session closed");
    // Batches too; the worker that comes back is the one that waited.
    const waiting = warm.take()!;
    warm.keep(waiting);
    const batches = new OffThreadValidator(thread, () => {});
    for (let at = 0; at < large.length; at += 1 << 20) {
      batches.push(large.slice(at, at + (1 << 20)));
    }
    assertEquals((await batches.finish()).summary.bytes, large.length);
    await handedBack(thread);
    const back = warm.take();
    assert(back === waiting, "the same worker came back");
    warm.keep(back!);
    // An aborted session hands it back too.
    OffThreadValidator.follow(thread, `${dir}/small.part`, () => {}).abort();
    await handedBack(thread);
    assert(!thread.running && warm.idle, "handed back after an abort");
  } finally {
    thread.stop();
    warm.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the validator thread's worker ends once it waited its time, and a later upload starts one", async () => {
  const dir = await Deno.makeTempDir({ prefix: "abn-follow-" });
  const warm = new WarmWorker(50);
  const thread = new ValidatorThread(warm);
  try {
    const data = csv(1_000);
    const path = `${dir}/a.part`;
    await Deno.writeFile(path, data);
    for (let round = 0; round < 2; round++) {
      const result = await OffThreadValidator.follow(thread, path, () => {}).finish(data.length);
      assertEquals(result.summary.rows, 1_000);
      await handedBack(thread);
      assert(warm.idle, "waits right after a session");
      await new Promise((r) => setTimeout(r, 150));
      assert(!warm.idle && !thread.running, "ended after its time");
    }
  } finally {
    thread.stop();
    warm.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an upload's worker then runs the aggregation, and the next upload's checks", async () => {
  const dir = await Deno.makeTempDir({ prefix: "abn-follow-" });
  const workers = new TallyWorkers(60_000);
  const thread = new ValidatorThread(workers);
  try {
    const data = csv(50_000);
    const path = `${dir}/a.part`;
    await Deno.writeFile(path, data);
    for (let round = 0; round < 2; round++) {
      const checked = await OffThreadValidator.follow(thread, path, () => {}).finish(data.length);
      assertEquals(checked.summary.rows, 50_000);
      await handedBack(thread);
      const waiting = workers.take()!;
      workers.keep(waiting);
      // The aggregation takes that worker, up already: threaded from its start.
      const modes: string[] = [];
      const chunks = (async function* () {
        for (let at = 0; at < data.length; at += 65_536) yield data.subarray(at, at + 65_536);
      })();
      const result = await aggregateThreaded(
        chunks,
        { tallyWorkers: workers },
        undefined,
        (mode) => modes.push(mode),
      );
      assertEquals(modes, ["threaded"]);
      const alone = new CsvAggregator();
      alone.push(data);
      assertEquals(result, alone.finish());
      const back = workers.take();
      assert(back === waiting, "the aggregation handed the same worker back");
      workers.keep(back!);
    }
  } finally {
    thread.stop();
    workers.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
