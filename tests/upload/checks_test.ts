import assert from "node:assert/strict";
import { ValidationError } from "../../src/pipeline/mod.ts";
import { datasetChecks } from "../../src/upload/checks.ts";
import { byteStage } from "../../src/upload/_byte_stage.ts";
import { byteStream } from "./_byte_stream.ts";
import type { DatasetValidatorOptions } from "../../src/pipeline/dataset_validator.ts";
import { bytes, chunked, concat, HEADER } from "../pipeline/_helpers.ts";

const ROWS = Array.from({ length: 20 }, (_, i) => `u${i},A,2026-01-01,${i % 2},${i}.5\n`).join("");

/** The checks' hooks in a byte stage of their own over `body`. */
function checked(body: ReadableStream<Uint8Array>, options?: DatasetValidatorOptions) {
  const { hooks, result } = datasetChecks(options);
  return { readable: byteStream(byteStage(body, hooks).source), result };
}

async function sha256(data: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new Uint8Array(data));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

Deno.test("datasetChecks passes the bytes through unchanged and resolves the summary and hash", async () => {
  const data = bytes(HEADER + ROWS);
  const checks = checked(ReadableStream.from(chunked(data, 100)));
  const out = await Array.fromAsync(checks.readable);
  assert.deepEqual(concat(...out), data);
  const result = await checks.result;
  assert.equal(result.summary.rows, 20);
  assert.equal(result.summary.bytes, data.length);
  assert.equal(result.sha256, await sha256(data));
});

Deno.test("datasetChecks hashes a body larger than its small-body buffer, whatever the chunks", async () => {
  const rows = Array.from({ length: 2000 }, (_, i) => `u${i},B,2026-01-02,1,${i}\n`).join("");
  const data = bytes(HEADER + rows);
  assert.ok(data.length > 16 * 1024);
  for (const size of [7, 1000, 16 * 1024, 0]) {
    const checks = checked(ReadableStream.from(chunked(data, size)));
    await Array.fromAsync(checks.readable);
    assert.equal((await checks.result).sha256, await sha256(data), `chunks of ${size}`);
  }
});

Deno.test("datasetChecks errors the stream with the ValidationError and rejects the result", async () => {
  const data = bytes(`${HEADER}${ROWS}u9,B,2026-02-30,1,2\n${ROWS}`);
  const checks = checked(ReadableStream.from(chunked(data, 64)));
  const forwarded: Uint8Array[] = [];
  await assert.rejects(
    checks.readable.pipeTo(new WritableStream({ write: (chunk) => void forwarded.push(chunk) })),
    (error: ValidationError) => error instanceof ValidationError && error.code === "invalid_date",
  );
  await assert.rejects(checks.result, ValidationError);
  const passed = concat(...forwarded);
  const badLine = bytes(HEADER + ROWS).length;
  assert.ok(passed.length <= badLine + 20, "the chunk holding the bad cell is not forwarded");
});

Deno.test("datasetChecks rejects at the end what only the end shows", async () => {
  const checks = checked(ReadableStream.from([bytes(HEADER)]));
  await assert.rejects(Array.fromAsync(checks.readable), /No data rows/);
  await assert.rejects(checks.result, (error: ValidationError) => error.code === "no_data_rows");
});

Deno.test("datasetChecks passes its options to the validator", async () => {
  const checks = checked(ReadableStream.from([bytes(HEADER)]), { maxLineBytes: 10 });
  await assert.rejects(Array.fromAsync(checks.readable), /longer than 10 bytes/);
  await assert.rejects(checks.result);
});

Deno.test("datasetChecks leaves no unhandled rejection when the result is not awaited", async () => {
  const checks = checked(ReadableStream.from([bytes([0x1f, 0x8b, 8, 0])]));
  await assert.rejects(Array.fromAsync(checks.readable), /GZIP archive detected/);
  await new Promise((resolve) => setTimeout(resolve, 10)); // an unhandled rejection would fail the test
});

Deno.test("datasetChecks rejects the result when the output side is cancelled", async () => {
  const checks = checked(ReadableStream.from([bytes(HEADER)]));
  await checks.readable.cancel(new Error("client went away"));
  await assert.rejects(checks.result, /client went away/);
});

Deno.test("datasetChecks rejects the result when the bytes before it fail", async () => {
  const broken = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(bytes(HEADER));
      controller.error(new Error("connection reset"));
    },
  });
  const checks = checked(broken);
  await assert.rejects(checks.readable.pipeTo(new WritableStream()), /connection reset/);
  await assert.rejects(checks.result, /connection reset/);
});
