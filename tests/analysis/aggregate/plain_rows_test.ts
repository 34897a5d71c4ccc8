/**
 * `RowReader.plainRows`, the one-pass reading of plain rows, against the general way (the
 * splitter's field ranges, then `row`): the same batches, findings and errors on every input,
 * however it is chunked. The general way alone is the same reader behind a sink without
 * `plainRows`.
 */
import assert from "node:assert/strict";
import { type CsvRowSink, CsvRowSplitter } from "../../../src/analysis/aggregate/_csv_rows.ts";
import { RowReader } from "../../../src/analysis/aggregate/_row_reader.ts";
import type { RowBatch } from "../../../src/analysis/aggregate/_row_batch.ts";
import { Rng } from "../../_faults.ts";
import { buildCorpus, mutate } from "../../reliability/_corpus.ts";
import { CORPUS_SEED } from "../../reliability/_corpus_run.ts";
import { generateFiles } from "../../csv/_generated_files.ts";

const encoder = new TextEncoder();

/** Rows per batch: small, so that batches fill and change hands inside a chunk. */
const BATCH_ROWS = 5;

/** Everything a reading leaves: each batch's rows as read, the findings, or the error. */
function read(chunks: Uint8Array[], plain: boolean, dimensions: boolean): unknown {
  const batches: unknown[] = [];
  const reader = new RowReader({ m: "conversion" }, BATCH_ROWS, () => (batch: RowBatch) => {
    batches.push(copy(batch));
    return batch;
  }, dimensions);
  const sink: CsvRowSink = plain ? reader : {
    header: (names, delimiter) => reader.header(names, delimiter),
    row: (buf, start, end, line) => reader.row(buf, start, end, line),
  };
  const splitter = new CsvRowSplitter(sink);
  try {
    for (const chunk of chunks) splitter.push(chunk);
    splitter.finish();
    reader.end();
  } catch (error) {
    const { message, line } = error as { message: string; line?: number };
    return { batches, error: { message, line } };
  }
  return {
    batches,
    rows: reader.rows,
    variantNames: reader.variantNames,
    days: reader.days,
    // Rows per day seen (the window's other days hold 0).
    dayRows: reader.days.map((day) => reader.dayRows[day - reader.dayBase]),
    metricNames: reader.metricNames,
    candidate: Array.from(reader.candidate),
    hasValue: Array.from(reader.hasValue),
    binary: Array.from(reader.binary),
    dictionaries: reader.dictionaries.map((d) => ({ size: d.size, values: d.values() })),
  };
}

/** A batch's rows as plain data (its arrays are reused). */
function copy(batch: RowBatch): unknown {
  const n = batch.size;
  const metrics = batch.candidate.length;
  return {
    ids: Array.from({ length: n }, (_, r) => {
      const words = batch.ids.subarray(
        batch.idStart[r],
        batch.idStart[r] + ((batch.idLength[r] + 3) >> 2),
      );
      return [batch.idLength[r], ...words];
    }),
    hash: Array.from(batch.hash.subarray(0, n)),
    variant: Array.from(batch.variant.subarray(0, n)),
    day: Array.from(batch.day.subarray(0, n)),
    // NaN as a string: deepEqual tells NaN from a number either way, and from -0.
    values: Array.from(batch.values.subarray(0, n * metrics), (x) => Object.is(x, -0) ? "-0" : x),
    dims: Array.from(batch.dims.subarray(0, n * metrics)),
    candidate: Array.from(batch.candidate),
  };
}

/** Whole, and in pieces of `sizes` bytes. */
function chunkings(bytes: Uint8Array, sizes: number[]): Uint8Array[][] {
  return [0, ...sizes].map((size) => {
    if (size === 0) return [bytes];
    const chunks: Uint8Array[] = [];
    for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size));
    return chunks;
  });
}

/**
 * Both ways read `bytes` alike, whole and in pieces of `sizes` bytes (by default 7, 64 and 1,000),
 * with and without dimensions.
 */
function assertSame(name: string, bytes: Uint8Array, sizes = [7, 64, 1000]): void {
  for (const chunks of chunkings(bytes, sizes)) {
    for (const dimensions of [true, false]) {
      const about = `${name} (${chunks.length} chunks, dimensions ${dimensions})`;
      assert.deepEqual(read(chunks, true, dimensions), read(chunks, false, dimensions), about);
    }
  }
}

