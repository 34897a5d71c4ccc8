/**
 * The scanner's compiled fast path must agree with the general state machine on every input:
 * the same summary or the same error (code and line), whatever the chunk size.
 */
import assert from "node:assert/strict";
import { mulberry32 } from "../../bench/generate_csv.ts";
import { readDay } from "../../src/csv/calendar_date.ts";
import { CsvError } from "../../src/csv/csv_error.ts";
import { parseHeader } from "../../src/csv/header.ts";
import { ColumnChecks } from "../../src/pipeline/column_checks.ts";
import { CsvScanner } from "../../src/pipeline/csv_scanner.ts";
import { Utf8Check } from "../../src/pipeline/utf8_check.ts";
import { ValidationError } from "../../src/pipeline/validation_error.ts";
import { bytes, chunked } from "./_helpers.ts";

/** `chunk` as a view `pad` bytes into a larger buffer (its words then start unaligned). */
function at(chunk: Uint8Array, pad: number): Uint8Array {
  if (pad === 0) return chunk;
  const buffer = new Uint8Array(chunk.length + pad + 3);
  buffer.set(chunk, pad);
  return buffer.subarray(pad, pad + chunk.length);
}

/** Scans the rows after a one-line header; answers what came out, as a comparable string. */
function outcome(
  header: string,
  rows: Uint8Array,
  size: number,
  fastPath: boolean,
  maxLineBytes = 60,
  pad = 0,
): string {
  const { delimiter, names } = parseHeader(bytes(header), 1, 1000);
  const cells = new ColumnChecks(names, delimiter, 1000);
  const scanner = new CsvScanner({
    delimiter,
    fieldCount: names.length,
    cells,
    utf8: new Utf8Check(),
    fastPath,
    maxLineBytes,
  });
  try {
    for (const chunk of chunked(rows, size)) scanner.push(at(chunk, pad));
    scanner.finish();
    return JSON.stringify({
      rows: scanner.rows,
      lines: scanner.lines,
      metrics: cells.metrics(),
      dimensions: cells.dimensions(),
    });
  } catch (error) {
    if (!(error instanceof ValidationError || error instanceof CsvError)) throw error;
    return `${error.code} ${error.message}`;
  }
}

const CELLS: Record<string, string[]> = {
  text: [
    "u1",
    "usr-0a1b",
    "A",
    "B",
    "Ä",
    "日本",
    "😀x",
    " a",
    "a ",
    "",
    " ",
    '"q"',
    '"a,b"',
    '"a;b"',
    '"x\ny"',
    '"say ""hi"""',
    '""',
    '"',
    'a"b',
    "\r",
    "\0",
  ],
  date: [
    "2026-01-01",
    "2024-02-29",
    "2025-02-29",
    "2026-04-31",
    "2026-12-31",
    " 2026-01-02",
    '"2026-01-03"',
    "2026-1-1",
    "",
    "0000-01-01",
    "2026-13-01",
    "2026-01-01x",
    "１",
  ],
  number: [
    "0",
    "1",
    "1.0",
    "0.00",
    "12",
    "12.5",
    "-3",
    "+4",
    ".5",
    "5.",
    "1e3",
    "2E-2",
    "",
    " ",
    "3,5",
    '"7"',
    '"1"',
    "NaN",
    "0x10",
    "abc",
    "1.2.3",
    "e",
    "١",
    "1\r",
  ],
};

Deno.test("CsvScanner's fast path and state machine agree on random rows", () => {
  const random = mulberry32(2026);
  const pick = <T>(list: T[]): T => list[Math.floor(random() * list.length)];
  const headers = [
    ["user_id,variant,date,converted,revenue", ","],
    ["date;variant;user_id;revenue;x;converted", ";"],
    ["revenue,user_id,note,date,variant", ","],
    [`user_id,variant,date,${Array.from({ length: 12 }, (_, i) => `m${i}`).join(",")}`, ","],
  ] as const;
  let accepted = 0;
  let rejected = 0;
  for (let round = 0; round < 1500; round++) {
    const [header, delimiter] = pick([...headers]);
    const names = header.split(delimiter);
    const rowCount = 1 + Math.floor(random() * 6);
    const lines: string[] = [];
    for (let r = 0; r < rowCount; r++) {
      const clean = random() < 0.7;
      let fields = names.map((name) => {
        const list = name === "date"
          ? CELLS.date
          : name === "user_id" || name === "variant" || name === "note"
          ? CELLS.text
          : CELLS.number;
        if (clean) {
          return name === "date"
            ? "2026-01-0" + (1 + r)
            : name === "user_id"
            ? `u${r}`
            : name === "variant"
            ? "A"
            : name === "note"
            ? "n"
            : String(r % 2);
        }
        return pick(list);
      });
      if (random() < 0.05) fields = fields.slice(1);
      if (random() < 0.05) fields.push("extra");
      lines.push(fields.join(delimiter));
    }
    let body = lines.join(pick(["\n", "\r\n", "\n\n"]));
    if (random() < 0.5) body += pick(["\n", "\r\n", ""]);
    const rows = bytes(body);
    const limit = pick([60, 4000]);
    const expected = outcome(header, rows, 0, false, limit);
    if (expected.startsWith("{")) accepted++;
    else rejected++;
    for (const size of [0, 1, 2, 5, 16]) {
      assert.equal(
        outcome(header, rows, size, true, limit),
        expected,
        `${JSON.stringify(body)} in chunks of ${size}`,
      );
      if (size !== 0) {
        assert.equal(
          outcome(header, rows, size, false, limit),
          expected,
          `${JSON.stringify(body)} in chunks of ${size}`,
        );
      }
    }
  }
  assert.ok(accepted > 300 && rejected > 300, `${accepted} accepted, ${rejected} rejected`);
});

