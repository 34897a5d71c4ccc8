import assert from "node:assert/strict";
import { BodyChunks, READ_BYTES } from "../../src/analysis/body_chunks.ts";
import { aggregateDelivery } from "../../src/analysis/aggregate_delivery.ts";
import { CsvAggregator } from "../../src/analysis/aggregate/aggregate.ts";
import { DatasetValidator, ValidationError } from "../../src/pipeline/mod.ts";
import { generateCsv } from "../../bench/generate_csv.ts";

async function csvBytes(rows: number): Promise<Uint8Array<ArrayBuffer>> {
  const parts: Uint8Array[] = [];
  for await (const chunk of generateCsv({ rows, seed: 5, days: 6 })) parts.push(chunk);
  return new Uint8Array(await new Blob(parts as Uint8Array<ArrayBuffer>[]).arrayBuffer());
}

/** A temporary file holding `bytes`, opened for reading: its `readable` is a byte stream. */
async function fileOf(
  bytes: Uint8Array,
): Promise<{ open(): Promise<Deno.FsFile>; remove(): Promise<void> }> {
  const path = await Deno.makeTempFile({ prefix: "abn-body-chunks-" });
  await Deno.writeFile(path, bytes);
  return { open: () => Deno.open(path), remove: () => Deno.remove(path) };
}

Deno.test("BodyChunks reads a file's byte stream in chunks of up to READ_BYTES, all of it", async () => {
  const bytes = await csvBytes(100_000); // about 4 MiB
  const file = await fileOf(bytes);
  try {
    const waited = { ms: 0 };
    const source = new BodyChunks((await file.open()).readable, waited);
    const copies: Uint8Array<ArrayBuffer>[] = [];
    let largest = 0;
    for (let chunk = await source.next(); chunk !== null; chunk = await source.next()) {
      largest = Math.max(largest, chunk.length);
      copies.push(new Uint8Array(chunk)); // the chunk's buffer is read into again later
    }
    await source.cancel();
    assert.ok(largest <= READ_BYTES && copies.length >= Math.ceil(bytes.length / READ_BYTES));
    assert.deepEqual(new Uint8Array(await new Blob(copies).arrayBuffer()), bytes);
    assert.ok(waited.ms > 0);
    assert.equal(await source.next(), null);
  } finally {
    await file.remove();
  }
});

Deno.test("BodyChunks passes the chunks of another stream as they come", async () => {
  const parts = ["user_id,", "variant\n", "", "x"].map((text) => new TextEncoder().encode(text));
  const source = new BodyChunks(ReadableStream.from(parts));
  const seen: Uint8Array[] = [];
  for await (const chunk of source.chunks()) seen.push(chunk);
  assert.deepEqual(seen, parts);
});

Deno.test("BodyChunks leaves the body open when a loop ends early, and cancel ends it", async () => {
  let cancelled = false;
  let pulls = 0;
  const body = new ReadableStream({
    type: "bytes",
    pull(controller) {
      pulls++;
      const request = controller.byobRequest!;
      const view = request.view!;
      new Uint8Array(view.buffer, view.byteOffset, 3).set([65, 66, 10]);
      request.respond(3);
    },
    cancel() {
      cancelled = true;
    },
  });
  const source = new BodyChunks(body);
  for await (const _ of source.chunks()) break;
  assert.equal(cancelled, false);
  assert.deepEqual(await source.next(), new Uint8Array([65, 66, 10]));
  await source.cancel();
  assert.ok(cancelled && pulls >= 2);
});

Deno.test("aggregateDelivery reads a stored file (a byte stream) as CsvAggregator does", async () => {
  const bytes = await csvBytes(100_000);
  const alone = new CsvAggregator({ userSummary: true });
  alone.push(bytes);
  const expected = alone.finish();
  const file = await fileOf(bytes);
  try {
    for (const validated of [true, false]) {
      const waited = { ms: 0 };
      const aggregate = await aggregateDelivery((await file.open()).readable, {
        validated,
        sizeBytes: bytes.length,
        userSummary: true,
        waited,
      });
      assert.deepEqual(aggregate, expected);
    }
  } finally {
    await file.remove();
  }
});

Deno.test("aggregateDelivery refuses a broken stored file with the upload check's error", async () => {
  const good = await csvBytes(60_000);
  for (
    const tail of [
      "u1,A,2026-02-30,0,0\n", // the reader stops here; the validator agrees
      'u1,A,2026-01-01,"1', // the reader stops at the end; the answer is the validator's
      "u1,A,2026-01-01,0,0\n\x00",
    ]
  ) {
    const bytes = new Uint8Array([...good, ...new TextEncoder().encode(tail)]);
    const validator = new DatasetValidator();
    let expected: ValidationError | null = null;
    try {
      validator.push(bytes);
      validator.finish();
    } catch (error) {
      expected = error as ValidationError;
    }
    assert.ok(expected instanceof ValidationError);
    const file = await fileOf(bytes);
    try {
      await assert.rejects(
        aggregateDelivery((await file.open()).readable, { sizeBytes: bytes.length }),
        (error: ValidationError) => {
          assert.ok(error instanceof ValidationError, String(error));
          assert.equal(error.code, expected.code);
          assert.equal(error.message, expected.message);
          assert.equal(error.line, expected.line);
          return true;
        },
      );
    } finally {
      await file.remove();
    }
  }
});
