/**
 * `WarmWorker`: which worker waits for the next piece of work, and for how long.
 */
import { assert, assertEquals } from "./_assert.ts";
import { WarmWorker } from "../src/warm_worker.ts";

/** Answers once `worker` said it is up (the service's worker module says `ready`). */
function up(worker: Worker): Promise<void> {
  return new Promise((resolve) => {
    worker.onmessage = () => resolve();
  });
}

Deno.test("a worker handed back waits for the next taker, and ends after its time", async () => {
  const warm = new WarmWorker(100);
  try {
    const worker = warm.start();
    await up(worker);
    warm.keep(worker);
    assert(warm.idle);
    const again = warm.take();
    assert(again === worker, "the next taker gets the worker that waited");
    assertEquals(warm.take(), null, "only once");
    warm.keep(again!);
    await new Promise((r) => setTimeout(r, 250));
    assertEquals(warm.idle, false, "ended after its time");
    assertEquals(warm.take(), null);
  } finally {
    warm.stop();
  }
});

Deno.test("a worker that comes back while another is out ends; one that keeps memory stays", async () => {
  const warm = new WarmWorker(60_000);
  try {
    // An upload's checks and the aggregation beside it: the first back ends.
    const checks = warm.start();
    const tally = warm.start();
    await Promise.all([up(checks), up(tally)]);
    warm.keep(checks);
    assertEquals(warm.idle, false, "no idle thread beside a busy one");
    warm.keep(tally);
    assert(warm.take() === tally, "the last one back waits");
    // A run that keeps its table's memory for the analysis of the upload still streaming: it
    // stays, and the upload's worker, back after it, ends.
    const upload = warm.start();
    await up(upload);
    warm.keep(tally, true);
    assert(warm.idle, "kept with its memory while the upload is out");
    warm.keep(upload);
    assert(warm.take() === tally, "the worker with the memory stays");
    warm.keep(tally);
    // Without anything out, the one back last waits.
    const next = warm.take()!;
    warm.keep(next);
    assert(warm.take() === next);
    warm.discard(next);
    assertEquals(warm.idle, false);
  } finally {
    warm.stop();
  }
});

Deno.test("a worker that keeps memory waits a second at most; a stopped one keeps nothing", async () => {
  const warm = new WarmWorker(60_000);
  const worker = warm.start();
  await up(worker);
  warm.keep(worker, true);
  assert(warm.idle);
  await new Promise((r) => setTimeout(r, 1300));
  assertEquals(warm.idle, false, "its memory went with it after a second");
  const other = warm.start();
  await up(other);
  warm.stop();
  warm.keep(other);
  assertEquals(warm.idle, false, "stopped: ended as it came back");
});
