import assert from "node:assert/strict";
import { CsvError } from "../../src/csv/csv_error.ts";
import { ColumnChecks } from "../../src/pipeline/column_checks.ts";
import { CsvScanner, type CsvScannerOptions } from "../../src/pipeline/csv_scanner.ts";
import { Utf8Check } from "../../src/pipeline/utf8_check.ts";
import { ValidationError } from "../../src/pipeline/validation_error.ts";
import { bytes, chunked } from "./_helpers.ts";

const NAMES = ["user_id", "variant", "date", "converted", "revenue"];

interface ScanResult {
  rows: number;
  lines: number;
  cells: ColumnChecks;
}

/** Scans data rows (no header) with a scanner built for `names`. */
function scan(
  data: string | Uint8Array,
  size = 0,
  options: Partial<CsvScannerOptions> & { names?: string[] } = {},
): ScanResult {
  const names = options.names ?? NAMES;
  const delimiter = options.delimiter ?? ",";
  const cells = new ColumnChecks(names, delimiter, options.maxColumns ?? 1000);
  const scanner = new CsvScanner({
    delimiter,
    fieldCount: names.length,
    cells,
    utf8: new Utf8Check(),
    ...options,
  });
  for (const chunk of chunked(bytes(data), size)) scanner.push(chunk);
  scanner.finish();
  return { rows: scanner.rows, lines: scanner.lines, cells };
}

/** The scanner's error: a `CsvError` for a broken CSV rule, a `ValidationError` for NUL or UTF-8. */
function scanError(
  data: string | Uint8Array,
  size = 0,
  options = {},
): CsvError | ValidationError {
  try {
    scan(data, size, options);
  } catch (error) {
    assert.ok(error instanceof CsvError || error instanceof ValidationError);
    return error;
  }
  throw new assert.AssertionError({ message: "the scan did not fail" });
}

