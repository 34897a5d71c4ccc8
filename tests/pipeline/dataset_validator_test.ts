import assert from "node:assert/strict";
import { generateCsv } from "../../bench/generate_csv.ts";
import { DatasetValidator, ValidationError } from "../../src/pipeline/mod.ts";
import { bytes, CHUNK_SIZES, concat, HEADER, rejects, validate } from "./_helpers.ts";

const ROWS = "u1,A,2026-01-01,1,12.5\nu2,B,2026-01-02,0,0\n";

async function generated(options: Parameters<typeof generateCsv>[0]): Promise<Uint8Array> {
  return concat(...await Array.fromAsync(generateCsv(options)));
}

Deno.test("DatasetValidator accepts every dataset of the generator with the right summary", async () => {
  for (
    const options of [{ rows: 1 }, { rows: 50, variants: ["A", "B", "C"] }, {
      rows: 3000,
      days: 40,
      seed: 9,
    }]
  ) {
    const data = await generated(options);
    for (const chunk of [0, 1, 13, 4096]) {
      if (chunk === 1 && data.length > 20_000) continue;
      const summary = validate(data, { chunk });
      assert.deepEqual(summary, {
        bytes: data.length,
        lines: options.rows + 1,
        rows: options.rows,
        delimiter: ",",
        columns: ["user_id", "variant", "date", "converted", "revenue"],
        metrics: summary.rows >= 50
          ? [{ name: "converted", kind: "conversion" }, { name: "revenue", kind: "numeric" }]
          : summary.metrics,
        dimensions: [],
      }, `${options.rows} rows in chunks of ${chunk}`);
      assert.ok(summary.metrics.length === 2);
    }
  }
});

Deno.test("DatasetValidator accepts the same data whatever the chunk size", () => {
  const data =
    `${HEADER}"u1","A",2026-01-01,1,"12.5"\r\n\r\nu2,"B\nC",2026-01-02,0,0\r\nu3,ÄÖ,2026-01-03,,\r\n`;
  const expected = validate(data);
  assert.equal(expected.rows, 3);
  assert.equal(expected.lines, 6);
  for (const chunk of CHUNK_SIZES) assert.deepEqual(validate(data, { chunk }), expected);
});

Deno.test("DatasetValidator rejects a NUL byte in the middle of a later chunk", () => {
  const rows = Array.from({ length: 400 }, (_, i) => `u${i},A,2026-01-01,1,2\n`);
  rows[300] = "u300,A,2026-01-01,1,2\x003\n";
  const data = bytes(HEADER + rows.join(""));
  for (const chunk of [0, 1000, 4096]) {
    const error = rejects(data, "binary_content", 302, { chunk });
    assert.equal(error.message, "Binary content on line 302: the file contains a NUL byte");
  }
});

Deno.test("DatasetValidator rejects a NUL byte in the header", () => {
  rejects("user_id,vari\0ant,date\n", "binary_content", 1);
});

Deno.test("DatasetValidator rejects empty input and a header alone as having no data rows", () => {
  assert.equal(rejects("", "no_data_rows", null).message, "No data rows: the file is empty");
  rejects(HEADER, "no_data_rows");
  rejects(HEADER.trimEnd(), "no_data_rows");
  rejects(`${HEADER}\n\n\r\n`, "no_data_rows");
  rejects("\n\n", "no_data_rows");
});

Deno.test("DatasetValidator ignores blank lines but counts them in line numbers", () => {
  const summary = validate(`\n${HEADER}\nu1,A,2026-01-01,1,2\n\n\nu2,B,2026-01-02,0,3\n\n`);
  assert.equal(summary.rows, 2);
  assert.equal(summary.lines, 8);
  const error = rejects(`${HEADER}\n\nu1,A,2026-01-01,1\n`, "invalid_csv", 4);
  assert.equal(error.message, "Cannot parse line 4: expected 5 fields, got 4");
});

Deno.test("DatasetValidator reports the wrong field count with the right line number", () => {
  for (const chunk of CHUNK_SIZES) {
    const error = rejects(`${HEADER}${ROWS}u3,A,2026-01-03\n`, "invalid_csv", 4, { chunk });
    assert.equal(error.message, "Cannot parse line 4: expected 5 fields, got 3");
  }
});

Deno.test("DatasetValidator counts a quoted newline before a row with the wrong field count", () => {
  const data = `${HEADER}u1,"A\nB",2026-01-01,1,2\nu2,B,2026-01-02,0\n`;
  for (const chunk of CHUNK_SIZES) {
    assert.equal(
      rejects(data, "invalid_csv", 4, { chunk }).message,
      "Cannot parse line 4: expected 5 fields, got 4",
    );
  }
});

Deno.test("DatasetValidator accepts a quoted delimiter and newline inside a cell", () => {
  const summary = validate(`user_id,variant,date,note,value\nu1,A,2026-01-01,"a, b\nand c",1\n`);
  assert.deepEqual([summary.rows, summary.lines, summary.dimensions], [1, 3, ["note"]]);
});

Deno.test("DatasetValidator accepts CRLF line ends", () => {
  for (const chunk of CHUNK_SIZES) {
    const summary = validate(`${HEADER}${ROWS}`.replaceAll("\n", "\r\n"), { chunk });
    assert.deepEqual([summary.rows, summary.lines], [2, 3]);
  }
});

Deno.test("DatasetValidator refuses an unterminated quote naming the line where it opened", () => {
  for (const chunk of CHUNK_SIZES) {
    const error = rejects(
      `${HEADER}${ROWS}u3,"A,2026-01-03,1,2\nu4,B,2026-01-01,1,2\n`,
      "invalid_csv",
      4,
      { chunk },
    );
    assert.equal(error.message, "Cannot parse line 4: a quoted field is not closed");
  }
  rejects(`user_id,variant,date,"x\n`, "invalid_csv", 1);
});

