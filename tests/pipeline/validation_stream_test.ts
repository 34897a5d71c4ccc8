import assert from "node:assert/strict";
import { ValidationError, validationStream } from "../../src/pipeline/mod.ts";
import { bytes, chunked, concat, HEADER } from "./_helpers.ts";

const ROWS = Array.from({ length: 20 }, (_, i) => `u${i},A,2026-01-01,${i % 2},${i}.5\n`).join("");

Deno.test("validationStream passes the bytes through unchanged and resolves the summary", async () => {
  const data = bytes(HEADER + ROWS);
  const { stream, summary } = validationStream();
  const out = await Array.fromAsync(ReadableStream.from(chunked(data, 100)).pipeThrough(stream));
  assert.deepEqual(concat(...out), data);
  const result = await summary;
  assert.equal(result.rows, 20);
  assert.equal(result.bytes, data.length);
});

Deno.test("validationStream errors the stream with the ValidationError and rejects the summary", async () => {
  const data = bytes(`${HEADER}${ROWS}u9,B,2026-02-30,1,2\n${ROWS}`);
  const { stream, summary } = validationStream();
  const forwarded: Uint8Array[] = [];
  await assert.rejects(
    ReadableStream.from(chunked(data, 64)).pipeThrough(stream).pipeTo(
      new WritableStream({ write: (chunk) => void forwarded.push(chunk) }),
    ),
    (error: ValidationError) => error instanceof ValidationError && error.code === "invalid_date",
  );
  await assert.rejects(summary, ValidationError);
  const passed = concat(...forwarded);
  const badLine = bytes(HEADER + ROWS).length;
  assert.ok(passed.length <= badLine + 20, "the chunk holding the bad cell is not forwarded");
});

Deno.test("validationStream rejects at flush what only the end shows", async () => {
  const { stream, summary } = validationStream();
  const readable = ReadableStream.from([bytes(HEADER)]).pipeThrough(stream);
  await assert.rejects(Array.fromAsync(readable), /No data rows/);
  await assert.rejects(summary, (error: ValidationError) => error.code === "no_data_rows");
});

Deno.test("validationStream passes its options to the validator", async () => {
  const { stream, summary } = validationStream({ maxLineBytes: 10 });
  await assert.rejects(
    Array.fromAsync(ReadableStream.from([bytes(HEADER)]).pipeThrough(stream)),
    /longer than 10 bytes/,
  );
  await assert.rejects(summary);
});

Deno.test("validationStream leaves no unhandled rejection when the summary is not awaited", async () => {
  const { stream } = validationStream();
  const readable = ReadableStream.from([bytes([0x1f, 0x8b, 8, 0])]).pipeThrough(stream);
  await assert.rejects(Array.fromAsync(readable), /GZIP archive detected/);
  await new Promise((resolve) => setTimeout(resolve, 10)); // an unhandled rejection would fail the test
});

Deno.test("validationStream rejects the summary when the output side is cancelled", async () => {
  const { stream, summary } = validationStream();
  await stream.readable.cancel(new Error("client went away"));
  await assert.rejects(summary, /client went away/);
});