/** Inputs that put each condition of a plain row on either side of its edge. */
const EDGES: [string, string][] = [
  [
    "numbers of every shape",
    [
      "user_id,variant,date,m,x,y",
      "u1,A,2026-01-01,1,0.50,7",
      "u2,B,2026-01-02,0,.5,7.",
      "u3,A,2026-01-01,1.0,-3,+4",
      "u4,B,2026-01-03,0.00,1e3,12345678901234567890",
      "u5,A,2026-01-01,,0.1234567890123456789012345,9007199254740993",
      "u6,A,2026-01-01,1, 5 ,5 ",
      "u7,B,2026-01-02,1,1.2.3,..",
      "",
    ].join("\n"),
  ],
  [
    "a 0/1 column that turns to numbers, then text",
    [
      "user_id,variant,date,m,x",
      "u1,A,2026-01-01,1,0",
      "u2,B,2026-01-01,0,1",
      "u3,A,2026-01-01,1,2",
      "u4,B,2026-01-01,0,1",
      "u5,A,2026-01-01,1,x",
      "u6,B,2026-01-01,0,1",
      "",
    ].join("\n"),
  ],
  [
    "blanks around ids and variants, new and long variants",
    [
      "user_id,variant,date,m",
      "u1,A,2026-01-01,1",
      " u2,A,2026-01-01,1",
      "u3 ,B,2026-01-01,1",
      "u4, B,2026-01-01,1",
      "u5,control,2026-01-01,1",
      "u6,control,2026-01-01,1",
      "u7,treatment,2026-01-01,0",
      "u8,A\t,2026-01-01,0",
      "u9,C,2026-01-01,0",
      "u10,C,2026-01-01,0",
      "",
    ].join("\n"),
  ],
  [
    "dates at and past the edges",
    [
      "user_id,variant,date,m",
      "u1,A,2026-01-01,1",
      "u2,A,2024-02-29,1",
      "u3,A,1999-12-31,1",
      "u4,A, 2026-01-01,1",
      "u5,A,2026-1-01,1",
      "u6,A,9999-12-31,1",
      "u7,A,0001-01-01,1",
      "u8,A,2026-01-0x,1",
      "",
    ].join("\n"),
  ],
  ["February 30", "user_id,variant,date,m\nu1,A,2026-02-28,1\nu2,A,2026-02-30,1\n"],
  ["year 0000", "user_id,variant,date,m\nu1,A,2026-02-28,1\nu2,A,0000-01-01,1\n"],
  [
    "CR LF, blank lines and a last row without a line end",
    [
      "user_id,variant,date,m,x\r",
      "u1,A,2026-01-01,1,2.5\r",
      "\r",
      "",
      "u2,B,2026-01-01,0,\r",
      "u3,B,2026-01-01,0,x\r",
      "u4,A,2026-01-01,1,3",
    ].join("\n"),
  ],
  [
    "a lone carriage return after a number",
    "user_id,variant,date,m,x\nu1,A,2026-01-01,1,2\nu2,A,2026-01-01,1\r,5\n",
  ],
  [
    "quotes, escaped and stray",
    [
      "user_id,variant,date,m",
      "u1,A,2026-01-01,1",
      '"u2",A,2026-01-01,1',
      'u3,"A",2026-01-01,"1"',
      'u4,A,2026-01-01,"1,5"',
      "u5,A,2026-01-01,1",
      'u6,A,2026-01-01,1"',
      "",
    ].join("\n"),
  ],
  ["too many fields", "user_id,variant,date,m\nu1,A,2026-01-01,1\nu2,A,2026-01-01,1,2\n"],
  ["too few fields", "user_id,variant,date,m\nu1,A,2026-01-01,1\nu2,A,2026-01-01\n"],
  ["an empty user id", "user_id,variant,date,m\nu1,A,2026-01-01,1\n,A,2026-01-01,1\n"],
  [
    "a semicolon with decimal commas",
    [
      "user_id;variant;date;m;x",
      "u1;A;2026-01-01;1;2,5",
      "u2;B;2026-01-01;0;3.5",
      "u3;B;2026-01-01;0,0;1,2,3",
      "",
    ].join("\n"),
  ],
  [
    "columns in another order, and long ids",
    [
      "m,date,x,variant,user_id",
      "1,2026-01-01,5,A,a-very-long-user-identifier-of-many-words",
      "0,2026-01-02,6,B,b",
      "1,2026-01-01,7,A,a-very-long-user-identifier-of-many-words",
      "",
    ].join("\n"),
  ],
  [
    "a cell over the checked length",
    [
      "user_id,variant,date,m,x",
      "u1,A,2026-01-01,1,1",
      `u2,A,2026-01-01,1,${"1".repeat(300)}`,
      `u3,A,2026-01-01,1,${"0".repeat(255)}1`,
      "",
    ].join("\n"),
  ],
];

