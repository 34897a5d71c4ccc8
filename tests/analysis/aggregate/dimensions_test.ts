/**
 * The aggregation's dimension columns and user summary: the 50-value and 10,000-value rules, the
 * first row's value per user, rows per date, and every user's 64-bit id hash with their variant.
 */
import assert from "node:assert/strict";
import { aggregateCsv, CsvAggregator } from "../../../src/analysis/aggregate/aggregate.ts";
import type {
  Aggregate,
  AggregateOptions,
} from "../../../src/analysis/aggregate/aggregate_types.ts";
import { sortByHash } from "../../../src/analysis/aggregate/_user_hashes.ts";
import { recordLayout, VARIANT_WORD } from "../../../src/analysis/aggregate/_user_tally.ts";

const encoder = new TextEncoder();

function aggregateText(text: string, options: AggregateOptions = {}): Promise<Aggregate> {
  const bytes = encoder.encode(text);
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += 4096) chunks.push(bytes.slice(i, i + 4096));
  return aggregateCsv(ReadableStream.from(chunks), options);
}

/** One user per row; `cell(i)` is row i's dimension cell; variant A for even i, B for odd. */
function oneColumn(rows: number, cell: (i: number) => string): string {
  let text = "user_id,variant,date,converted,d\n";
  for (let i = 0; i < rows; i++) {
    text += `u${i},${i % 2 ? "B" : "A"},2026-01-01,${i % 3 ? 0 : 1},${cell(i)}\n`;
  }
  return text;
}

Deno.test("aggregateCsv breaks down a dimension of up to 50 values and skips one of 51", async () => {
  const fifty = await aggregateText(oneColumn(500, (i) => `v${i % 50}`));
  const [d50] = fifty.dimensions!;
  assert.equal(d50.name, "d");
  assert.equal(d50.distinctValues, 50);
  assert.equal(d50.values!.length, 50);
  assert.deepEqual(d50.values![0].value, "v0");
  // v0: rows 0, 50, …, 450: all even, so all in A; converted on rows divisible by 3 (0, 150, 300, 450).
  assert.deepEqual(d50.values![0].users, { A: 10, B: 0 });
  assert.deepEqual(d50.values![0].stats.A, { users: 10, sum: 4, sumSquares: 4 });
  assert.equal(d50.metric, "converted");

  const fiftyOne = await aggregateText(oneColumn(510, (i) => `v${i % 51}`));
  assert.deepEqual(fiftyOne.dimensions, [{
    name: "d",
    distinctValues: 51,
    metric: "converted",
    inconsistentUsers: 0,
    values: null,
  }]);
});

Deno.test("aggregateCsv counts a dimension's values up to 10,000, then stops", async () => {
  const many = await aggregateText(oneColumn(10_050, (i) => `value-${i}`));
  assert.equal(many.dimensions![0].distinctValues, 10_000);
  assert.equal(many.dimensions![0].values, null);
  const exact = await aggregateText(oneColumn(20_000, (i) => `value-${i % 9_999}`));
  assert.equal(exact.dimensions![0].distinctValues, 9_999);
});

Deno.test("aggregateCsv reads dimension cells by the CSV rules: trimmed, unquoted, empty is a value", async () => {
  const result = await aggregateText(
    "user_id,variant,date,converted,country\n" +
      'u1,A,2026-01-01,1," NL"\n' +
      "u2,A,2026-01-01,0,NL \n" +
      "u3,B,2026-01-01,1,\n" +
      'u4,B,2026-01-01,0,"Berlin, ""DE"""\n' +
      "u5,B,2026-01-02,0,\t\n",
  );
  const [country] = result.dimensions!;
  assert.deepEqual(country.values!.map((v) => [v.value, v.users]), [
    ["NL", { A: 2, B: 0 }],
    ["(empty)", { A: 0, B: 2 }],
    ['Berlin, "DE"', { A: 0, B: 1 }],
  ]);
  assert.deepEqual(country.values![0].stats.A, { users: 2, sum: 1, sumSquares: 1 });
});

