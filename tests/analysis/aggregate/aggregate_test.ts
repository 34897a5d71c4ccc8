import assert from "node:assert/strict";
import {
  aggregateCsv,
  CsvAggregator,
  DaysOutOfRange,
} from "../../../src/analysis/aggregate/aggregate.ts";
import type {
  Aggregate,
  AggregateOptions,
} from "../../../src/analysis/aggregate/aggregate_types.ts";
import { aggregateThreaded } from "../../../src/analysis/aggregate/_aggregate_threaded.ts";
import { generateCsv } from "../../../bench/generate_csv.ts";
import { CsvError } from "../../../src/csv/csv_error.ts";
import { MAX_CHECKED_CELL } from "../../../src/csv/limits.ts";

const encoder = new TextEncoder();

function aggregateText(
  text: string,
  options: {
    metricKinds?: Record<string, "conversion" | "numeric">;
    chunkSize?: number;
    wideDays?: boolean;
  } = {},
): Promise<Aggregate> {
  const bytes = encoder.encode(text);
  const size = options.chunkSize ?? 7;
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.slice(i, i + size));
  const { metricKinds, wideDays } = options;
  return aggregateCsv(ReadableStream.from(chunks), { metricKinds, wideDays });
}

/** The daily series as `date → variant → [cumulativeUsers, metricUsers, metricSum]` for one metric. */
function dailyOf(result: Aggregate, metric: string): Record<string, Record<string, number[]>> {
  return Object.fromEntries(result.daily.map(({ date, variants }) => [
    date,
    Object.fromEntries(
      Object.entries(variants).map((
        [name, point],
      ) => [name, [point.cumulativeUsers, point.metricUsers[metric], point.metricSum[metric]]]),
    ),
  ]));
}

Deno.test("aggregateCsv takes a conversion column's maximum and a numeric column's sum per user", async () => {
  const result = await aggregateText(
    "user_id,variant,date,converted,revenue\n" +
      "u1,A,2026-01-01,0,10\n" +
      "u1,A,2026-01-02,1,5.5\n" +
      "u2,A,2026-01-01,0,0\n" +
      "u3,B,2026-01-01,1,2\n" +
      "u3,B,2026-01-03,1,3\n" +
      "u4,B,2026-01-02,0,1\n",
  );
  assert.equal(result.rows, 6);
  assert.deepEqual(result.variants, ["A", "B"]);
  assert.deepEqual(result.users, { A: 2, B: 2 });
  assert.equal(result.excludedUsers, 0);
  assert.deepEqual(result.metrics, [
    { name: "converted", kind: "conversion", detectedKind: "conversion" },
    { name: "revenue", kind: "numeric", detectedKind: "numeric" },
  ]);
  assert.deepEqual(result.stats, {
    // A: u1 max(0, 1) = 1, u2 0. B: u3 max(1, 1) = 1, u4 0.
    converted: {
      A: { users: 2, sum: 1, sumSquares: 1 },
      B: { users: 2, sum: 1, sumSquares: 1 },
    },
    // A: u1 10 + 5.5 = 15.5, u2 0 -> 15.5, 15.5² = 240.25. B: u3 2 + 3 = 5, u4 1 -> 6, 25 + 1.
    revenue: {
      A: { users: 2, sum: 15.5, sumSquares: 240.25 },
      B: { users: 2, sum: 6, sumSquares: 26 },
    },
  });
});

Deno.test("aggregateCsv skips empty cells, so a user without a value does not count for that metric", async () => {
  const result = await aggregateText(
    "user_id,variant,date,converted,revenue\n" +
      "u1,A,2026-01-01,1,\n" +
      "u2,A,2026-01-01,,4\n" +
      "u2,A,2026-01-02,0,\n" +
      "u3,A,2026-01-02, ,\n",
  );
  assert.deepEqual(result.users, { A: 3 });
  assert.deepEqual(result.stats, {
    // u1 1, u2 0 (its only value), u3 none.
    converted: { A: { users: 2, sum: 1, sumSquares: 1 } },
    // Only u2 has a value: 4.
    revenue: { A: { users: 1, sum: 4, sumSquares: 16 } },
  });
  // 01-01: u1, u2 seen; converted: u1 (1); revenue: u2 (4).
  // 01-02: u3 seen too; converted: u2's 0 arrives; revenue unchanged.
  assert.deepEqual(dailyOf(result, "converted"), {
    "2026-01-01": { A: [2, 1, 1] },
    "2026-01-02": { A: [3, 2, 1] },
  });
  assert.deepEqual(dailyOf(result, "revenue"), {
    "2026-01-01": { A: [2, 1, 4] },
    "2026-01-02": { A: [3, 1, 4] },
  });
});

Deno.test("aggregateCsv drops a column with any text as a dimension", async () => {
  const result = await aggregateText(
    "user_id,variant,date,country,score,note,late,blank\n" +
      "u1,A,2026-01-01,DE,1,,1,\n" +
      "u2,B,2026-01-01,FR,2,x,2,\n" +
      "u3,B,2026-01-02,FR,3,,abc,\n" +
      "u4,B,2026-01-02,FR,1e1,,4,\n",
  );
  // country and note hold text; late turns to text on its third row; blank has no value at all.
  assert.deepEqual(result.metrics, [{ name: "score", kind: "numeric", detectedKind: "numeric" }]);
  assert.deepEqual(Object.keys(result.stats), ["score"]);
  // B: 2 + 3 + 10 = 15; 4 + 9 + 100 = 113.
  assert.deepEqual(result.stats.score.B, { users: 3, sum: 15, sumSquares: 113 });
  assert.deepEqual(Object.keys(result.daily[0].variants.A.metricSum), ["score"]);
});