Deno.test("DatasetValidator refuses a 2 MiB line before the end of it", () => {
  const validator = new DatasetValidator();
  validator.push(bytes(`${HEADER}u1,A,2026-01-01,1,2\nu2,A,2026-01-01,1,`));
  const chunk = bytes("9".repeat(65_536));
  let pushed = 0;
  assert.throws(() => {
    for (; pushed < 32; pushed++) validator.push(chunk);
  }, (error: ValidationError) => {
    assert.equal(error.code, "invalid_csv");
    assert.equal(error.message, "Cannot parse line 3: line is longer than 1048576 bytes");
    return true;
  });
  assert.ok(pushed <= 16, `refused after ${pushed} chunks`);
  assert.throws(() => validator.finish(), /line 3: line is longer/);
});

Deno.test("DatasetValidator refuses a 2 MiB header before the end of it", () => {
  const validator = new DatasetValidator();
  validator.push(bytes("user_id,variant,date,"));
  const chunk = bytes("x".repeat(65_536));
  let pushed = 0;
  assert.throws(() => {
    for (; pushed < 32; pushed++) validator.push(chunk);
  }, /Cannot parse line 1: line is longer than 1048576 bytes/);
  assert.ok(pushed <= 16, `refused after ${pushed} chunks`);
});

Deno.test("DatasetValidator accepts a line of exactly the limit", () => {
  const row = "u1,A,2026-01-01,1,";
  const data = `${HEADER}${row}${"5".repeat(200 - row.length)}\r\n`;
  assert.equal(validate(data, { maxLineBytes: 200 }).rows, 1);
  rejects(data, "invalid_csv", 2, { maxLineBytes: 199 });
});

Deno.test("DatasetValidator refuses 1001 columns and accepts 1000", () => {
  const names = (
    count: number,
  ) => ["user_id", "variant", "date", ...Array.from({ length: count - 3 }, (_, i) => `m${i}`)];
  const row = (
    count: number,
  ) => ["u1", "A", "2026-01-01", ...Array.from({ length: count - 3 }, () => "1")];
  const csv = (count: number) => `${names(count).join(",")}\n${row(count).join(",")}\n`;
  assert.equal(validate(csv(1000)).metrics.length, 997);
  const error = rejects(csv(1001), "invalid_csv", 1);
  assert.equal(error.message, "Cannot parse line 1: more than 1000 columns");
  const wideRow = `${names(5).join(",")}\n${row(1001).join(",")}\n`;
  assert.equal(
    rejects(wideRow, "invalid_csv", 2).message,
    "Cannot parse line 2: more than 1000 columns",
  );
});

Deno.test("DatasetValidator keeps answering the first error", () => {
  const validator = new DatasetValidator();
  const start = bytes(`${HEADER}${ROWS.repeat(10)}u1,A,2026-02-30,1,2\nu2`);
  assert.throws(() => validator.push(start), /Invalid date on line 22/);
  assert.throws(() => validator.push(bytes(",B,2026-01-01,1,2\n")), /Invalid date on line 22/);
  assert.throws(() => validator.finish(), /Invalid date on line 22/);
});

Deno.test("DatasetValidator answers the same summary when finish is called twice", () => {
  const validator = new DatasetValidator();
  validator.push(bytes(HEADER + ROWS));
  assert.equal(validator.finish(), validator.finish());
  assert.throws(() => validator.push(bytes(ROWS)), TypeError);
});

Deno.test("DatasetValidator does not keep the chunks it is given", () => {
  const validator = new DatasetValidator();
  const reused = new Uint8Array(7);
  const data = bytes(HEADER + ROWS + "u3,C,2026-01-03,1,4.75\n");
  for (let offset = 0; offset < data.length; offset += reused.length) {
    const piece = data.subarray(offset, offset + reused.length);
    reused.set(piece);
    validator.push(reused.subarray(0, piece.length));
    reused.fill(0); // overwritten before the next push, as a reused read buffer would be
  }
  const summary = validator.finish();
  assert.equal(summary.rows, 3);
  assert.deepEqual(summary.metrics.map((metric) => metric.kind), ["conversion", "numeric"]);
});

Deno.test("DatasetValidator reports the first problem in the file first", () => {
  rejects(
    `${HEADER}u1,A,2026-01-01,1,2\nu2,B,2026-13-01,0,0\nu3,A,2026-01-01,1\n`,
    "invalid_date",
    3,
  );
  rejects(
    `${HEADER}u1,A,2026-01-01,1,2\nu2,,2026-01-01,0,0\nu3,A,2026-02-30,1,1\n`,
    "invalid_csv",
    3,
  );
});

Deno.test("DatasetValidator summarises a semicolon file with a dimension", () => {
  const data =
    "user_id;variant;date;country;revenue\r\nu1;A;2026-01-01;DE;1,5\r\nu2;B;2026-01-02;FR;2\r\n";
  const summary = validate(data);
  assert.deepEqual(summary, {
    bytes: bytes(data).length,
    lines: 3,
    rows: 2,
    delimiter: ";",
    columns: ["user_id", "variant", "date", "country", "revenue"],
    metrics: [{ name: "revenue", kind: "numeric" }],
    dimensions: ["country"],
  });
});

Deno.test("DatasetValidator refuses limits that are not positive integers", () => {
  assert.throws(() => new DatasetValidator({ maxLineBytes: 0 }), RangeError);
  assert.throws(() => new DatasetValidator({ maxColumns: 1.5 }), RangeError);
  assert.throws(() => new DatasetValidator({ maxColumns: Number.NaN }), RangeError);
});
