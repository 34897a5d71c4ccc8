import assert from "node:assert/strict";
import type { CsvError } from "../../src/csv/csv_error.ts";
import { headerContent, parseHeader, splitRecord } from "../../src/csv/header.ts";

const encoder = new TextEncoder();

function bytes(input: string | number[]): Uint8Array {
  return typeof input === "string" ? encoder.encode(input) : Uint8Array.from(input);
}

Deno.test("splitRecord unquotes fields and keeps delimiters and newlines inside quotes", () => {
  assert.deepEqual(splitRecord(bytes('a,"b,c","d""e","f\ng",'), 0x2c, 1), [
    "a",
    "b,c",
    'd"e',
    "f\ng",
    "",
  ]);
});

Deno.test("splitRecord refuses stray quotes", () => {
  assert.throws(
    () => splitRecord(bytes('a,b"c'), 0x2c, 1),
    /unexpected quote in an unquoted field/,
  );
  assert.throws(() => splitRecord(bytes('a,"b"c'), 0x2c, 1), /text after a closing quote/);
  assert.throws(() => splitRecord(bytes('a,"b'), 0x2c, 1), /not closed/);
});

Deno.test("parseHeader trims names and finds the delimiter", () => {
  const header = parseHeader(bytes(' user_id ; variant;date ;"revenue"'), 1, 1000);
  assert.deepEqual(header, { delimiter: ";", names: ["user_id", "variant", "date", "revenue"] });
});

Deno.test("parseHeader names the missing required columns", () => {
  assert.throws(
    () => parseHeader(bytes("user_id,Variant,day,x"), 1, 1000),
    (error: CsvError) => {
      assert.equal(error.code, "missing_columns");
      assert.match(error.message, /^Missing required columns: variant, date/);
      return true;
    },
  );
});

Deno.test("parseHeader refuses duplicate and empty names", () => {
  assert.throws(
    () => parseHeader(bytes("user_id,variant,date,x, x"), 1, 1000),
    /the column name "x" appears twice/,
  );
  assert.throws(
    () => parseHeader(bytes("user_id,variant,date,,x"), 1, 1000),
    /column 4 of the header has no name/,
  );
});

Deno.test("parseHeader refuses more columns than the limit", () => {
  const names = ["user_id", "variant", "date", ...Array.from({ length: 998 }, (_, i) => `m${i}`)];
  assert.equal(parseHeader(bytes(names.slice(0, 1000).join(",")), 1, 1000).names.length, 1000);
  assert.throws(() => parseHeader(bytes(names.join(",")), 1, 1000), /more than 1000 columns/);
});

Deno.test("parseHeader reports problems as CsvErrors naming the line", () => {
  assert.throws(() => parseHeader(bytes("user_id,variant,date\rx,m"), 3), (error: CsvError) => {
    assert.equal(error.name, "CsvError");
    assert.ok(error instanceof SyntaxError);
    assert.equal(error.code, "invalid_csv");
    assert.equal(error.line, 3);
    assert.equal(error.message, "Cannot parse line 3: carriage return not followed by a line feed");
    return true;
  });
});

Deno.test("headerContent drops a trailing carriage return, and a BOM on the first line only", () => {
  const text = (line: Uint8Array) => new TextDecoder().decode(line);
  const bom = [0xef, 0xbb, 0xbf];
  assert.equal(text(headerContent(bytes("a,b\r"), true)), "a,b");
  assert.equal(text(headerContent(bytes([...bom, 0x61]), true)), "a");
  assert.deepEqual(headerContent(bytes([...bom, 0x61]), false), bytes([...bom, 0x61]));
  assert.equal(headerContent(bytes([...bom, 0x0d]), true).length, 0, "blank");
  assert.equal(headerContent(bytes("\r"), false).length, 0, "blank");
  assert.equal(headerContent(bytes(" \r"), false).length, 1, "spaces are not blank");
});