Deno.test("aggregateCsv detects conversion columns as the upload checks do: 0 and 1 written plainly", async () => {
  const result = await aggregateText(
    "user_id,variant,date,plain,decimals,signed,exponent,padded\n" +
      "u1,A,2026-01-01,1,1.0,+1,1e0,01\n" +
      "u2,A,2026-01-01,0,0.00,-0,0e0,00\n",
  );
  assert.deepEqual(result.metrics.map((metric) => [metric.name, metric.detectedKind]), [
    ["plain", "conversion"],
    ["decimals", "conversion"],
    ["signed", "numeric"],
    ["exponent", "numeric"],
    ["padded", "numeric"],
  ]);
  for (const metric of result.metrics) {
    assert.deepEqual(result.stats[metric.name].A, { users: 2, sum: 1, sumSquares: 1 }, metric.name);
  }
});

Deno.test("aggregateCsv tells variants apart by every byte, short names and long, blanks around ignored", async () => {
  // Names of 1 to 4 and more bytes, some of them prefixes of others, multi-byte ones, and the
  // same names with spaces and tabs around them; each user's variant is written differently.
  const names = [
    "A",
    "B",
    "AB",
    "AC",
    "ctl",
    "cta",
    "ctl2",
    "control",
    "é",
    "è",
    "日",
    "日本",
    "0",
    "00",
  ];
  const rows = ["user_id,variant,date,m"];
  names.forEach((name, v) => {
    for (let u = 0; u <= v; u++) {
      rows.push(`${name}-${u},${name},2026-01-01,1`);
      rows.push(`${name}-${u}, ${name}\t,2026-01-02,0`);
    }
  });
  const result = await aggregateText(rows.join("\n") + "\n");
  assert.deepEqual(result.variants, [...names].sort((a, b) => a < b ? -1 : 1));
  assert.equal(result.excludedUsers, 0);
  assert.deepEqual(result.users, Object.fromEntries(names.map((name, v) => [name, v + 1])));
});

Deno.test("aggregateCsv applies metricKinds over the detected kinds", async () => {
  const result = await aggregateText(
    "user_id,variant,date,clicked,visits\n" +
      "u1,A,2026-01-01,1,2\n" +
      "u1,A,2026-01-02,1,3\n" +
      "u2,A,2026-01-01,0,0\n" +
      "u3,A,2026-01-01,0,-1\n" +
      "u3,A,2026-01-02,0,0\n" +
      "u4,A,2026-01-01,0,-3\n" +
      "u4,A,2026-01-03,0,-1\n" +
      "u4,A,2026-01-02,0,0\n",
    { metricKinds: { clicked: "numeric", visits: "conversion" } },
  );
  assert.deepEqual(result.metrics, [
    { name: "clicked", kind: "numeric", detectedKind: "conversion" },
    { name: "visits", kind: "conversion", detectedKind: "numeric" },
  ]);
  // clicked summed: u1 1 + 1 = 2, the others 0. visits as a maximum: u1 3, u2 0,
  // u3 max(-1, 0) = 0, u4 max(-3, -1, 0) = 0.
  assert.deepEqual(result.stats.clicked.A, { users: 4, sum: 2, sumSquares: 4 });
  assert.deepEqual(result.stats.visits.A, { users: 4, sum: 3, sumSquares: 9 });
  // clicked: 01-01 1; from 01-02 2.
  assert.deepEqual(dailyOf(result, "clicked"), {
    "2026-01-01": { A: [4, 4, 1] },
    "2026-01-02": { A: [4, 4, 2] },
    "2026-01-03": { A: [4, 4, 2] },
  });
  // visits, maxima up to each date: 01-01 2, 0, -1, -3 -> -2; 01-02 3, 0, 0, 0 -> 3;
  // 01-03 3, 0, 0, max(-3, 0, -1) = 0 -> 3.
  assert.deepEqual(dailyOf(result, "visits"), {
    "2026-01-01": { A: [4, 4, -2] },
    "2026-01-02": { A: [4, 4, 3] },
    "2026-01-03": { A: [4, 4, 3] },
  });
});

Deno.test("aggregateCsv leaves users seen in two variants out of users, stats and the daily series", async () => {
  const result = await aggregateText(
    "user_id,variant,date,converted,revenue\n" +
      "u1,A,2026-01-01,1,10\n" +
      "u2,B,2026-01-01,0,3\n" +
      "u3,A,2026-01-02,1,7\n" +
      "u1,A,2026-01-02,0,1\n" +
      "u1,B,2026-01-03,0,2\n" + // u1's second variant, after its first rows and on a later date
      "u4,B,2026-01-03,1,5\n" +
      "u1,A,2026-01-04,1,100\n", // u1 back in A: still excluded, counted once
  );
  assert.equal(result.rows, 7);
  assert.equal(result.excludedUsers, 1);
  assert.deepEqual(result.users, { A: 1, B: 2 });
  assert.deepEqual(result.stats, {
    converted: {
      A: { users: 1, sum: 1, sumSquares: 1 }, // u3
      B: { users: 2, sum: 1, sumSquares: 1 }, // u2 0, u4 1
    },
    revenue: {
      A: { users: 1, sum: 7, sumSquares: 49 },
      B: { users: 2, sum: 8, sumSquares: 34 }, // 3 + 5; 9 + 25
    },
  });
  // Without u1: A has u3 from 01-02; B has u2 from 01-01 and u4 from 01-03. 01-04 has only u1's
  // row, so nothing changes on it.
  assert.deepEqual(dailyOf(result, "revenue"), {
    "2026-01-01": { A: [0, 0, 0], B: [1, 1, 3] },
    "2026-01-02": { A: [1, 1, 7], B: [1, 1, 3] },
    "2026-01-03": { A: [1, 1, 7], B: [2, 2, 8] },
    "2026-01-04": { A: [1, 1, 7], B: [2, 2, 8] },
  });
  assert.deepEqual(dailyOf(result, "converted"), {
    "2026-01-01": { A: [0, 0, 0], B: [1, 1, 0] },
    "2026-01-02": { A: [1, 1, 1], B: [1, 1, 0] },
    "2026-01-03": { A: [1, 1, 1], B: [2, 2, 1] },
    "2026-01-04": { A: [1, 1, 1], B: [2, 2, 1] },
  });
});

