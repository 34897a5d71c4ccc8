import assert from "node:assert/strict";
import { MAX_CHECKED_CELL } from "../../src/csv/limits.ts";
import { HEADER, rejects, validate } from "./_helpers.ts";

Deno.test("DatasetValidator classifies 0/1 columns as conversion and decimals as numeric", () => {
  const summary = validate(
    "user_id,variant,date,converted,revenue,visits,country,note\n" +
      "u1,A,2026-01-01,1,12.50,3,DE,\n" +
      "u2,B,2026-01-02,0,0,,FR,\n" +
      "u3,B,2026-01-02,,1e2,7,US,\n",
  );
  assert.deepEqual(summary.metrics, [
    { name: "converted", kind: "conversion" },
    { name: "revenue", kind: "numeric" },
    { name: "visits", kind: "numeric" },
  ]);
  assert.deepEqual(summary.dimensions, ["country", "note"]);
});

Deno.test("DatasetValidator turns a metric column into a dimension at its first text cell", () => {
  for (const chunk of [0, 1, 5]) {
    const summary = validate(
      `${HEADER}u1,A,2026-01-01,1,2.5\nu2,B,2026-01-02,0,n/a\nu3,A,2026-01-03,1,4\n`,
      { chunk },
    );
    assert.deepEqual(summary.metrics, [{ name: "converted", kind: "conversion" }]);
    assert.deepEqual(summary.dimensions, ["revenue"]);
  }
});

Deno.test("DatasetValidator calls a column with 0.5 among 0/1 values numeric", () => {
  for (const value of ["0.5", "1.25", "2", "-1", "1e0"]) {
    const summary = validate(`${HEADER}u1,A,2026-01-01,1,1\nu2,B,2026-01-02,0,${value}\n`);
    assert.deepEqual(summary.metrics, [
      { name: "converted", kind: "conversion" },
      { name: "revenue", kind: "numeric" },
    ], value);
  }
});

Deno.test("DatasetValidator calls a metric cell longer than the checked limit text however it is split", () => {
  const long = "1".repeat(MAX_CHECKED_CELL + 1);
  for (const chunk of [0, 7, 100]) {
    const summary = validate(`${HEADER}u1,A,2026-01-01,1,2\nu2,B,2026-01-02,0,${long}\n`, {
      chunk,
    });
    assert.deepEqual(summary.dimensions, ["revenue"], `chunk ${chunk}`);
    rejects(`${HEADER}u1,A,${"2".repeat(MAX_CHECKED_CELL + 1)},1,2\n`, "invalid_date", 2, {
      chunk,
    });
  }
  const fits = "1".repeat(MAX_CHECKED_CELL);
  assert.deepEqual(validate(`${HEADER}u1,A,2026-01-01,1,${fits}\n`, { chunk: 7 }).dimensions, []);
});

Deno.test("DatasetValidator skips empty metric cells", () => {
  const summary = validate(`${HEADER}u1,A,2026-01-01,,\nu2,B,2026-01-02,1,\nu3,A,2026-01-03, ,7\n`);
  assert.deepEqual(summary.metrics, [
    { name: "converted", kind: "conversion" },
    { name: "revenue", kind: "numeric" },
  ]);
});

Deno.test("DatasetValidator accepts a decimal comma with a semicolon delimiter", () => {
  const summary = validate(
    "user_id;variant;date;revenue;converted\nu1;A;2026-01-01;3,5;1\nu2;B;2026-01-02;0,25;0\n",
  );
  assert.equal(summary.delimiter, ";");
  assert.deepEqual(summary.metrics, [
    { name: "revenue", kind: "numeric" },
    { name: "converted", kind: "conversion" },
  ]);
});

Deno.test("DatasetValidator reads quoted cells by their content", () => {
  const summary = validate(`${HEADER}"u1","A","2026-01-02","1","2.5"\n"u2",B,2026-01-03,0,"3,5"\n`);
  assert.deepEqual(summary.metrics, [{ name: "converted", kind: "conversion" }]);
  assert.deepEqual(summary.dimensions, ["revenue"]);
});

Deno.test("DatasetValidator rejects invalid dates with their line", async (t) => {
  for (
    const [value, line] of [
      ["2026-13-45", 3],
      ["2026-02-30", 3],
      ["2025-02-29", 3],
      ["2100-02-29", 3],
      ["", 3],
      ["2026-1-5", 3],
      ['"2026-02-30"', 3],
    ] as const
  ) {
    await t.step(value || "an empty date", () => {
      for (const chunk of [0, 1, 4]) {
        const error = rejects(
          `${HEADER}u1,A,2026-01-01,1,2\nu2,B,${value},0,0\n`,
          "invalid_date",
          line,
          { chunk },
        );
        assert.match(error.message, /not a calendar date written YYYY-MM-DD/);
      }
    });
  }
});

Deno.test("DatasetValidator accepts Feb 29 in leap years and quoted dates", () => {
  const summary = validate(
    `${HEADER}u1,A,2024-02-29,1,2\nu2,B,"2000-02-29",0,0\nu3,A, 2026-01-02 ,0,0\n`,
  );
  assert.equal(summary.rows, 3);
});

Deno.test("DatasetValidator rejects an empty user_id or variant", () => {
  const empty = rejects(`${HEADER}u1,A,2026-01-01,1,2\n,B,2026-01-02,0,0\n`, "invalid_csv", 3);
  assert.equal(empty.message, "Cannot parse line 3: user_id is empty");
  rejects(`${HEADER}u1,A,2026-01-01,1,2\n"",B,2026-01-02,0,0\n`, "invalid_csv", 3);
  rejects(`${HEADER}u1,A,2026-01-01,1,2\n  ,B,2026-01-02,0,0\n`, "invalid_csv", 3);
  const variant = rejects(`${HEADER}u1,,2026-01-01,1,2\n`, "invalid_csv", 2, { chunk: 1 });
  assert.equal(variant.message, "Cannot parse line 2: variant is empty");
});

Deno.test("DatasetValidator reports a short row by its field count, not a shifted cell", () => {
  const error = rejects(`${HEADER}u1,A,1,2\n`, "invalid_csv", 2);
  assert.equal(error.message, "Cannot parse line 2: expected 5 fields, got 4");
});

Deno.test("DatasetValidator requires a metric column", () => {
  const error = rejects("user_id,variant,date,country\nu1,A,2026-01-01,DE\n", "no_metric_column");
  assert.match(error.message, /^No metric column/);
  rejects("user_id,variant,date,score\nu1,A,2026-01-01,\nu2,B,2026-01-01,\n", "no_metric_column");
  rejects("user_id,variant,date\nu1,A,2026-01-01\n", "no_metric_column");
});