Deno.test("RowReader reads plain rows itself, with dimensions tracked or not", () => {
  let text = "user_id,variant,date,converted,revenue\n";
  for (let i = 0; i < 1000; i++) {
    text += `usr-${i % 300},${i % 2 ? "B" : "A"},2026-01-0${1 + (i % 9)},${i % 7 ? 0 : 1},${
      i % 7 ? "0.00" : "12.50"
    }\n`;
  }
  const bytes = encoder.encode(text);
  for (const dimensions of [true, false]) {
    const reader = new RowReader({}, 64, () => (batch: RowBatch) => batch, dimensions);
    let general = 0;
    const splitter = new CsvRowSplitter({
      header: (names, delimiter) => reader.header(names, delimiter),
      row: (buf, start, end, line) => {
        general++;
        reader.row(buf, start, end, line);
      },
      plainRows: (buf, pos, end) => reader.plainRows(buf, pos, end),
      get plainTaken() {
        return reader.plainTaken;
      },
    });
    splitter.push(bytes);
    splitter.finish();
    reader.end();
    assert.equal(reader.rows, 1000);
    // The first row of each variant and day, and the first after each full batch, are the
    // general way's.
    assert.ok(general < 40, `dimensions ${dimensions}: ${general} rows read the general way`);
  }
});

Deno.test("RowReader reads plain rows as the general split reads them, at their edges", () => {
  for (const [name, text] of EDGES) assertSame(name, encoder.encode(text));
});

Deno.test("RowReader reads plain rows as the general split reads them, on one-byte text values", () => {
  // A column of 0s and 1s that turns to text; then lone bytes around "0" and "1" in its cells.
  let text = "user_id,variant,date,m,flag\n";
  const cells = ["0", "1", "1", "0", "y", "!", "0", "/", "1", "2", ":", "0", "1", ""];
  for (let i = 0; i < 60; i++) text += `u${i},A,2026-01-01,${i % 2},${cells[i % cells.length]}\n`;
  assertSame("one-byte values", encoder.encode(text));
});

Deno.test("RowReader reads plain rows as the general split reads them, on dimension columns", () => {
  let text = "user_id,variant,date,country,device,m,score\n";
  const countries = ["US", "DE", "FR"];
  for (let i = 0; i < 200; i++) {
    text += `u${i % 70},${i % 3 ? "A" : "B"},2026-01-${String(1 + (i % 9)).padStart(2, "0")},` +
      `${countries[i % 3]},${i % 2 ? "mobile" : "desktop"},${i % 5 ? 0 : 1},${i * 0.25}\n`;
  }
  assertSame("dimensions", encoder.encode(text));
});

Deno.test("RowReader reads plain rows as the general split reads them, on the corpus", () => {
  for (const { name, bytes } of buildCorpus({ seed: CORPUS_SEED })) assertSame(name, bytes);
});

Deno.test("RowReader reads plain rows as the general split reads them, on generated files and their mutations", () => {
  const rng = new Rng(20_261_127);
  for (const file of generateFiles(20_261_126, 120)) {
    assertSame(file.name, file.bytes, [7, 64]);
    for (let i = 0; i < 3; i++) {
      const { what, bytes } = mutate(file.bytes, rng);
      assertSame(`${file.name}, ${what}`, bytes, [64]);
    }
  }
});