Deno.test("aggregateCsv counts a user under their first row's value and counts users with several", async () => {
  const result = await aggregateText(
    "user_id,variant,date,revenue,device,plan\n" +
      "u1,A,2026-01-02,5,mobile,free\n" +
      "u1,A,2026-01-01,7,desktop,free\n" + // an earlier date, a later row: mobile still counts
      "u2,A,2026-01-01,1,desktop,paid\n" +
      "u3,B,2026-01-01,2,mobile,free\n" +
      "u3,B,2026-01-03,,mobile,paid\n" +
      "u4,A,2026-01-01,1,tablet,free\n" +
      "u4,B,2026-01-01,1,desktop,free\n", // u4 in two variants: left out
  );
  const [device, plan] = result.dimensions!;
  assert.equal(device.inconsistentUsers, 1); // u1
  assert.equal(plan.inconsistentUsers, 1); // u3
  assert.deepEqual(device.values!.map((v) => [v.value, v.users]), [
    ["mobile", { A: 1, B: 1 }],
    ["desktop", { A: 1, B: 0 }],
    ["tablet", { A: 0, B: 0 }],
  ]);
  // The key metric (revenue, the only metric) per value: u1 12 under mobile, u3 2.
  assert.deepEqual(device.values![0].stats, {
    A: { users: 1, sum: 12, sumSquares: 144 },
    B: { users: 1, sum: 2, sumSquares: 4 },
  });
  // Rows per date: all rows, u4's too.
  assert.deepEqual(result.daily.map((d) => [d.date, d.rows]), [
    ["2026-01-01", 5],
    ["2026-01-02", 1],
    ["2026-01-03", 1],
  ]);
});

Deno.test("aggregateCsv breaks dimensions down by the key metric the options name, capped", async () => {
  const text = "user_id,variant,date,converted,revenue,country\n" +
    "u1,A,2026-01-01,1,10,NL\n" +
    "u2,A,2026-01-01,0,1000,NL\n" +
    "u3,B,2026-01-01,1,20,DE\n" +
    "u4,B,2026-01-01,0,30,NL\n";
  const result = await aggregateText(text, { keyMetric: "revenue", winsorize: { revenue: 0.75 } });
  const cap = result.winsorized.revenue.cap; // 30 + 0.25 · (1000 − 30) = 272.5
  assert.equal(cap, 272.5);
  const [country] = result.dimensions!;
  assert.equal(country.metric, "revenue");
  assert.deepEqual(country.values![0].stats.A, {
    users: 2,
    sum: 10 + cap,
    sumSquares: 100 + cap * cap,
  });
});

Deno.test("aggregateCsv keeps a column of numbers a metric, and one with text a dimension", async () => {
  // `score` has many numbers; `zip` has numbers then text: a dimension of more than 50 values
  // once the text shows (its count then is a lower bound: the numbers were no longer counted).
  let text = "user_id,variant,date,score,zip\n";
  for (let i = 0; i < 300; i++) {
    text += `u${i},${i % 2 ? "B" : "A"},2026-01-01,${i * 1.5},${i < 200 ? 1000 + i : `Z${i}`}\n`;
  }
  const result = await aggregateText(text);
  assert.deepEqual(result.metrics.map((m) => m.name), ["score"]);
  const [zip] = result.dimensions!;
  assert.equal(zip.name, "zip");
  assert.equal(zip.values, null);
  assert.ok(zip.distinctValues > 50 && zip.distinctValues <= 300, String(zip.distinctValues));
  // A column of numbers with few values that turns to text is reported in full.
  const few = await aggregateText(oneColumn(100, (i) => i < 60 ? String(i % 3) : "x"));
  assert.deepEqual(few.dimensions![0].values!.map((v) => v.value), ["0", "1", "2", "x"]);
});

Deno.test("aggregateCsv counts each user of a 0/1 column that turns to text under the right value", async () => {
  // Lone 0s and 1s (read without asking the dictionary after the first of each), the same values
  // with blanks around (asked), a first value that is neither, and 0s and 1s after the text.
  const cell = (i: number) =>
    i === 0 ? "2" : i === 7 ? " 1" : i === 11 ? "0 " : i === 3_000 ? "x" : String((i * 7) % 3 % 2);
  const rows = 4_000;
  const result = await aggregateText(oneColumn(rows, cell));
  const expected = new Map<string, { A: number; B: number }>();
  for (let i = 0; i < rows; i++) {
    const value = cell(i).trim();
    const users = expected.get(value) ?? { A: 0, B: 0 };
    users[i % 2 ? "B" : "A"]++;
    expected.set(value, users);
  }
  const [d] = result.dimensions!;
  assert.deepEqual(d.values!.map((v) => [v.value, v.users]), [...expected]);
});

