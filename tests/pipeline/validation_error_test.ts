import assert from "node:assert/strict";
import { CsvError, fieldCountError } from "../../src/csv/csv_error.ts";
import { ERROR_STATUS } from "../../src/http/errors.ts";
import { toValidationError, ValidationError } from "../../src/pipeline/validation_error.ts";

Deno.test("ValidationError.fromCsvError keeps the code, message and line", () => {
  const error = ValidationError.fromCsvError(fieldCountError(3, 5, 4));
  assert.equal(error.code, "invalid_csv");
  assert.equal(ERROR_STATUS[error.code], 400);
  assert.equal(error.line, 3);
  assert.equal(error.message, "Cannot parse line 3: expected 5 fields, got 4");
});

Deno.test("toValidationError maps CsvErrors and leaves other errors alone", () => {
  const mapped = toValidationError(
    new CsvError("missing_columns", "Missing required column: date"),
  );
  assert.ok(mapped instanceof ValidationError);
  assert.equal(mapped.code, "missing_columns");
  const other = new RangeError("no");
  assert.equal(toValidationError(other), other);
});