Deno.test("aggregateCsv builds the daily cumulative series from rows out of date order", async () => {
  const result = await aggregateText(
    "user_id,variant,date,converted,revenue\n" +
      "u1,A,2026-01-03,1,4\n" +
      "u2,A,2026-01-01,0,1\n" +
      "u1,A,2026-01-01,0,2\n" +
      "u3,B,2026-01-02,1,5\n" +
      "u2,A,2026-01-02,1,\n",
  );
  assert.deepEqual(result.daily.map((day) => day.date), ["2026-01-01", "2026-01-02", "2026-01-03"]);
  // A: u1 and u2 both start on 01-01. converted: u2's 1 on 01-02, u1's on 01-03.
  assert.deepEqual(dailyOf(result, "converted"), {
    "2026-01-01": { A: [2, 2, 0], B: [0, 0, 0] },
    "2026-01-02": { A: [2, 2, 1], B: [1, 1, 1] },
    "2026-01-03": { A: [2, 2, 2], B: [1, 1, 1] },
  });
  // revenue A: 01-01 u1 2 + u2 1 = 3; 01-03 u1's 4 more = 7. B: u3 5 from 01-02.
  assert.deepEqual(dailyOf(result, "revenue"), {
    "2026-01-01": { A: [2, 2, 3], B: [0, 0, 0] },
    "2026-01-02": { A: [2, 2, 3], B: [1, 1, 5] },
    "2026-01-03": { A: [2, 2, 7], B: [1, 1, 5] },
  });
});

const QUOTED = '"user_id","variant","date","converted","revenue","note"\n' +
  '"u,1","A","2026-01-01","1","2.5","line one\nline two"\n' +
  'u2,"B ""x""",2026-01-01,0,"3",plain\n' +
  '"u,1",A,2026-01-02,1,1,"say ""hi"", twice"\n';

Deno.test("aggregateCsv reads quoted cells with delimiters, line ends and escaped quotes", async () => {
  const result = await aggregateText(QUOTED);
  assert.equal(result.rows, 3);
  assert.deepEqual(result.variants, ["A", 'B "x"']);
  assert.deepEqual(result.users, { A: 1, 'B "x"': 1 });
  assert.deepEqual(result.metrics.map((metric) => metric.name), ["converted", "revenue"]);
  // "u,1" (one user over two rows): 2.5 + 1; u2: 3.
  assert.deepEqual(result.stats.revenue, {
    A: { users: 1, sum: 3.5, sumSquares: 12.25 },
    'B "x"': { users: 1, sum: 3, sumSquares: 9 },
  });
});

Deno.test("aggregateCsv reads a semicolon delimiter with decimal commas", async () => {
  const result = await aggregateText(
    "user_id;variant;date;revenue;converted\n" +
      "u1;A;2026-01-01;1,5;1\n" +
      "u1;A;2026-01-02;2,25;0\n" +
      'u2;B;2026-01-01;"3,5";0,0\n',
  );
  assert.deepEqual(result.metrics, [
    { name: "revenue", kind: "numeric", detectedKind: "numeric" },
    { name: "converted", kind: "conversion", detectedKind: "conversion" },
  ]);
  // u1: 1.5 + 2.25 = 3.75; u2: 3.5.
  assert.deepEqual(result.stats.revenue, {
    A: { users: 1, sum: 3.75, sumSquares: 14.0625 },
    B: { users: 1, sum: 3.5, sumSquares: 12.25 },
  });
  assert.deepEqual(result.stats.converted, {
    A: { users: 1, sum: 1, sumSquares: 1 },
    B: { users: 1, sum: 0, sumSquares: 0 },
  });
});

const PLAIN = "user_id,variant,date,converted,revenue\n" +
  "u1,A,2026-01-01,0,10\n" +
  "u2,B,2026-01-02,1,2.5\n" +
  "u1,A,2026-01-02,1,\n";

Deno.test("aggregateCsv reads CRLF line ends and skips blank lines", async () => {
  const expected = await aggregateText(PLAIN);
  assert.equal(expected.rows, 3);
  const crlf = await aggregateText("\r\n" + PLAIN.replaceAll("\n", "\r\n\r\n"));
  assert.deepEqual(crlf, expected);
  assert.deepEqual(crlf.stats.revenue.A, { users: 1, sum: 10, sumSquares: 100 });
});

Deno.test("aggregateCsv ignores spaces and tabs around cells, as the upload checks do", async () => {
  const result = await aggregateText(
    "user_id,variant,date,converted,revenue\n" +
      "u1,A,2026-01-01,1,2\n" +
      " u1 ,\tA , 2026-01-02 , 0 , 3 \n",
  );
  assert.deepEqual(result.users, { A: 1 });
  assert.deepEqual(result.daily.map((day) => day.date), ["2026-01-01", "2026-01-02"]);
  assert.deepEqual(result.stats.revenue.A, { users: 1, sum: 5, sumSquares: 25 });
  assert.deepEqual(result.stats.converted.A, { users: 1, sum: 1, sumSquares: 1 });
});

Deno.test("aggregateCsv strips a leading byte order mark from the first column name", async () => {
  const result = await aggregateText("\ufeff" + PLAIN);
  assert.deepEqual(result, await aggregateText(PLAIN));
  assert.deepEqual(result.users, { A: 1, B: 1 });
});

Deno.test("aggregateCsv answers an empty aggregate for a header without rows", async () => {
  assert.deepEqual(await aggregateText("user_id,variant,date,converted\n\n"), {
    rows: 0,
    variants: [],
    users: {},
    excludedUsers: 0,
    columns: [{ name: "converted", kind: "dimension" }],
    metrics: [], // no value, so no metric
    stats: {},
    covariates: {},
    winsorized: {},
    daily: [],
    // A column without a value is a dimension (of no values yet).
    dimensions: [
      { name: "converted", distinctValues: 0, metric: null, inconsistentUsers: 0, values: [] },
    ],
    userSummary: null,
  });
});