Deno.test("aggregateCsv ignores the other columns with dimensions: false, and the rest is the same", async () => {
  const text = oneColumn(400, (i) => `c${i % 7}`);
  const withDimensions = await aggregateText(text);
  const without = await aggregateText(text, { dimensions: false });
  assert.deepEqual(without.dimensions, []);
  assert.deepEqual({ ...withDimensions, dimensions: [] }, without);
});

/** MurmurHash3's body over zero-padded little-endian words, the byte length at the end. */
function referenceHash(bytes: Uint8Array, seed: number): number {
  const padded = new Uint8Array((bytes.length + 3) & ~3);
  padded.set(bytes);
  const view = new DataView(padded.buffer);
  let h = seed;
  for (let i = 0; i < padded.length; i += 4) {
    let k = Math.imul(view.getInt32(i, true), 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    h ^= Math.imul(k, 0x1b873593);
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  h ^= bytes.length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

Deno.test("aggregateCsv answers every user's 64-bit id hash and variant, sorted by hash", async () => {
  let text = "user_id,variant,date,converted\n";
  for (let i = 0; i < 3000; i++) {
    text += `user-${i % 1000},${["A", "B", "C"][i % 1000 % 3]},2026-01-01,1\n`;
  }
  text += "user-1,A,2026-01-02,0\n"; // user-1 (B) now also in A: in two variants
  text += '" quoted ",C,2026-01-02,0\n';
  const result = await aggregateText(text, { userSummary: true });
  const users = result.userSummary!;
  assert.equal(users.hi.length, 1001);
  const expected = new Map<string, number>();
  for (let i = 0; i < 1000; i++) expected.set(`user-${i}`, i === 1 ? -1 : i % 3);
  expected.set(" quoted ", 2); // quotes removed and, as for every id, the spaces around trimmed
  const seen = new Map<string, number>();
  for (let i = 0; i < users.hi.length; i++) {
    const v = users.variant[i];
    seen.set(`${users.hi[i]}:${users.lo[i]}`, v === users.none ? -1 : v);
    if (i > 0) {
      const order = users.hi[i - 1] - users.hi[i] || users.lo[i - 1] - users.lo[i];
      assert.ok(order < 0, "sorted by (hi, lo), no duplicates");
    }
  }
  for (const [id, variant] of expected) {
    const bytes = encoder.encode(id.trim());
    const key = `${referenceHash(bytes, 0x2f9e1a3b)}:${referenceHash(bytes, 0x5bd1e995)}`;
    assert.equal(seen.get(key), variant, id);
  }
  // Without the option, none is computed.
  assert.equal((await aggregateText(text)).userSummary, null);
  const alone = new CsvAggregator({ userSummary: true });
  alone.push(encoder.encode(text));
  assert.deepEqual(alone.finish().userSummary, users);
});

Deno.test("sortByHash sorts by the high then the low word, unsigned, carrying the variant", () => {
  const hi = Uint32Array.from([5, 0xffffffff, 5, 0, 5]);
  const lo = Uint32Array.from([2, 0, 0x80000000, 9, 1]);
  const variant = Int32Array.from([0, 1, 2, 3, 4]);
  sortByHash(hi, lo, variant);
  assert.deepEqual([...hi], [0, 5, 5, 5, 0xffffffff]);
  assert.deepEqual([...lo], [9, 1, 2, 0x80000000, 0]);
  assert.deepEqual([...variant], [3, 4, 0, 2, 1]);
});

Deno.test("sortByHash: the same order for few users (compared) and many (radix), equal hashes by variant", () => {
  // Fixed pseudo-random sequences against a plain comparison sort: repeated words (equal hashes,
  // equal high words), high words sharing their top bits (buckets split by the next bytes), and
  // many users of one hash (sorted by variant).
  let x = 12345;
  const next = () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0);
  const cases: [number, () => number, () => number][] = [];
  for (const n of [0, 1, 2, 100, 511, 512, 513, 5000, 200_000]) {
    cases.push([n, () => next() % 7 === 0 ? 42 : next(), () => next() % 5 === 0 ? 7 : next()]);
  }
  cases.push([20_000, () => 0xabcd0000 | (next() & 0x0f0f), () => next() & 0xff0000ff]);
  cases.push([3_000, () => 5, () => next() % 3]);
  for (const [n, high, low] of cases) {
    const hi = Uint32Array.from({ length: n }, high);
    const lo = Uint32Array.from({ length: n }, low);
    const variant = Int32Array.from({ length: n }, () => (next() % 4) - 1);
    const expected = Array.from({ length: n }, (_, i) => i)
      .sort((a, b) => hi[a] - hi[b] || lo[a] - lo[b] || variant[a] - variant[b]);
    const want = [hi, lo, variant].map((array) => expected.map((i) => array[i]));
    sortByHash(hi, lo, variant);
    assert.deepEqual([[...hi], [...lo], [...variant]], want, `n = ${n}`);
  }
});

Deno.test("narrow records keep the dimension bytes beside the day fields, none overlapping", () => {
  for (let metrics = 1; metrics <= 9; metrics++) {
    for (const pattern of [0, 1, 0b101, 0x1ff]) {
      const forced = Uint8Array.from({ length: metrics }, (_, k) => (pattern >> k) & 1);
      const layout = recordLayout(forced, true, true);
      // Every byte a field takes, by the views `UserTally` reads it through (little-endian).
      const owner = new Array<string>(4 * layout.words).fill("");
      const take = (from: number, bytes: number, name: string) => {
        for (let b = from; b < from + bytes; b++) {
          assert.ok(b >= 0 && b < owner.length, `${name} lies outside the record's words`);
          assert.equal(owner[b], "", `${name} overlaps ${owner[b]} (${metrics} columns)`);
          owner[b] = name;
        }
      };
      take(0, 4, "length");
      take(4 * VARIANT_WORD, 4, "variant");
      forced.forEach((flag, k) => {
        take(4 * layout.sumWord[k], 8, `sum ${k}`);
        if (flag) take(4 * layout.maxWord[k], 8, `max ${k}`);
      });
      const day = (at: number, name: string) => take(2 * at, 2, name);
      day(layout.firstDayAt, "first day");
      forced.forEach((flag, k) => {
        day(layout.firstValueAt[k], `first value ${k}`);
        day(layout.firstOneAt[k], `first one ${k}`);
        if (flag) day(layout.firstZeroAt[k], `first zero ${k}`);
      });
      forced.forEach((_, k) => take(4 * layout.dimWord[k] + layout.dimShift[k] / 8, 1, `dim ${k}`));
    }
  }
  // Two metric columns as the benchmark's file has: 36 bytes before the id, 56 with a 20-byte one
  // (the dimension bytes in a word of their own made it 40, and 64).
  assert.equal(recordLayout(new Uint8Array(2), true, true).words, 9);
  assert.equal(recordLayout(new Uint8Array(2), false, true).words, 9);
});

Deno.test("aggregateCsv: the same dimensions and figures with narrow and wide day fields", async () => {
  // Dates from 1950 (narrow fields near 65,535, every bit set) to 2120, users in several rows,
  // some with another dimension value later, a column read as conversion (its first-0 field).
  // The dimension columns first: theirs are the first dimension bytes, right after the days.
  const rows = ["user_id,variant,date,plan,device,converted,revenue,flag"];
  const dates = ["1950-01-03", "1969-12-31", "2026-02-28", "2099-07-15", "2120-12-31"];
  for (let i = 0; i < 600; i++) {
    const user = `user-${i % 211}`;
    const variant = (i % 211) % 3 === 0 ? "B" : "A";
    rows.push(
      [
        user,
        i === 599 ? "C" : variant, // user-177 in two variants
        dates[(i * 7) % dates.length],
        ["free", "paid", "team"][(i >> 3) % 3],
        ["mobile", "desktop"][i % 2],
        i % 4 === 0 ? 1 : 0,
        i % 5 === 0 ? "" : (i % 13) * 1.5,
        i % 3,
      ].join(","),
    );
  }
  const text = rows.join("\n") + "\n";
  const options = { metricKinds: { flag: "conversion" as const }, userSummary: true };
  const narrow = await aggregateText(text, options);
  const wide = await aggregateText(text, { ...options, wideDays: true });
  assert.deepEqual(narrow, wide);
  assert.equal(narrow.dimensions!.length, 2);
  assert.ok(narrow.dimensions!.some((d) => d.inconsistentUsers > 0));
});
