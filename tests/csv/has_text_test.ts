import assert from "node:assert/strict";
import { emptyCellError, hasText, isBlank } from "../../src/csv/has_text.ts";

const encoder = new TextEncoder();

Deno.test("hasText ignores spaces and tabs only", () => {
  assert.equal(hasText(encoder.encode(" \t "), 0, 3), false);
  assert.equal(hasText(encoder.encode(" x "), 0, 3), true);
  assert.equal(hasText(encoder.encode(" x "), 0, 1), false);
});

Deno.test("isBlank is true for space and tab only", () => {
  assert.deepEqual([0x20, 0x09, 0x0a, 0x0d, 0xa0, 0x41].map(isBlank), [
    true,
    true,
    false,
    false,
    false,
    false,
  ]);
});

Deno.test("emptyCellError names the column and the line", () => {
  const error = emptyCellError("variant", 7);
  assert.equal(error.code, "invalid_csv");
  assert.equal(error.line, 7);
  assert.equal(error.message, "Cannot parse line 7: variant is empty");
});