Deno.test("CsvAggregator gives the same result for a file split at every byte position", () => {
  const text = "\ufeff" + QUOTED.replaceAll("\n", "\r\n") + '\r\nu3,B,2026-01-03,1,7.25,"end"';
  const bytes = encoder.encode(text);
  const whole = new CsvAggregator();
  whole.push(bytes);
  const expected = whole.finish();
  assert.equal(expected.rows, 4);
  for (let at = 0; at <= bytes.length; at++) {
    const split = new CsvAggregator();
    split.push(bytes.slice(0, at));
    split.push(bytes.slice(at));
    assert.deepEqual(split.finish(), expected, `split at byte ${at}`);
  }
  const bytewise = new CsvAggregator();
  for (let at = 0; at < bytes.length; at++) bytewise.push(bytes.slice(at, at + 1));
  assert.deepEqual(bytewise.finish(), expected);
});

Deno.test("CsvAggregator keeps copies of partial rows, so the caller may reuse its chunk", () => {
  const bytes = encoder.encode(PLAIN);
  const expected = new CsvAggregator();
  expected.push(bytes);
  const reused = new CsvAggregator();
  const chunk = new Uint8Array(10);
  for (let at = 0; at < bytes.length; at += chunk.length) {
    const part = bytes.subarray(at, at + chunk.length);
    chunk.set(part);
    reused.push(chunk.subarray(0, part.length));
    chunk.fill(0x78); // "x" over everything
  }
  assert.deepEqual(reused.finish(), expected.finish());
});

Deno.test("aggregateCsv calls onChunk before each chunk and stops with its error", async () => {
  const seen: number[] = [];
  const chunks = [encoder.encode(PLAIN.slice(0, 20)), encoder.encode(PLAIN.slice(20))];
  await aggregateCsv(ReadableStream.from(chunks), { onChunk: (chunk) => seen.push(chunk.length) });
  assert.deepEqual(seen, chunks.map((chunk) => chunk.length));
  await assert.rejects(
    aggregateCsv(ReadableStream.from(chunks), {
      onChunk: () => {
        throw new RangeError("validator says no");
      },
    }),
    { name: "RangeError", message: "validator says no" },
  );
});

Deno.test("aggregateCsv throws the CSV rules' CsvError on input it cannot read", async () => {
  const header = "user_id,variant,date,converted\n";
  const cases: [string, string, RegExp][] = [
    [
      header + "u1,A,2026-01-01\n",
      "invalid_csv",
      /^Cannot parse line 2: expected 4 fields, got 3$/,
    ],
    [header + 'u1,A,2026-01-01,"1\n', "invalid_csv", /line 2: a quoted field is not closed/],
    [header + 'u1,A"x",2026-01-01,1\n', "invalid_csv", /line 2: unexpected quote/],
    [
      header + "u1,A,2026-01-01,1\nu2,A,01/02/2026,1\n",
      "invalid_date",
      /^Invalid date on line 3: "01\/02\/2026" is not a calendar date written YYYY-MM-DD$/,
    ],
    [header + " ,A,2026-01-01,1\n", "invalid_csv", /^Cannot parse line 2: user_id is empty$/],
    [header + 'u1,"",2026-01-01,1\n', "invalid_csv", /^Cannot parse line 2: variant is empty$/],
    ["user_id,variant,converted\nu1,A,1\n", "missing_columns", /^Missing required column: date/],
    ["user_id,variant,date,x,x\n", "invalid_csv", /line 1: the column name "x" appears twice/],
    ["user_id\tvariant\tdate\n", "invalid_csv", /delimiter must be a comma or a semicolon/],
    ["", "no_data_rows", /^No data rows: the file is empty$/],
    ["\n\r\n", "no_data_rows", /^No data rows: the file has no header$/],
  ];
  for (const [text, code, message] of cases) {
    await assert.rejects(aggregateText(text), (error: CsvError) => {
      assert.ok(error instanceof CsvError, String(error));
      assert.equal(error.code, code, text);
      assert.match(error.message, message);
      return true;
    });
  }
});

Deno.test("aggregateCsv reads dates by the upload checks' rule: no year 0000, no day past the month", async () => {
  for (const date of ["0000-01-01", "2026-02-29", "2026-02-30", "2026-04-31", "1900-02-29"]) {
    await assert.rejects(
      aggregateText(`user_id,variant,date,converted\nu1,A,2026-01-01,1\nu2,B,${date},0\n`),
      (error: CsvError) => {
        assert.equal(error.code, "invalid_date");
        assert.equal(error.line, 3);
        return true;
      },
      date,
    );
  }
  const leap = await aggregateText("user_id,variant,date,converted\nu1,A,2024-02-29,1\n");
  assert.deepEqual(leap.daily.map((day) => day.date), ["2024-02-29"]);
});

Deno.test("aggregateCsv calls a metric cell longer than the checked limit text, blank or not", async () => {
  const long = " ".repeat(MAX_CHECKED_CELL + 1);
  const result = await aggregateText(
    `user_id,variant,date,converted,padded\nu1,A,2026-01-01,1,2\nu2,B,2026-01-01,0,${long}\n`,
  );
  assert.deepEqual(result.metrics.map((metric) => metric.name), ["converted"]);
});

Deno.test("aggregateCsv calls onHeader once with the delimiter and the trimmed names", async () => {
  const headers: unknown[] = [];
  await aggregateCsv(
    ReadableStream.from([
      encoder.encode('\ufeffuser_id; variant ;"date";m\nu1;A;2026-01-01;1,5\n'),
    ]),
    { onHeader: (header) => headers.push(header) },
  );
  assert.deepEqual(headers, [{ delimiter: ";", names: ["user_id", "variant", "date", "m"] }]);
  const aggregator = new CsvAggregator({ onHeader: (header) => headers.push(header) });
  aggregator.push(encoder.encode("user_id,variant,date,m\n"));
  aggregator.finish();
  assert.deepEqual(headers[1], { delimiter: ",", names: ["user_id", "variant", "date", "m"] });
});

// ---------------------------------------------------------------------------------------------
// A generated dataset against a plain reference implementation.

