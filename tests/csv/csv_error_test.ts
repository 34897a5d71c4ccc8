import assert from "node:assert/strict";
import {
  CsvError,
  excerpt,
  fieldCountError,
  noHeaderError,
  withLine,
} from "../../src/csv/csv_error.ts";

Deno.test("CsvError is a SyntaxError with a code and a line", () => {
  const error = new CsvError("invalid_date", "Invalid date on line 4: bad", 4);
  assert.ok(error instanceof SyntaxError);
  assert.equal(error.name, "CsvError");
  assert.equal(error.code, "invalid_date");
  assert.equal(error.line, 4);
  assert.equal(error.message, "Invalid date on line 4: bad");
});

Deno.test("withLine appends the line unless the message names it", () => {
  assert.equal(withLine("Cannot parse line 12: x", 12), "Cannot parse line 12: x");
  assert.equal(withLine("No good", 12), "No good (line 12)");
  assert.equal(withLine("see line 123", 12), "see line 123 (line 12)");
  assert.equal(withLine("No good", null), "No good");
});

Deno.test("fieldCountError and noHeaderError word the problems both readers report", () => {
  assert.equal(fieldCountError(3, 5, 4).message, "Cannot parse line 3: expected 5 fields, got 4");
  assert.equal(noHeaderError(true).message, "No data rows: the file is empty");
  assert.equal(noHeaderError(false).message, "No data rows: the file has no header");
  assert.equal(noHeaderError(false).code, "no_data_rows");
});

Deno.test("excerpt shortens a cell and shows an escaped quote once", () => {
  const bytes = new TextEncoder().encode(`a""b${"x".repeat(50)}`);
  assert.equal(excerpt(bytes), `a"b${"x".repeat(37)}…`);
});