for (const fastPath of [true, false]) {
  const path = fastPath ? "with its fast path" : "without its fast path";

  Deno.test(`CsvScanner counts rows and lines ${path}`, () => {
    for (const size of [0, 1, 5]) {
      const result = scan("u1,A,2026-01-01,1,2\nu2,B,2026-01-02,0,3\n", size, { fastPath });
      assert.deepEqual([result.rows, result.lines], [2, 3]);
      const noFinalNewline = scan("u1,A,2026-01-01,1,2\nu2,B,2026-01-02,0,3", size, { fastPath });
      assert.deepEqual([noFinalNewline.rows, noFinalNewline.lines], [2, 3]);
    }
  });

  Deno.test(`CsvScanner accepts a quoted delimiter and newline inside a cell ${path}`, () => {
    const data = 'u1,"A,1",2026-01-01,1,2\n"u\n2",B,2026-01-02,0,3\n';
    for (const size of [0, 1, 2, 7]) {
      const result = scan(data, size, { fastPath });
      assert.deepEqual([result.rows, result.lines], [2, 4]);
    }
  });

  Deno.test(`CsvScanner accepts escaped quotes ${path}`, () => {
    for (const size of [0, 1, 3]) {
      assert.equal(
        scan('"u""1",A,2026-01-01,1,2\n"""",B,2026-01-01,1,2\n', size, { fastPath }).rows,
        2,
      );
    }
  });

  Deno.test(`CsvScanner accepts CRLF line ends ${path}`, () => {
    for (const size of [0, 1, 2]) {
      const result = scan("u1,A,2026-01-01,1,2\r\nu2,B,2026-01-02,0,3\r\n\r\n", size, { fastPath });
      assert.deepEqual([result.rows, result.lines], [2, 4]);
    }
  });

  Deno.test(`CsvScanner ignores blank lines but counts them ${path}`, () => {
    const result = scan("\nu1,A,2026-01-01,1,2\n\n\nu2,B,2026-01-02,0,3\n\n", 0, { fastPath });
    assert.deepEqual([result.rows, result.lines], [2, 7]);
    const error = scanError("u1,A,2026-01-01,1,2\n\n\nu2,B,2026-01-02,0\n", 0, { fastPath });
    assert.equal(error.message, "Cannot parse line 5: expected 5 fields, got 4");
  });

  Deno.test(`CsvScanner reports the wrong field count with the row's line ${path}`, () => {
    for (const size of [0, 1, 4]) {
      const error = scanError("u1,A,2026-01-01,1,2\nu2,B,2026-01-02\n", size, { fastPath });
      assert.equal(error.message, "Cannot parse line 3: expected 5 fields, got 3");
      assert.equal(error.line, 3);
      const tooMany = scanError("u1,A,2026-01-01,1,2,x,y\n", size, { fastPath });
      assert.equal(tooMany.message, "Cannot parse line 2: expected 5 fields, got 7");
    }
  });

  Deno.test(`CsvScanner counts a quoted newline in the line numbers after it ${path}`, () => {
    const data = 'u1,A,2026-01-01,1,2\n"u\n\n2",B,2026-01-02,0,3\nu3,A,2026-01-01\n';
    for (const size of [0, 1]) {
      assert.equal(scanError(data, size, { fastPath }).line, 6);
    }
  });

  Deno.test(`CsvScanner refuses an unterminated quote naming the line it opened on ${path}`, () => {
    for (const size of [0, 1]) {
      const error = scanError(
        'u1,A,2026-01-01,1,2\nu2,"B,2026-01-02,0,3\nu3,A,2026-01-01,1,2\n',
        size,
        { fastPath },
      );
      assert.equal(error.code, "invalid_csv");
      assert.equal(error.message, "Cannot parse line 3: a quoted field is not closed");
    }
  });

  Deno.test(`CsvScanner refuses stray quotes and carriage returns ${path}`, () => {
    for (const size of [0, 1]) {
      assert.match(
        scanError('u1,A"x,2026-01-01,1,2\n', size, { fastPath }).message,
        /line 2: unexpected quote in an unquoted field/,
      );
      assert.match(
        scanError('u1,"A"x,2026-01-01,1,2\n', size, { fastPath }).message,
        /line 2: text after a closing quote/,
      );
      assert.match(
        scanError("u1,A,2026-01-01,1,2\ru2,B,2026-01-01,1,2\n", size, { fastPath }).message,
        /line 2: carriage return not followed by a line feed/,
      );
      // Also when it ends the file.
      assert.match(
        scanError("u1,A,2026-01-01,1,2\r", size, { fastPath }).message,
        /line 2: carriage return not followed by a line feed/,
      );
    }
  });

  Deno.test(`CsvScanner refuses a NUL byte with its line ${path}`, () => {
    for (const size of [0, 1, 3]) {
      const error = scanError(
        "u1,A,2026-01-01,1,2\nu2,B,2026-01-02,0,3\n\nu\x003,A,2026-01-01,1,2\n",
        size,
        { fastPath },
      );
      assert.deepEqual([error.code, error.line], ["binary_content", 5]);
      const quoted = scanError('u1,"A\x00",2026-01-01,1,2\n', size, { fastPath });
      assert.deepEqual([quoted.code, quoted.line], ["binary_content", 2]);
    }
  });

  Deno.test(`CsvScanner refuses a row longer than the limit ${path}`, () => {
    const row = `u1,${"A".repeat(200)},2026-01-01,1,2\n`;
    const error = scanError(`u0,A,2026-01-01,1,2\n${row}`, 0, { fastPath, maxLineBytes: 100 });
    assert.equal(error.message, "Cannot parse line 3: line is longer than 100 bytes");
    assert.equal(scan(row, 0, { fastPath, maxLineBytes: row.length - 1 }).rows, 1);
  });

  Deno.test(`CsvScanner refuses more columns than the limit ${path}`, () => {
    const error = scanError(`u1,A,2026-01-01,1,2${",x".repeat(10)}\n`, 0, {
      fastPath,
      maxColumns: 8,
    });
    assert.equal(error.message, "Cannot parse line 2: more than 8 columns");
  });

  Deno.test(`CsvScanner hands cells cut by chunk ends to the column checks ${path}`, () => {
    const data = 'u1,A,2026-01-01,1,12.5\nu2,B,"2026-01-02",0,"7"\n';
    for (let size = 1; size < 12; size++) {
      const { cells } = scan(data, size, { fastPath });
      assert.deepEqual(cells.metrics(), [
        { name: "converted", kind: "conversion" },
        { name: "revenue", kind: "numeric" },
      ], `chunk ${size}`);
    }
    const error = scanError("u1,A,2026-01-01,1,2\nu2,B,2026-02-30,0,3\n", 3, { fastPath });
    assert.deepEqual([error.code, error.line], ["invalid_date", 3]);
  });
}

Deno.test("CsvScanner starts counting at the line and offset it is given", () => {
  const cells = new ColumnChecks(NAMES, ",", 1000);
  const scanner = new CsvScanner({
    delimiter: ",",
    fieldCount: 5,
    cells,
    utf8: new Utf8Check(),
    line: 10,
    offset: 500,
  });
  scanner.push(bytes("u1,A,2026-01-01,1,2\nu2,B,2026-01-02"));
  assert.throws(() => scanner.finish(), /Cannot parse line 11: expected 5 fields, got 3/);
});

Deno.test("CsvScanner does not keep the chunks it is given", () => {
  const cells = new ColumnChecks(NAMES, ",", 1000);
  const scanner = new CsvScanner({ delimiter: ",", fieldCount: 5, cells, utf8: new Utf8Check() });
  const first = bytes("u1,A,2026-01-01,1,12.");
  scanner.push(first);
  first.fill(0x00); // the caller reuses its buffer
  scanner.push(bytes("5\nu2,B,2026-01-02,0,3\n"));
  scanner.finish();
  assert.equal(scanner.rows, 2);
  assert.deepEqual(cells.metrics()[1], { name: "revenue", kind: "numeric" });
});