/** RFC 4180 rows of a small CSV text (tests only: the whole text in memory). */
function parseRows(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      row.push(cell);
      cell = "";
    } else if (c === "\n") {
      row.push(cell.endsWith("\r") ? cell.slice(0, -1) : cell);
      if (row.length > 1 || row[0] !== "") rows.push(row);
      row = [];
      cell = "";
    } else cell += c;
  }
  if (cell !== "" || row.length > 0) rows.push([...row, cell]);
  return rows;
}

/** The aggregate computed the obvious way: a Map of users holding their rows. */
/** NumPy's linear quantile, the plain way: sort, then interpolate. */
function sortedQuantile(values: number[], p: number): number {
  const sorted = values.slice().sort((a, b) => a - b);
  const h = (sorted.length - 1) * p;
  const low = Math.floor(h);
  return low + 1 < sorted.length
    ? sorted[low] + (h - low) * (sorted[low + 1] - sorted[low])
    : sorted[low];
}

function referenceAggregate(
  text: string,
  options: { covariates?: Record<string, string>; winsorize?: Record<string, number> } = {},
): Aggregate {
  const [header, ...rows] = parseRows(text);
  const userField = header.indexOf("user_id");
  const variantField = header.indexOf("variant");
  const dateField = header.indexOf("date");
  const number = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
  const metrics = header.flatMap((name, field) => {
    if (field === userField || field === variantField || field === dateField) return [];
    const cells = rows.map((row) => row[field].trim()).filter((cell) => cell !== "");
    if (cells.length === 0 || !cells.every((cell) => number.test(cell))) return [];
    const kind = cells.every((cell) => /^[01](\.0*)?$/.test(cell)) ? "conversion" : "numeric";
    return [{ name, field, kind: kind as "conversion" | "numeric" }];
  });
  const users = new Map<string, { variants: Set<string>; rows: string[][] }>();
  for (const row of rows) {
    const user = users.get(row[userField]) ?? { variants: new Set(), rows: [] };
    users.set(row[userField], user);
    user.variants.add(row[variantField]);
    user.rows.push(row);
  }
  const kept = [...users.values()].filter((user) => user.variants.size === 1);
  const variants = [...new Set(rows.map((row) => row[variantField]))].sort();
  const dates = [...new Set(rows.map((row) => row[dateField]))].sort();
  const valueOf = (
    user: { rows: string[][] },
    metric: (typeof metrics)[number],
    until = "9999-99-99",
  ): number | null => {
    const values = user.rows
      .filter((row) => row[dateField] <= until && row[metric.field].trim() !== "")
      .map((row) => parseFloat(row[metric.field]));
    if (values.length === 0) return null;
    return metric.kind === "conversion"
      ? Math.max(...values)
      : values.reduce((sum, value) => sum + value, 0);
  };
  const inVariant = (variant: string) => kept.filter((user) => user.variants.has(variant));
  // Covariates: `<m>_pre`, or the column the options name; a covariate has none of its own.
  const names = metrics.map((m) => m.name);
  const pairs = new Map<string, string>();
  for (const name of names) {
    const column = options.covariates?.[name] ?? `${name}_pre`;
    if (column !== name && names.includes(column)) pairs.set(name, column);
  }
  const covariateNames = new Set(pairs.values());
  for (const name of [...pairs.keys()]) if (covariateNames.has(name)) pairs.delete(name);
  const caps = new Map<string, { percentile: number; cap: number }>();
  for (const metric of metrics) {
    const percentile = options.winsorize?.[metric.name];
    if (percentile === undefined || metric.kind !== "numeric" || covariateNames.has(metric.name)) {
      continue;
    }
    const values = kept.map((user) => valueOf(user, metric)).filter((x) => x !== null);
    caps.set(metric.name, { percentile, cap: sortedQuantile(values, percentile) });
  }
  const capped = (metric: (typeof metrics)[number], x: number) =>
    Math.min(x, caps.get(metric.name)?.cap ?? Infinity);
  const sumOver = (values: number[]) => values.reduce((sum, x) => sum + x, 0);
  // Dimensions: the other columns; a user's value is the one of their first row.
  const key = metrics.find((m) => !covariateNames.has(m.name)) ?? null;
  const dimensions = header.flatMap((name, field) => {
    if ([userField, variantField, dateField].includes(field)) return [];
    if (metrics.some((m) => m.field === field)) return [];
    const cellOf = (row: string[]) => row[field].trim() === "" ? "(empty)" : row[field].trim();
    const distinct = [...new Set(rows.map(cellOf))];
    const statsOf = (list: { rows: string[][] }[]) => {
      const values = key === null ? [] : list.map((user) => valueOf(user, key))
        .filter((x) => x !== null).map((x) => capped(key, x));
      return {
        users: values.length,
        sum: sumOver(values),
        sumSquares: sumOver(values.map((x) => x * x)),
      };
    };
    return [{
      name,
      distinctValues: Math.min(distinct.length, 10_000),
      metric: key?.name ?? null,
      inconsistentUsers: kept.filter((user) => new Set(user.rows.map(cellOf)).size > 1).length,
      values: distinct.length > 50 ? null : distinct.map((value) => {
        const holding = (v: string) =>
          inVariant(v).filter((user) => cellOf(user.rows[0]) === value);
        return {
          value,
          users: Object.fromEntries(variants.map((v) => [v, holding(v).length])),
          stats: Object.fromEntries(variants.map((v) => [v, statsOf(holding(v))])),
        };
      }),
    }];
  });
  return {
    rows: rows.length,
    variants,
    users: Object.fromEntries(variants.map((v) => [v, inVariant(v).length])),
    excludedUsers: users.size - kept.length,
    columns: header.flatMap((name, field) =>
      field === userField || field === variantField || field === dateField
        ? []
        : [{ name, kind: metrics.find((m) => m.field === field)?.kind ?? "dimension" }]
    ),
    metrics: metrics.map(({ name, kind }) => ({ name, kind, detectedKind: kind })),
    stats: Object.fromEntries(metrics.map((metric) => [
      metric.name,
      Object.fromEntries(variants.map((v) => {
        const values = inVariant(v).map((user) => valueOf(user, metric)).filter((x) => x !== null)
          .map((x) => capped(metric, x));
        return [v, {
          users: values.length,
          sum: sumOver(values),
          sumSquares: sumOver(values.map((x) => x * x)),
        }];
      })),
    ])),
    covariates: Object.fromEntries([...pairs].map(([name, column]) => {
      const metric = metrics.find((m) => m.name === name)!;
      const covariate = metrics.find((m) => m.name === column)!;
      return [name, {
        column,
        moments: Object.fromEntries(variants.map((v) => {
          const users = inVariant(v).filter((user) => valueOf(user, metric) !== null);
          // x: the sum of the covariate's cells (0 without any), capped as the metric is.
          const x = users.map((user) =>
            capped(
              metric,
              sumOver(
                user.rows.filter((row) => row[covariate.field].trim() !== "")
                  .map((row) => parseFloat(row[covariate.field])),
              ),
            )
          );
          const y = users.map((user) => capped(metric, valueOf(user, metric)!));
          return [v, {
            sumX: sumOver(x),
            sumXSquares: sumOver(x.map((value) => value * value)),
            sumXY: sumOver(x.map((value, i) => value * y[i])),
          }];
        })),
      }];
    })),
    winsorized: Object.fromEntries(caps),
    daily: dates.map((date) => ({
      date,
      rows: rows.filter((row) => row[dateField] === date).length,
      variants: Object.fromEntries(variants.map((v) => {
        const seen = inVariant(v).filter((user) => user.rows.some((row) => row[dateField] <= date));
        const values = (metric: (typeof metrics)[number]) =>
          seen.map((user) => valueOf(user, metric, date)).filter((x) => x !== null)
            .map((x) => capped(metric, x));
        return [v, {
          cumulativeUsers: seen.length,
          metricUsers: Object.fromEntries(metrics.map((m) => [m.name, values(m).length])),
          metricSum: Object.fromEntries(
            metrics.map((m) => [m.name, values(m).reduce((sum, x) => sum + x, 0)]),
          ),
        }];
      })),
    })),
    dimensions,
    userSummary: null,
  };
}

