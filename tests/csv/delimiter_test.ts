import assert from "node:assert/strict";
import type { CsvError } from "../../src/csv/csv_error.ts";
import { decimalComma, delimiterByte, sniffDelimiter } from "../../src/csv/delimiter.ts";

const encoder = new TextEncoder();

function sniff(text: string): string {
  return sniffDelimiter(encoder.encode(text), 1);
}

Deno.test("sniffDelimiter picks the delimiter that occurs", () => {
  assert.equal(sniff("user_id,variant,date"), ",");
  assert.equal(sniff("user_id;variant;date"), ";");
});

Deno.test("sniffDelimiter picks the more frequent of comma and semicolon, comma on a tie", () => {
  assert.equal(sniff("user_id;variant;date;a,b"), ";");
  assert.equal(sniff("user_id,variant,date,a;b"), ",");
  assert.equal(sniff("user_id;variant,date"), ",");
});

Deno.test("sniffDelimiter ignores delimiters inside quotes", () => {
  assert.equal(sniff('"a,b,c";user_id;variant'), ";");
  assert.equal(sniff('"a;b;c",user_id,variant'), ",");
});

Deno.test("sniffDelimiter refuses a tab, a pipe or no delimiter", () => {
  for (
    const [text, found] of [["user_id\tvariant\tdate", "tabs"], ["user_id|variant|date", "pipes"], [
      "user_id",
      "",
    ]]
  ) {
    assert.throws(() => sniff(text), (error: CsvError) => {
      assert.equal(error.code, "invalid_csv");
      assert.match(
        error.message,
        /^Cannot parse line 1: the delimiter must be a comma or a semicolon/,
      );
      if (found) assert.match(error.message, new RegExp(found));
      return true;
    });
  }
});

Deno.test("delimiterByte and decimalComma follow the delimiter", () => {
  assert.deepEqual([delimiterByte(","), delimiterByte(";")], [0x2c, 0x3b]);
  assert.deepEqual([decimalComma(","), decimalComma(";")], [false, true]);
});
