import assert from "node:assert/strict";
import { daysInMonth, formatDay, isDate, readDay } from "../../src/csv/calendar_date.ts";

const encoder = new TextEncoder();

function date(text: string): boolean {
  const data = encoder.encode(text);
  return isDate(data, 0, data.length);
}

function day(text: string): number {
  const data = encoder.encode(`[${text}]`); // a cell inside a larger buffer
  return readDay(data, 1, data.length - 1);
}

Deno.test("isDate accepts calendar dates written YYYY-MM-DD", () => {
  for (
    const text of [
      "2026-01-01",
      "2026-12-31",
      "2024-02-29",
      "2000-02-29",
      "0001-01-01",
      "9999-12-31",
      " 2026-04-30 ",
      "2026-01-02\t",
    ]
  ) {
    assert.ok(date(text), text);
  }
});

Deno.test("isDate rejects impossible dates and other shapes", () => {
  for (
    const text of [
      "2026-13-45",
      "2026-02-30",
      "2025-02-29",
      "1900-02-29",
      "2026-04-31",
      "2026-00-10",
      "2026-01-00",
      "0000-01-01",
      "2026-1-05",
      "2026/01/05",
      "26-01-05",
      "2026-01-05T00",
      "20260105",
      "2026-0a-05",
      "",
      "   ",
      "2026-01-32",
      "x026-01-01",
    ]
  ) {
    assert.equal(date(text), false, text);
  }
});

Deno.test("daysInMonth follows the Gregorian leap-year rule", () => {
  assert.equal(daysInMonth(2024, 2), 29);
  assert.equal(daysInMonth(2026, 2), 28);
  assert.equal(daysInMonth(1900, 2), 28);
  assert.equal(daysInMonth(2000, 2), 29);
  assert.equal(daysInMonth(2026, 4), 30);
  assert.equal(daysInMonth(2026, 12), 31);
});

Deno.test("readDay answers day numbers that sort like the dates and format back", () => {
  const dates = [
    "0001-01-01",
    "1999-12-31",
    "2024-02-29",
    "2026-01-01",
    "2026-01-02",
    "9999-12-31",
  ];
  const days = dates.map(day);
  assert.deepEqual([...days].sort((a, b) => a - b), days);
  assert.deepEqual(days.map(formatDay), dates);
  assert.equal(day(" 2026-03-04\t"), day("2026-03-04"));
});

Deno.test("readDay refuses year 0000 and days past the month's length, as isDate does", () => {
  for (const text of ["0000-01-01", "2026-02-29", "2026-02-30", "2026-04-31", "1900-02-29"]) {
    assert.equal(day(text), -1, text);
    assert.equal(date(text), false, text);
  }
});