/** Replaces every number in `actual` that is within a relative 1e-9 of `expected`'s by it. */
function closeTo(actual: unknown, expected: unknown): unknown {
  if (typeof actual === "number" && typeof expected === "number") {
    return Math.abs(actual - expected) <= 1e-9 * Math.max(1, Math.abs(expected))
      ? expected
      : actual;
  }
  if (Array.isArray(actual) && Array.isArray(expected)) {
    return actual.map((item, i) => closeTo(item, expected[i]));
  }
  if (actual && expected && typeof actual === "object" && typeof expected === "object") {
    const other = expected as Record<string, unknown>;
    return Object.fromEntries(
      Object.entries(actual).map(([key, value]) => [key, closeTo(value, other[key])]),
    );
  }
  return actual;
}

/** A generated dataset with empty cells, quoted ids, a dimension and users in two variants. */
async function generatedDataset(rows: number): Promise<string> {
  let generated = "";
  const decoder = new TextDecoder();
  for await (const chunk of generateCsv({ rows, users: rows / 10, variants: ["A", "B", "C"] })) {
    generated += decoder.decode(chunk);
  }
  const [head, ...lines] = generated.trimEnd().split("\n");
  const flip: Record<string, string> = { A: "B", B: "C", C: "A" };
  return [`${head},score,country`].concat(lines.map((line, i) => {
    const [user, variant, date, converted, revenue] = line.split(",");
    const n = i + 1;
    const score = n % 17 === 0
      ? ""
      : n % 13 === 0
      ? `${(n % 9) + 1}.5e-3`
      : String(((n * 7919) % 2001 - 1000) / 8);
    return [
      n % 29 === 0 ? `"${user}"` : user,
      n % 53 === 0 ? flip[variant] : variant, // a few users end up in two variants
      date,
      n % 11 === 0 ? "" : converted,
      n % 7 === 0 ? "" : revenue,
      score,
      n % 5 === 0 ? '"Berlin, DE"' : "FR",
    ].join(",");
  })).join("\n") + "\n";
}

function chunksOf(bytes: Uint8Array, size: number): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size));
  return chunks;
}

Deno.test("aggregateCsv matches a plain reference implementation on a generated dataset", async () => {
  const text = await generatedDataset(50_000);
  const expected = referenceAggregate(text);
  assert.ok(expected.excludedUsers > 100, "the dataset has users in two variants");
  assert.deepEqual(expected.metrics.map((metric) => metric.name), [
    "converted",
    "revenue",
    "score",
  ]);
  const result = await aggregateCsv(ReadableStream.from(chunksOf(encoder.encode(text), 4093)));
  assert.deepEqual(closeTo(result, expected), expected);
});

/**
 * The generated dataset with `revenue_pre` (the automatic covariate of revenue), `visits` (a
 * covariate of converted by the options) and `minutes` (heavy-tailed), some cells empty.
 */
async function adjustedDataset(rows: number): Promise<string> {
  const [head, ...lines] = (await generatedDataset(rows)).trimEnd().split("\n");
  return [`${head},revenue_pre,visits,minutes`].concat(lines.map((line, i) => {
    const n = i + 1;
    const [, , , , revenue] = line.split(",");
    const pre = n % 19 === 0 ? "" : String(Number(revenue || "3") * 0.8 + (n % 23) - 5);
    const visits = n % 31 === 0 ? "" : String((n * 37) % 9);
    const minutes = String(Math.round(1e6 / ((n * 7919) % 997 + 1) ** 2) / 100);
    return `${line},${pre},${visits},${minutes}`;
  })).join("\n") + "\n";
}

