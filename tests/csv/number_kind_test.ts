import assert from "node:assert/strict";
import { mulberry32 } from "../../bench/generate_csv.ts";
import { MAX_CHECKED_CELL } from "../../src/csv/limits.ts";
import { BINARY, EMPTY, NUMBER, numberKind, readNumber, TEXT } from "../../src/csv/number_kind.ts";

const encoder = new TextEncoder();

function kind(text: string, decimalComma = false): number {
  const data = encoder.encode(`[${text}]`); // a cell inside a larger buffer
  return numberKind(data, 1, data.length - 1, decimalComma);
}

Deno.test("numberKind tells 0/1 from other numbers", () => {
  for (const text of ["0", "1", "1.0", "0.00", "1.", " 1 "]) assert.equal(kind(text), BINARY, text);
  for (
    const text of [
      "2",
      "10",
      "01",
      "-1",
      "+1",
      "0.5",
      ".5",
      "3.25",
      "1e3",
      "1E-3",
      "-2.5e+10",
      "007",
      "1.0e0",
    ]
  ) {
    assert.equal(kind(text), NUMBER, text);
  }
});

Deno.test("numberKind calls blank cells empty", () => {
  assert.equal(kind(""), EMPTY);
  assert.equal(kind("  \t"), EMPTY);
});

Deno.test("numberKind calls NaN, Infinity, hex and other text text", () => {
  for (
    const text of [
      "NaN",
      "Infinity",
      "-Infinity",
      "0x1F",
      "1,5",
      "1.2.3",
      ".",
      "-",
      "+",
      "e5",
      "1e",
      "1e+",
      "12a",
      "1 2",
      "$5",
      "1_000",
      "٣",
      '"1"',
    ]
  ) {
    assert.equal(kind(text), TEXT, text);
  }
});

Deno.test("numberKind accepts a decimal comma only when asked", () => {
  assert.equal(kind("3,5", true), NUMBER);
  assert.equal(kind("1,0", true), BINARY);
  assert.equal(kind("3,5", false), TEXT);
  assert.equal(kind("3,5,1", true), TEXT);
});

Deno.test("numberKind calls a cell longer than the checked limit text", () => {
  assert.equal(kind("1".repeat(MAX_CHECKED_CELL)), NUMBER);
  assert.equal(kind("1".repeat(MAX_CHECKED_CELL + 1)), TEXT);
});

Deno.test("numberKind writes the value of a number cell when asked", () => {
  const value = new Float64Array(1);
  for (
    const [text, comma, expected, expectedKind] of [
      ["1", false, 1, BINARY],
      [" 0.00 ", false, 0, BINARY],
      ["1,0", true, 1, BINARY],
      ["-2.5e+1", false, -25, NUMBER],
      ["3,25", true, 3.25, NUMBER],
      ["12345678901234567890", false, 12345678901234567890, NUMBER],
    ] as const
  ) {
    const data = encoder.encode(text);
    value[0] = NaN;
    assert.equal(numberKind(data, 0, data.length, comma, value), expectedKind, text);
    assert.equal(value[0], expected, text);
  }
  const text = encoder.encode("12a");
  value[0] = 7;
  assert.equal(numberKind(text, 0, text.length, false, value), TEXT);
  assert.equal(value[0], 7, "text leaves the value alone");
});

Deno.test("readNumber equals parseFloat on tricky numbers and rejects what is not a number", () => {
  const tricky = [
    "0.1",
    "0.2",
    "0.3",
    "123456.789",
    "1e-5",
    "-0.0",
    "-0",
    "+5",
    ".5",
    "5.",
    "0000.5000",
    "0.30000000000000004",
    "9007199254740991",
    "9007199254740992",
    "9007199254740993",
    "123456789012345",
    "1234567890123456",
    "12345678901234567890",
    "99999999999999.99",
    "0.1234567890123456789",
    "3.14159265358979323846",
    "1.00000000000000011102230246251565404236316680908203125",
    "0.000000000000000000001",
    "0.0000000000000000000000001",
    "1.7976931348623157e308",
    "4.9e-324",
    "2.2250738585072014e-308",
    "1E5",
    "1e+5",
    "-1.5E-3",
    "2.5e0",
    "1e400",
    "-1e400",
    "  42 ",
    "\t-7.25",
    "1.0",
    "0.00",
    "999999999999999999999.5",
  ];
  const random = mulberry32(7);
  for (let i = 0; i < 5000; i++) {
    const value = (random() - 0.5) * 10 ** Math.floor(random() * 30 - 10);
    tricky.push(String(value), value.toFixed(Math.floor(random() * 20)));
    let digits = "";
    for (let d = 0; d < 1 + random() * 24; d++) digits += Math.floor(random() * 10);
    const point = Math.floor(random() * digits.length);
    tricky.push(`${digits.slice(0, point)}.${digits.slice(point)}`);
  }
  for (const text of tricky) {
    const bytes = encoder.encode(text);
    const expected = parseFloat(text);
    assert.ok(Object.is(readNumber(bytes, 0, bytes.length, false), expected), text);
    const comma = encoder.encode(text.replace(".", ","));
    assert.ok(
      Object.is(readNumber(comma, 0, comma.length, true), expected),
      `${text} with a comma`,
    );
  }
  for (
    const text of [
      "",
      " ",
      ".",
      "-",
      "+",
      "1e",
      "e5",
      "1.2.3",
      "0x10",
      "Infinity",
      "NaN",
      "1 2",
      "1,5",
      "--1",
      "1e5.5",
      "1-",
    ]
  ) {
    const bytes = encoder.encode(text);
    assert.ok(Number.isNaN(readNumber(bytes, 0, bytes.length, false)), text);
  }
});
