import assert from "node:assert/strict";
import { CsvAggregator } from "../../src/analysis/aggregate/aggregate.ts";
import { aggregateDelivery } from "../../src/analysis/aggregate_delivery.ts";
import { CsvError } from "../../src/csv/csv_error.ts";
import { DatasetValidator, ValidationError } from "../../src/pipeline/mod.ts";

const encoder = new TextEncoder();

function body(text: string, size = 5): ReadableStream<Uint8Array> {
  const bytes = encoder.encode(text);
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.slice(i, i + size));
  return ReadableStream.from(chunks);
}

/** The validator's error for `text` in one piece, as a direct upload meets it. */
function directError(text: string): ValidationError {
  const validator = new DatasetValidator();
  try {
    validator.push(encoder.encode(text));
    validator.finish();
  } catch (error) {
    assert.ok(error instanceof ValidationError);
    return error;
  }
  throw new assert.AssertionError({ message: "the validator accepted the file" });
}

const GOOD = "user_id,variant,date,m\nu1,A,2026-01-01,1\nu2,B,2026-01-02,0\n";

Deno.test("aggregateDelivery reads a file that passes the checks as CsvAggregator does", async () => {
  const alone = new CsvAggregator();
  alone.push(encoder.encode(GOOD));
  const expected = alone.finish();
  assert.deepEqual(await aggregateDelivery(body(GOOD)), expected);
  assert.deepEqual(await aggregateDelivery(body(GOOD), { validated: true }), expected);
});

/** Files the upload checks refuse. */
const REFUSED = [
  "user_id,variant,date,m\nu1,A,2026-01-01,1\nu2,B,2026-02-30,0\n",
  "user_id,variant,date,city\nu1,A,2026-01-01,Berlin\n",
  "user_id,variant,date,m\nu1,A,2026-01-01,1\n\x00",
  // The row starts on line 2, its open quote on line 3: the reader stops first, at finish,
  // naming the row's line; the answer is the validator's.
  'user_id,variant,date,m\n"u\n1",A,2026-01-01,"1',
  // The reader stops at the header; the validator reads the rest and refuses a later line.
  "user_id;variant;date;m\nu1;A;2026-01-01;1\nu2;B;2026-01-01;1;9\n",
];

Deno.test("aggregateDelivery refuses an unvalidated delivery with the upload check's error", async () => {
  for (const text of REFUSED) {
    const expected = directError(text);
    await assert.rejects(aggregateDelivery(body(text)), (error: ValidationError) => {
      assert.ok(error instanceof ValidationError, String(error));
      assert.equal(error.code, expected.code, text);
      assert.equal(error.message, expected.message);
      assert.equal(error.line, expected.line);
      return true;
    });
  }
});

Deno.test("aggregateDelivery leaves a validated delivery to the reader and its CsvError", async () => {
  await assert.rejects(
    aggregateDelivery(body("user_id,variant,date,m\nu1,A,2026-13-01,1\n"), { validated: true }),
    (error: CsvError) => {
      assert.ok(error instanceof CsvError);
      assert.equal(error.code, "invalid_date");
      return true;
    },
  );
});

Deno.test("aggregateDelivery passes on an error of the body itself", async () => {
  const failing = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode("user_id,variant,date,m\nu1,A,2026-01-01,1\n"));
      controller.error(new RangeError("storage went away"));
    },
  });
  await assert.rejects(aggregateDelivery(failing), { name: "RangeError" });
});

Deno.test("aggregateDelivery cancels the body once the validator refuses it", async () => {
  let cancelled = false;
  let pulls = 0;
  const endless = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulls++;
      controller.enqueue(encoder.encode(pulls === 1 ? "user_id\tvariant\tdate\n" : "x\n"));
    },
    cancel() {
      cancelled = true;
    },
  });
  await assert.rejects(aggregateDelivery(endless), { name: "ValidationError" });
  assert.ok(cancelled);
});