Deno.test("aggregateCsv caps and sums covariate moments as a plain reference does", async () => {
  const text = await adjustedDataset(40_000);
  const options = {
    covariates: { converted: "visits" },
    winsorize: { revenue: 0.99, minutes: 0.95, converted: 0.9, visits: 0.9 },
  };
  const expected = referenceAggregate(text, options);
  // converted is a conversion and visits a covariate: neither is capped.
  assert.deepEqual(Object.keys(expected.winsorized), ["revenue", "minutes"]);
  assert.deepEqual(Object.keys(expected.covariates), ["converted", "revenue"]);
  const bytes = encoder.encode(text);
  const result = await aggregateCsv(ReadableStream.from(chunksOf(bytes, 4093)), options);
  assert.deepEqual(closeTo(result, expected), expected);
  const alone = new CsvAggregator(options);
  for (const chunk of chunksOf(bytes, 65536)) alone.push(chunk);
  assert.deepEqual(closeTo(alone.finish(), expected), expected);
  // The cap binds: the capped sums are below the plain ones.
  const plain = referenceAggregate(text);
  assert.ok(result.stats.minutes.A.sum < plain.stats.minutes.A.sum);
  assert.deepEqual(plain.covariates.revenue.column, "revenue_pre");
});

Deno.test("aggregateCsv answers on its worker exactly what CsvAggregator answers on one thread", async () => {
  // The user summary too: the worker's users and this thread's, hashed and sorted together.
  const bytes = encoder.encode(await generatedDataset(60_000));
  const alone = new CsvAggregator({ userSummary: true });
  for (const chunk of chunksOf(bytes, 65536)) alone.push(chunk);
  const { result, modes } = await onWorker(bytes, { userSummary: true }, 4093);
  assert.deepEqual(modes, ["threaded"]);
  assert.deepEqual(result, alone.finish());
});

Deno.test("aggregateCsv's worker answers what one thread answers for ids that outgrow a batch's room", async () => {
  // Ids of up to 120 bytes outgrow a batch's room for ids (8 words a row) and take a new array.
  const lines = (await generatedDataset(40_000)).trimEnd().split("\n");
  const bytes = encoder.encode(
    [
      lines[0],
      ...lines.slice(1).map((line, i) => {
        const comma = line.indexOf(",");
        const id = line.slice(0, comma).replaceAll('"', "");
        return `${id}-${"x".repeat((i * 7) % 113)}${line.slice(comma)}`;
      }),
    ].join("\n") + "\n",
  );
  const alone = new CsvAggregator({ userSummary: true });
  alone.push(bytes);
  const { result, modes } = await onWorker(bytes, { userSummary: true });
  assert.deepEqual(modes, ["threaded"]);
  assert.deepEqual(result, alone.finish());
});

Deno.test("aggregateCsv hands its worker the rows read while the worker started", async () => {
  // More rows than are kept back while the worker starts, read without a pause: reading waits
  // for the worker once, which then gets the batches read so far.
  const bytes = encoder.encode(await generatedDataset(200_000));
  const alone = new CsvAggregator();
  alone.push(bytes);
  const modes: string[] = [];
  const result = await aggregateThreaded(
    ReadableStream.from(chunksOf(bytes, 1 << 20)),
    {},
    undefined,
    (mode) => modes.push(mode),
  );
  assert.deepEqual(modes, ["threaded"]);
  assert.deepEqual(result, alone.finish());
});

Deno.test("aggregateCsv reads on one thread when its worker cannot start", async () => {
  const bytes = encoder.encode(await generatedDataset(20_000));
  const alone = new CsvAggregator();
  alone.push(bytes);
  const modes: string[] = [];
  const missing = new URL("../no_such_worker.ts", import.meta.url);
  async function* slowly() {
    for (const chunk of chunksOf(bytes, 65536)) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      yield chunk;
    }
  }
  const result = await aggregateThreaded(slowly(), {}, missing, (mode) => modes.push(mode));
  assert.deepEqual(modes, ["local"]);
  assert.deepEqual(result, alone.finish());
});

Deno.test("aggregateCsv reads on the calling thread alone with worker: false", async () => {
  const bytes = encoder.encode(await generatedDataset(20_000));
  const alone = new CsvAggregator();
  alone.push(bytes);
  const modes: string[] = [];
  const result = await aggregateThreaded(
    ReadableStream.from(chunksOf(bytes, 65536)),
    { worker: false },
    undefined,
    (mode) => modes.push(mode),
  );
  assert.deepEqual(modes, ["local"]);
  assert.deepEqual(result, alone.finish());
});

Deno.test("aggregateCsv reads a small input of known size on this thread, with the same answer", async () => {
  const bytes = encoder.encode(await generatedDataset(2_000));
  const alone = new CsvAggregator();
  alone.push(bytes);
  const expected = alone.finish();
  let workers = 0;
  const original = globalThis.Worker;
  globalThis.Worker = class extends original {
    constructor(...args: ConstructorParameters<typeof Worker>) {
      workers++;
      super(...args);
    }
  };
  try {
    const result = await aggregateCsv(ReadableStream.from(chunksOf(bytes, 4093)), {
      sizeBytes: bytes.length,
    });
    assert.equal(workers, 0);
    assert.deepEqual(result, expected);
  } finally {
    globalThis.Worker = original;
  }
});

Deno.test("aggregateCsv counts days centuries apart and out of order, as the reference does", async () => {
  const text = "user_id,variant,date,converted,revenue\n" +
    "u1,A,2026-01-05,1,4\n" +
    "u2,B,1990-03-01,0,1\n" +
    "u3,A,2026-01-01,1,2\n" +
    "u4,B,2100-12-31,1,5\n" +
    "u2,B,1990-03-01,1,1\n" +
    "u5,A,0001-01-01,0,3\n" +
    "u6,B,9999-12-31,1,7\n" +
    "u1,A,2026-01-02,0,1\n";
  const expected = referenceAggregate(text);
  assert.deepEqual(
    expected.daily.map((day) => day.date),
    [
      "0001-01-01",
      "1990-03-01",
      "2026-01-01",
      "2026-01-02",
      "2026-01-05",
      "2100-12-31",
      "9999-12-31",
    ],
  );
  for (const chunkSize of [3, 1 << 16]) {
    // 16-bit days hold 1950 to 2126: the run stops, for the caller to read again with 32-bit days.
    await assert.rejects(aggregateText(text, { chunkSize }), DaysOutOfRange);
    const wide = await aggregateText(text, { chunkSize, wideDays: true });
    assert.deepEqual(closeTo(wide, expected), expected);
  }
  // On the calling thread (a small input), days are 32-bit.
  const small = new CsvAggregator({});
  small.push(encoder.encode(text));
  assert.deepEqual(closeTo(small.finish(), expected), expected);
});

