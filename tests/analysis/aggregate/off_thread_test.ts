import assert from "node:assert/strict";
import { CsvAggregator } from "../../../src/analysis/aggregate/aggregate.ts";
import type { AggregateOptions } from "../../../src/analysis/aggregate/aggregate_types.ts";
import { aggregateOffThread } from "../../../src/analysis/aggregate/_aggregate_off_thread.ts";
import { TallyWorkers } from "../../../src/analysis/aggregate/tally_workers.ts";
import { generateCsv } from "../../../bench/generate_csv.ts";
import { CsvError } from "../../../src/csv/csv_error.ts";
import type { Header } from "../../../src/csv/header.ts";

/** A generated file (with dimension columns) as bytes. */
async function generated(rows: number, seed = 1): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const chunk of generateCsv({ rows, users: rows / 4, seed, dimensions: true })) {
    parts.push(chunk.slice());
  }
  return new Uint8Array(await new Blob(parts as Uint8Array<ArrayBuffer>[]).arrayBuffer());
}

function chunksOf(bytes: Uint8Array, size: number): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size));
  return chunks;
}

/** `bytes` in chunks of `size`, each in the same reused buffer (as a file is read). */
async function* reusing(bytes: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  const buffer = new Uint8Array(size);
  for (const chunk of chunksOf(bytes, size)) {
    buffer.set(chunk);
    yield buffer.subarray(0, chunk.length);
    await Promise.resolve();
  }
}

function alone(bytes: Uint8Array, options: AggregateOptions = {}) {
  const aggregator = new CsvAggregator(options);
  aggregator.push(bytes);
  return aggregator.finish();
}

Deno.test("aggregateOffThread reads in its workers exactly what CsvAggregator reads on one thread", async () => {
  const bytes = await generated(80_000);
  const options = { userSummary: true, keyMetric: "revenue" };
  const modes: string[] = [];
  const headers: Header[] = [];
  let chunks = 0;
  const result = await aggregateOffThread(
    reusing(bytes, 65536),
    {
      ...options,
      onChunk: () => chunks++,
      onHeader: (header) => headers.push(header),
    },
    undefined,
    (mode) => modes.push(mode),
  );
  assert.deepEqual(modes, ["worker"]);
  assert.equal(chunks, Math.ceil(bytes.length / 65536));
  assert.equal(headers.length, 1);
  assert.equal(headers[0].names[0], "user_id");
  const expected = alone(bytes, options);
  assert.ok((expected.dimensions ?? []).length > 0, "the file has dimension columns");
  assert.deepEqual(result, expected);
  // The user summary is this thread's own memory (freed by it when done), not shared.
  assert.ok(result.userSummary!.hi.buffer instanceof ArrayBuffer);
});

Deno.test("aggregateOffThread throws the first CSV error with its line, and onChunk's error as is", async () => {
  const bytes = await generated(40_000);
  const text = new TextDecoder().decode(bytes).split("\n");
  // A date no calendar has, far into the file.
  const line = 30_000;
  text[line - 1] = text[line - 1].replace(/\d{4}-\d\d-\d\d/, "2026-02-30");
  const broken = new TextEncoder().encode(text.join("\n"));
  await assert.rejects(aggregateOffThread(reusing(broken, 65536)), (error: unknown) => {
    assert.ok(error instanceof CsvError, String(error));
    assert.equal(error.code, "invalid_date");
    assert.equal(error.line, line);
    return true;
  });
  let seen = 0;
  await assert.rejects(
    aggregateOffThread(reusing(bytes, 65536), {
      onChunk: () => {
        if (++seen === 5) throw new RangeError("the checks say no");
      },
    }),
    { name: "RangeError", message: "the checks say no" },
  );
});

Deno.test("aggregateOffThread reads on this thread, with the same answer, when its worker cannot start", async () => {
  const bytes = await generated(20_000);
  const modes: string[] = [];
  let chunks = 0;
  const missing = new URL("../no_such_reading_worker.ts", import.meta.url);
  const result = await aggregateOffThread(
    ReadableStream.from(chunksOf(bytes, 4093)),
    { userSummary: true, onChunk: () => chunks++ },
    missing,
    (mode) => modes.push(mode),
  );
  assert.deepEqual(modes, ["here"]);
  assert.equal(chunks, Math.ceil(bytes.length / 4093), "every chunk went through onChunk once");
  assert.deepEqual(result, alone(bytes, { userSummary: true }));
});

Deno.test("aggregateOffThread runs in a row on one kept pair of workers, each as a fresh run", async () => {
  const workers = new TallyWorkers(60_000);
  try {
    const files = [
      await generated(60_000, 1),
      await generated(20_000, 2),
      await generated(60_000, 3),
    ];
    for (const [i, bytes] of files.entries()) {
      const modes: string[] = [];
      const result = await aggregateOffThread(
        reusing(bytes, 1 << 16),
        { userSummary: true, tallyWorkers: workers },
        undefined,
        (mode) => modes.push(mode),
      );
      assert.deepEqual(modes, ["worker"], `run ${i}`);
      assert.deepEqual(result, alone(bytes, { userSummary: true }), `run ${i}`);
      assert.equal(workers.idle, true, `run ${i}: the workers wait for the next run`);
    }
  } finally {
    workers.stop();
  }
  assert.equal(workers.idle, false);
});