Deno.test("CsvScanner's fast path skips long plain cells a word at a time and stops at every byte that matters, at every alignment", () => {
  const random = mulberry32(4242);
  const plain = "abcdefXYZ0123456789-_.~/";
  // Bytes below 0x2D or above 0x7F: some end a field or are errors, the others are plain text
  // that only stops the word test.
  // "\x01" stands for a 0xFF byte (never valid UTF-8), put in after encoding.
  const odd = [
    " ",
    "!",
    "#",
    "'",
    "(",
    "*",
    "+",
    ",",
    '"',
    "\r",
    "\n",
    "\0",
    "\t",
    "é",
    "日",
    "\x7f",
    "\x01",
  ];
  const text = () => {
    let cell = "";
    const length = 1 + Math.floor(random() * 40);
    for (let i = 0; i < length; i++) cell += plain[Math.floor(random() * plain.length)];
    if (random() < 0.3) {
      const where = Math.floor(random() * (cell.length + 1));
      cell = cell.slice(0, where) + odd[Math.floor(random() * odd.length)] + cell.slice(where);
    }
    return cell;
  };
  let accepted = 0;
  let rejected = 0;
  for (let round = 0; round < 400; round++) {
    const header = random() < 0.5
      ? "user_id,variant,date,converted,revenue"
      : "user_id,note,variant,date,converted";
    const lines: string[] = [];
    for (let r = 0; r < 1 + Math.floor(random() * 5); r++) {
      lines.push(
        header.startsWith("user_id,variant")
          ? `${text()},${text()},2026-01-0${1 + r},${r % 2},${r}.25`
          : `${text()},${text()},${text()},2026-01-0${1 + r},${r % 2}`,
      );
    }
    const rows = bytes(lines.join("\n") + "\n").map((b) => b === 1 ? 0xff : b);
    const expected = outcome(header, rows, 0, false, 4000);
    if (expected.startsWith("{")) accepted++;
    else rejected++;
    for (const pad of [0, 1, 2, 3]) {
      for (const size of [0, 7, 64]) {
        assert.equal(
          outcome(header, rows, size, true, 4000, pad),
          expected,
          `${JSON.stringify(lines)} in chunks of ${size} at +${pad}`,
        );
      }
    }
  }
  assert.ok(accepted > 50 && rejected > 50, `${accepted} accepted, ${rejected} rejected`);
});

Deno.test("CsvScanner's fast path and readDay agree on every year, month and day form", () => {
  const years = ["0000", "0001", "0004", "0100", "0400", "1900", "2000", "2024", "2025", "9999"];
  const twoDigits = Array.from({ length: 34 }, (_, n) => String(n).padStart(2, "0"));
  const dates = years.flatMap((year) =>
    twoDigits.slice(0, 14).flatMap((month) => twoDigits.map((day) => `${year}-${month}-${day}`))
  );
  // Bytes next to the digits, a sign and a space in every place.
  for (const odd of ["/", ":", "+", " "]) {
    for (let at = 0; at < 10; at++) {
      if (at !== 4 && at !== 7) {
        dates.push(`2024-02-29`.slice(0, at) + odd + `2024-02-29`.slice(at + 1));
      }
    }
  }
  const valid = dates.filter((date) => readDay(bytes(date), 0, 10) >= 0);
  // Nine real years (0000 is none), four of them leap years (0004, 0400, 2000, 2024).
  assert.equal(valid.length, 5 * 365 + 4 * 366, "the days of the years sampled");
  const header = "user_id,variant,date,m";
  // Every valid date in one input, each taken by both paths.
  const rows = bytes(valid.map((date) => `u,A,${date},1\n`).join(""));
  assert.equal(outcome(header, rows, 0, true, 4000), outcome(header, rows, 0, false, 4000));
  assert.match(outcome(header, rows, 0, true, 4000), new RegExp(`"rows":${valid.length}\\b`));
  // Every other form refused by both, with the same error.
  for (const date of dates.filter((date) => !valid.includes(date))) {
    const row = bytes(`u,A,2026-01-01,1\nu,A,${date},1\n`);
    const fast = outcome(header, row, 0, true, 4000);
    assert.equal(fast, outcome(header, row, 0, false, 4000), date);
    assert.match(fast, /^invalid_date /, date);
  }
});

Deno.test("CsvScanner's fast path takes plain rows and hands the rest on", () => {
  const { names } = parseHeader(bytes("user_id,variant,date,converted,revenue"), 1, 1000);
  const rows = bytes(
    'u1,A,2026-01-01,1,2.5\n"u2",B,"2026-01-02",0,"3"\nu3,"B\nC",2026-01-03,1,4\nu4,D,2026-01-04,0,0\n',
  );
  for (const fastPath of [true, false]) {
    const cells = new ColumnChecks(names, ",", 1000);
    const scanner = new CsvScanner({
      delimiter: ",",
      fieldCount: 5,
      cells,
      utf8: new Utf8Check(),
      fastPath,
    });
    scanner.push(rows);
    scanner.finish();
    assert.deepEqual([scanner.rows, scanner.lines], [4, 6]);
    assert.deepEqual(cells.metrics(), [{ name: "converted", kind: "conversion" }, {
      name: "revenue",
      kind: "numeric",
    }]);
  }
});