Deno.test("aggregateCsv with 16-bit days answers as with 32-bit ones, at both ends of their span", async () => {
  // 1950-01-01 and 2126-03-01 are the first and last days 16-bit fields hold (year * 372 + …).
  const text = "user_id,variant,date,converted,revenue\n" +
    "u1,A,2026-01-05,1,4\n" +
    "u2,B,1950-01-01,0,1\n" +
    "u3,A,2126-03-01,1,2\n" +
    "u2,B,2126-03-01,1,3\n" +
    "u4,B,1950-01-01,1,5\n" +
    "u1,A,1950-01-02,0,1\n" +
    "u3,A,2026-01-01,0,0\n";
  const expected = referenceAggregate(text);
  for (const chunkSize of [3, 1 << 16]) {
    assert.deepEqual(closeTo(await aggregateText(text, { chunkSize }), expected), expected);
  }
  // A day past either end is refused.
  for (const date of ["1949-12-31", "2126-03-02"]) {
    await assert.rejects(aggregateText(`${text}u9,A,${date},1,1\n`), DaysOutOfRange);
  }
});

Deno.test("aggregateCsv answers the same whatever size and number of users it is told to expect", async () => {
  // Users as many as rows: the user records outgrow a reservation made from a small size.
  let text = "";
  const decoder = new TextDecoder();
  for await (const chunk of generateCsv({ rows: 60_000, users: 60_000, seed: 4 })) {
    text += decoder.decode(chunk);
  }
  const bytes = encoder.encode(text);
  const alone = new CsvAggregator({ userSummary: true });
  alone.push(bytes);
  const expected = alone.finish();
  // Above the small-input limit: a reservation of the input's size, odd, too small or much too
  // large; tables sized for none, all, far fewer or far more users than there are (the last
  // bounded by the size).
  for (const sizeBytes of [bytes.length, 1_048_583, 40_000_001]) {
    for (const expectedUsers of [undefined, 60_000, 1_000, 5_000_000]) {
      for (const worker of [true, false]) {
        const result = await aggregateCsv(ReadableStream.from(chunksOf(bytes, 65536)), {
          sizeBytes,
          expectedUsers,
          worker,
          userSummary: true,
        });
        const about = `sizeBytes ${sizeBytes}, expectedUsers ${expectedUsers}, worker ${worker}`;
        assert.deepEqual(result, expected, about);
      }
    }
  }
});

/** A generated file of `rows` rows over `users` users (seeded), as bytes. */
async function generatedBytes(rows: number, users: number, seed: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const chunk of generateCsv({ rows, users, seed })) parts.push(chunk.slice());
  return new Uint8Array(await new Blob(parts as Uint8Array<ArrayBuffer>[]).arrayBuffer());
}

/**
 * `aggregateThreaded` with every batch on the worker (the input, in chunks of `chunk` bytes, waits
 * until it is up).
 */
async function onWorker(bytes: Uint8Array, options: AggregateOptions, chunk = 65536) {
  const modes: string[] = [];
  let up!: () => void;
  const workerUp = new Promise<void>((resolve) => up = resolve);
  async function* afterStart() {
    await workerUp;
    yield* chunksOf(bytes, chunk);
  }
  const result = await aggregateThreaded(afterStart(), options, undefined, (mode) => {
    modes.push(mode);
    up();
  });
  return { result, modes };
}

/** A run on the worker answers what `CsvAggregator` answers on one thread. */
async function assertWorkerRun(
  bytes: Uint8Array,
  options: AggregateOptions,
  label: string,
): Promise<void> {
  const alone = new CsvAggregator(options);
  alone.push(bytes);
  const expected = alone.finish();
  const { result, modes } = await onWorker(bytes, options);
  assert.deepEqual(modes, ["threaded"], label);
  assert.deepEqual(result, expected, label);
}

Deno.test("aggregateCsv runs in a row on the worker, each as a fresh run", async () => {
  // Many users, then fewer and others (what the last table wrote must not show), then the
  // first again with the user summary and a size hint, and a file with dimensions.
  const files = [
    { bytes: await generatedBytes(60_000, 30_000, 1), options: {} },
    { bytes: await generatedBytes(20_000, 5_000, 2), options: {} },
    {
      bytes: await generatedBytes(60_000, 30_000, 1),
      options: { userSummary: true, expectedUsers: 30_000 },
    },
    { bytes: encoder.encode(await generatedDataset(40_000)), options: { userSummary: true } },
  ];
  for (const [i, { bytes, options }] of files.entries()) {
    await assertWorkerRun(bytes, options, `run ${i}`);
  }
});

Deno.test("aggregateCsv lists the columns in header order: a metric's detected kind, or a dimension", async () => {
  const text = "user_id,visits,variant,country,date,converted,note,revenue\n" +
    "u1,3,A,NL,2024-01-01,1,,2.5\n" +
    "u2,0,B,DE,2024-01-01,0,,\n";
  // Declared a conversion or not, a column's kind is what its values show.
  const declared: Record<string, "conversion" | "numeric">[] = [{}, { converted: "numeric" }];
  for (const metricKinds of declared) {
    const aggregate = await aggregateText(text, { metricKinds });
    assert.deepEqual(aggregate.columns, [
      { name: "visits", kind: "numeric" },
      { name: "country", kind: "dimension" },
      { name: "converted", kind: "conversion" },
      { name: "note", kind: "dimension" }, // no value at all
      { name: "revenue", kind: "numeric" },
    ]);
  }
});
