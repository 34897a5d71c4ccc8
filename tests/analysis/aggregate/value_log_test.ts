/**
 * `ValueLog`: every entry reads back as logged, whether its block keeps values or holds 1s only
 * (a 0/1 column so far), across the first block's doublings and full-size blocks.
 */
import { assert, assertEquals } from "../../_assert.ts";
import {
  blockSize,
  type LogEntries,
  logValue,
  ValueLog,
} from "../../../src/analysis/aggregate/_value_log.ts";

const BLOCK = 1 << 15;

/** The log's entries in order, read through `blockSize` and `logValue`. */
function readBack(log: LogEntries): [number, number, number][] {
  const out: [number, number, number][] = [];
  for (let b = 0; b < log.keys.length; b++) {
    for (let i = 0; i < blockSize(log, b); i++) {
      out.push([log.keys[b][2 * i], log.keys[b][2 * i + 1], logValue(log, b, i)]);
    }
  }
  return out;
}

/** Logs `count` entries, the value of entry i being `value(i)`; answers the log and the entries. */
function logged(count: number, value: (i: number) => number) {
  const log = new ValueLog();
  const expected: [number, number, number][] = [];
  for (let i = 0; i < count; i++) {
    const entry: [number, number, number] = [7 * i + 3, 1_000_000 - i, value(i)];
    log.append(...entry);
    expected.push(entry);
  }
  return { entries: log.entries(), expected };
}

Deno.test("a log of 1s only keeps no values, and reads back 1 for every entry", () => {
  for (const count of [1, 255, 256, 257, BLOCK, BLOCK + 1, 2 * BLOCK + 17]) {
    const { entries, expected } = logged(count, () => 1);
    assertEquals(readBack(entries), expected, `${count} entries`);
    assert(entries.values.every((values) => values.length === 0), `${count}: no values kept`);
  }
});

Deno.test("a log keeps values from its first value other than 1 on, in the block of that value too", () => {
  // The first other value in the first block, at a doubling, in a full block, at a block's end.
  for (const first of [0, 100, 256, 1000, BLOCK - 1, BLOCK, BLOCK + 5, 2 * BLOCK - 1]) {
    const count = first + BLOCK + 300;
    const { entries, expected } = logged(
      count,
      (i) => i < first ? 1 : i === first ? -2.5 : i % 3 === 0 ? 1 : i % 3 === 1 ? 0.5 : i / 7,
    );
    assertEquals(readBack(entries), expected, `the first other value at ${first}`);
    // The blocks full before that value hold 1s only; the rest keep their values.
    const blockOf = Math.floor(first / BLOCK);
    entries.values.forEach((values, b) =>
      assertEquals(
        values.length === 0,
        b < blockOf,
        `the first other value at ${first}, block ${b}`,
      )
    );
  }
});
