import assert from "node:assert/strict";
import { HeaderReader } from "../../src/pipeline/header_reader.ts";
import { DatasetValidator } from "../../src/pipeline/mod.ts";
import { Utf8Check } from "../../src/pipeline/utf8_check.ts";
import { bytes, chunked, concat, HEADER, rejects, validate } from "./_helpers.ts";

function readHeader(data: Uint8Array, size = 0): { names: string[]; next: number; line: number } {
  const reader = new HeaderReader(new Utf8Check());
  let consumed = 0;
  for (const chunk of chunked(data, size)) {
    const end = reader.push(chunk);
    if (end >= 0) {
      return { names: reader.header!.names, next: consumed + end, line: reader.nextLine };
    }
    consumed += chunk.length;
  }
  return { names: reader.finish()?.names ?? [], next: consumed, line: reader.nextLine };
}

Deno.test("HeaderReader strips a leading BOM from the first name", () => {
  for (const size of [0, 1, 2]) {
    const { names } = readHeader(bytes(`\uFEFF${HEADER}u1`), size);
    assert.equal(names[0], "user_id", `chunk ${size}`);
  }
});

Deno.test("HeaderReader answers where the data starts", () => {
  const data = bytes(`${HEADER}u1,A`);
  assert.equal(readHeader(data).next, HEADER.length);
  assert.equal(readHeader(data, 3).next, HEADER.length);
});

Deno.test("HeaderReader skips blank lines before the header and counts them", () => {
  const { names, line } = readHeader(bytes(`\n\r\n${HEADER}u1`));
  assert.equal(names.length, 5);
  assert.equal(line, 4);
});

Deno.test("HeaderReader reads a header with a quoted newline as one header", () => {
  const { names, line } = readHeader(bytes('user_id,variant,date,"two\nlines"\nu1'), 4);
  assert.deepEqual(names, ["user_id", "variant", "date", "two\nlines"]);
  assert.equal(line, 3);
});

Deno.test("HeaderReader completes a header without a line feed at finish", () => {
  assert.deepEqual(readHeader(bytes("user_id,variant,date,x")).names, [
    "user_id",
    "variant",
    "date",
    "x",
  ]);
});

Deno.test("HeaderReader refuses a header longer than the limit before it ends", () => {
  const reader = new HeaderReader(new Utf8Check(), { maxLineBytes: 100 });
  reader.push(bytes("user_id,variant,date," + "x".repeat(70)));
  assert.throws(() => reader.push(bytes("y".repeat(40))), /line is longer than 100 bytes/);
});

Deno.test("DatasetValidator strips the BOM from the first header name", () => {
  for (const chunk of [0, 1, 2, 3]) {
    const summary = validate(`\uFEFF${HEADER}u1,A,2026-01-01,1,2\n`, { chunk });
    assert.equal(summary.columns[0], "user_id");
    assert.equal(summary.bytes, bytes(`\uFEFF${HEADER}u1,A,2026-01-01,1,2\n`).length);
  }
});

Deno.test("DatasetValidator treats a first line holding only a BOM as blank", () => {
  const summary = validate(`\uFEFF\n${HEADER}u1,A,2026-01-01,1,2\n`);
  assert.equal(summary.columns[0], "user_id");
  assert.equal(summary.lines, 3);
});

Deno.test("DatasetValidator names missing columns", () => {
  const error = rejects("user_id,group,day,converted\nu1,A,2026-01-01,1\n", "missing_columns", 1);
  assert.match(error.message, /^Missing required columns: variant, date/);
  assert.match(rejects("user_id,variant,converted\n", "missing_columns").message, /column: date/);
});

Deno.test("DatasetValidator refuses duplicate header names after trimming", () => {
  const error = rejects("user_id,variant,date,x,x \nu1,A,2026-01-01,1,2\n", "invalid_csv", 1);
  assert.match(error.message, /"x" appears twice/);
  rejects("user_id,variant,date,user_id,x\n", "invalid_csv", 1);
});

Deno.test("DatasetValidator refuses a tab-separated file", () => {
  const error = rejects("user_id\tvariant\tdate\tx\nu1\tA\t2026-01-01\t1\n", "invalid_csv", 1);
  assert.match(error.message, /delimiter must be a comma or a semicolon/);
});

Deno.test("DatasetValidator reads a quoted header", () => {
  const summary = validate(concat('"user_id";"variant";"date";"a;b"\r\n', "u1;A;2026-01-01;1\r\n"));
  assert.deepEqual(summary.columns, ["user_id", "variant", "date", "a;b"]);
});

Deno.test("DatasetValidator keeps a non-ASCII header name split at any byte", () => {
  const data = bytes("user_id,variant,date,größe€\nu1,A,2026-01-01,1\n");
  for (let cut = 20; cut < 32; cut++) {
    const validator = new DatasetValidator();
    validator.push(data.slice(0, cut));
    validator.push(data.slice(cut));
    assert.deepEqual(validator.finish().metrics, [{ name: "größe€", kind: "conversion" }]);
  }
  assert.equal(validate(data, { chunk: 1 }).columns[3], "größe€");
});
