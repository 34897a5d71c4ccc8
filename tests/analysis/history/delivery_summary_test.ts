import assert from "node:assert/strict";
import { aggregateCsv } from "../../../src/analysis/aggregate/aggregate.ts";
import {
  compareDeliveries,
  compareWithStored,
  decodeDeliverySummary,
  type DeliverySummary,
  deliverySummaryOf,
  encodeDeliverySummary,
  readSummaryHead,
  summaryDates,
  summaryUserCount,
} from "../../../src/analysis/history/delivery_summary.ts";
import { runAggregation } from "../../../src/analysis/run_aggregation.ts";
import { validateSettings } from "../../../src/analysis/settings.ts";
import { datesFitNarrowDays } from "../../../src/analysis/aggregate/aggregate.ts";
import { withSqlite } from "../../db/_control_planes.ts";
import type { UserHashes } from "../../../src/analysis/aggregate/aggregate_types.ts";

async function summaryOf(text: string): Promise<DeliverySummary> {
  const bytes = new TextEncoder().encode(text);
  const options = { userSummary: true, sizeBytes: bytes.length }; // on this thread, 32-bit days
  return deliverySummaryOf(await aggregateCsv(ReadableStream.from([bytes]), options));
}

const HEADER = "user_id,variant,date,converted\n";

Deno.test("a delivery summary survives its blob, a user in two variants included", async () => {
  const summary = await summaryOf(
    HEADER + "u1,A,2026-01-01,1\nu2,B,2026-01-01,0\nu2,A,2026-01-02,0\nu3,B,2026-01-02,1\n",
  );
  assert.deepEqual(summary.dates, { "2026-01-01": 2, "2026-01-02": 2 });
  // Positions in one byte each, 0xff for a user seen in two variants.
  assert.equal(summary.users.none, 0xff);
  assert.deepEqual([...summary.users.variant].sort((a, b) => a - b), [0, 1, 0xff]);
  const blob = encodeDeliverySummary(summary);
  // 16 header bytes, the JSON header padded to 4, then 9 bytes a user.
  assert.equal(blob.length % 4, (3 * 9) % 4);
  const decoded = decodeDeliverySummary(blob);
  assert.deepEqual(decoded, summary);
  // The hashes are read in place, not copied.
  assert.equal(decoded?.users.hi.buffer, blob.buffer);
  assert.equal(decoded?.users.lo.buffer, blob.buffer);
  // A blob at an odd offset of a larger buffer reads the same (from a copy), and one at a
  // multiple of 4 in place.
  const shifted = new Uint8Array(blob.length + 3);
  shifted.set(blob, 3);
  const fromCopy = decodeDeliverySummary(shifted.subarray(3));
  assert.deepEqual(fromCopy, summary);
  assert.notEqual(fromCopy?.users.hi.buffer, shifted.buffer);
  const aligned = new Uint8Array(blob.length + 8);
  aligned.set(blob, 8);
  const inPlace = decodeDeliverySummary(aligned.subarray(8));
  assert.deepEqual(inPlace, summary);
  assert.equal(inPlace?.users.hi.buffer, aligned.buffer);
  // Its users are counted without reading it (they size the next delivery's tables).
  assert.equal(summaryUserCount(blob), 3);
  assert.equal(summaryUserCount(shifted.subarray(3)), 3);
  assert.equal(summaryUserCount(blob.subarray(0, 15)), 0);
  assert.equal(summaryUserCount(new Uint8Array(64)), 0);
});

Deno.test("a delivery summary stores variant positions in 2 bytes past 254 variants", () => {
  const variants = Array.from({ length: 300 }, (_, i) => `v${String(i).padStart(3, "0")}`);
  const summary: DeliverySummary = {
    rows: 3,
    variants,
    dates: { "2026-01-01": 3 },
    users: {
      hi: Uint32Array.from([1, 2, 3]),
      lo: Uint32Array.from([0, 0, 0]),
      variant: Uint16Array.from([299, 0xffff, 255]),
      none: 0xffff,
    },
  };
  const blob = encodeDeliverySummary(summary);
  assert.deepEqual(decodeDeliverySummary(blob), summary);
  // Positions of another width (as a test or an older caller may hold them) are stored the same.
  const wide = {
    ...summary,
    users: { ...summary.users, variant: Int32Array.from([299, -1, 255]), none: -1 },
  };
  assert.deepEqual(encodeDeliverySummary(wide), blob);
});

/** `summary` with its users' arrays copied into a buffer of their own each (encoded by copy). */
function cloned(summary: DeliverySummary): DeliverySummary {
  const { hi, lo, variant, none } = summary.users;
  return { ...summary, users: { hi: hi.slice(), lo: lo.slice(), variant: variant.slice(), none } };
}

/** Users' hashes laid out as `userHashes` lays out a large delivery's: room, hi, lo, positions. */
function withRoom(summary: DeliverySummary, room: number): DeliverySummary {
  const n = summary.users.hi.length;
  const width = summary.users.variant.BYTES_PER_ELEMENT;
  const buffer = new ArrayBuffer(room + (8 + width) * n);
  const hi = new Uint32Array(buffer, room, n);
  const lo = new Uint32Array(buffer, room + 4 * n, n);
  const variant = width === 1
    ? new Uint8Array(buffer, room + 8 * n, n)
    : width === 2
    ? new Uint16Array(buffer, room + 8 * n, n)
    : new Int32Array(buffer, room + 8 * n, n);
  hi.set(summary.users.hi);
  lo.set(summary.users.lo);
  variant.set(summary.users.variant);
  return { ...summary, users: { hi, lo, variant, none: summary.users.none } };
}

/** Positions of `width` bytes, `none` where `values` holds -1. */
function positions(width: number, values: number[]): UserHashes {
  const none = width === 1 ? 0xff : width === 2 ? 0xffff : -1;
  const mapped = values.map((v) => v < 0 ? none : v);
  const variant = width === 1
    ? Uint8Array.from(mapped)
    : width === 2
    ? Uint16Array.from(mapped)
    : Int32Array.from(mapped);
  return { hi: new Uint32Array(0), lo: new Uint32Array(0), variant, none };
}

Deno.test("a large delivery's summary is encoded around its hashes, the same bytes as a copy", async () => {
  // 30,000 users: their hashes take more than 256 KiB, so `userHashes` leaves room before them.
  const users = 30_000;
  const lines = [HEADER.trimEnd()];
  for (let i = 0; i < users; i++) {
    lines.push(`user-${i},${i % 3 === 0 ? "A" : "B"},2026-01-0${1 + (i % 5)},${i % 2}`);
  }
  lines.push("user-7,A,2026-01-06,1"); // user-7 (B) is then seen in two variants
  const summary = await summaryOf(lines.join("\n") + "\n");
  const { hi } = summary.users;
  assert.equal(hi.length, users);
  assert.ok(hi.byteOffset > 0, "room is left before the hashes");
  const expected = encodeDeliverySummary(cloned(summary));
  assert.notEqual(expected.buffer, hi.buffer);
  const blob = encodeDeliverySummary(summary);
  assert.equal(blob.buffer, hi.buffer, "written around the hashes, not copied");
  assert.equal(blob.byteOffset % 4, 0);
  assert.deepEqual(blob, expected);
  const decoded = decodeDeliverySummary(blob)!;
  assert.equal(decoded.users.hi.length, users);
  assert.equal(decoded.users.variant.filter((v) => v === decoded.users.none).length, 1);
  assert.deepEqual(decodeDeliverySummary(expected), decoded);
});

Deno.test("a summary is encoded in place at every variant width, or copied when its head does not fit", () => {
  const n = 1000;
  for (const count of [2, 300, 70_000]) {
    const variants = Array.from({ length: count }, (_, i) => `v${i}`);
    const summary: DeliverySummary = {
      rows: 2 * n,
      variants,
      dates: { "2026-01-01": n, "2026-01-02": n },
      users: {
        ...positions(
          count < 0xff ? 1 : count < 0xffff ? 2 : 4,
          Array.from({ length: n }, (_, i) => i % 7 === 0 ? -1 : (i * 31) % count),
        ),
        hi: Uint32Array.from({ length: n }, (_, i) => i * 4_000_000),
        lo: Uint32Array.from({ length: n }, (_, i) => (i * 2_654_435_761) >>> 0),
      },
    };
    const expected = encodeDeliverySummary(cloned(summary));
    // 70,000 names make a head of some 600 KB.
    const roomy = withRoom(summary, count > 1000 ? 1 << 20 : 64 * 1024);
    const blob = encodeDeliverySummary(roomy);
    assert.equal(blob.buffer, roomy.users.hi.buffer, `${count} variants: in place`);
    assert.deepEqual(blob, expected, `${count} variants`);
    assert.deepEqual(decodeDeliverySummary(blob), decodeDeliverySummary(expected));
    // Room for less than the head: a copy.
    const cramped = withRoom(summary, 16);
    const copy = encodeDeliverySummary(cramped);
    assert.notEqual(copy.buffer, cramped.users.hi.buffer, `${count} variants: copied`);
    assert.deepEqual(copy, expected);
    // Either way the summary stays readable.
    assert.deepEqual(roomy.users.variant, summary.users.variant);
  }
});

Deno.test("a blob of another format or a truncated one is no summary", async () => {
  const blob = encodeDeliverySummary(await summaryOf(HEADER + "u1,A,2026-01-01,1\n"));
  assert.equal(decodeDeliverySummary(blob.subarray(0, blob.length - 1)), null);
  const other = blob.slice();
  other[4] = 2; // format 2
  assert.equal(decodeDeliverySummary(other), null);
  assert.equal(decodeDeliverySummary(new TextEncoder().encode("not a summary")), null);
});

Deno.test("compareDeliveries counts users added, switched and vanished, and restated dates", async () => {
  const previous = await summaryOf(
    HEADER +
      "u1,A,2026-01-01,0\n" +
      "u2,B,2026-01-01,0\n" +
      "u3,A,2026-01-02,1\n" +
      "u4,B,2026-01-02,0\n" +
      "u5,A,2026-01-03,0\n",
  );
  const current = await summaryOf(
    HEADER +
      "u1,A,2026-01-01,0\n" +
      "u2,A,2026-01-01,0\n" + // switched B → A
      "u3,A,2026-01-02,1\n" +
      "u3,B,2026-01-03,0\n" + // now in two variants: switched too
      "u5,A,2026-01-03,0\n" +
      "u5,A,2026-01-03,1\n" + // the previous last date grows: not restated
      "u6,B,2026-01-04,0\n" + // added
      "u7,B,2026-01-04,0\n", // added; u4 vanished, so 2026-01-02 lost a row: restated
  );
  const changes = compareDeliveries(previous, current, "etag-1", "2026-01-03T05:00:00.000Z");
  assert.deepEqual(changes, {
    previous_etag: "etag-1",
    previous_delivered_at: "2026-01-03T05:00:00.000Z",
    rows_added: 3,
    users_added: 2,
    users_switched_variant: 2,
    users_vanished: 1,
    restated_dates: ["2026-01-02"],
    provisional_date: null,
  });
  const same = compareDeliveries(previous, previous, "etag-1", "2026-01-03T05:00:00.000Z");
  assert.deepEqual(
    [same.rows_added, same.users_added, same.users_switched_variant, same.users_vanished],
    [0, 0, 0, 0],
  );
  assert.deepEqual(same.restated_dates, []);
});

Deno.test("compareDeliveries reads variants by name, whatever their positions", async () => {
  // B alone first, then A and B: B's position moves from 0 to 1; nobody switched.
  const previous = await summaryOf(HEADER + "u1,B,2026-01-01,0\n");
  const current = await summaryOf(HEADER + "u1,B,2026-01-01,0\nu2,A,2026-01-02,0\n");
  const changes = compareDeliveries(previous, current, "e", "t");
  assert.equal(changes.users_switched_variant, 0);
  assert.equal(changes.users_added, 1);
});

Deno.test("compareWithStored reads the previous summary in its blob, at every variant width", () => {
  // Users 0..n of the previous delivery against users n/4..n + n/4 of the current one, with
  // variants moved for every fifth, some users in two variants, in turn in one delivery or both.
  const n = 2000;
  const summaryWith = (count: number, from: number, shift: number): DeliverySummary => {
    const ids = Array.from({ length: n }, (_, k) => from + k);
    const users = ids.map((id) => ({
      hi: (Math.imul(id, 2_654_435_761) >>> 0) & 0xffff_0000,
      lo: id,
      variant: id % 11 === shift ? -1 : (id + (id % 5 === 0 ? shift : 0)) % count,
    })).sort((a, b) => a.hi - b.hi || a.lo - b.lo);
    return {
      rows: 3 * n + shift,
      variants: Array.from({ length: count }, (_, i) => `v${count - i}`),
      dates: { "2026-01-01": n, "2026-01-02": 2 * n + shift },
      users: {
        ...positions(count < 0xff ? 1 : count < 0xffff ? 2 : 4, users.map((u) => u.variant)),
        hi: Uint32Array.from(users, (u) => u.hi),
        lo: Uint32Array.from(users, (u) => u.lo),
      },
    };
  };
  for (const count of [3, 300, 70_000]) {
    const previous = summaryWith(count, 0, 0);
    const current = summaryWith(count, n / 4, 1);
    const expected = compareDeliveries(previous, current, "e", "t");
    assert.ok(expected.users_switched_variant > 0 && expected.users_added === n / 4);
    const blob = encodeDeliverySummary(previous);
    assert.deepEqual(compareWithStored(blob, current, "e", "t"), expected, `${count} variants`);
    // At an odd offset: from an aligned copy, the same answer.
    const shifted = new Uint8Array(blob.length + 1);
    shifted.set(blob, 1);
    assert.deepEqual(compareWithStored(shifted.subarray(1), current, "e", "t"), expected);
  }
  const blob = encodeDeliverySummary(summaryWith(3, 0, 0));
  assert.equal(
    compareWithStored(blob.subarray(0, blob.length - 1), summaryWith(3, 0, 1), "e", "t"),
    null,
  );
  assert.equal(compareWithStored(new Uint8Array(64), summaryWith(3, 0, 1), "e", "t"), null);
});

Deno.test("a summary's dates, read from its header alone, choose the next run's days", async () => {
  const recent = encodeDeliverySummary(
    await summaryOf(HEADER + "u1,A,2026-01-02,1\nu2,B,2026-01-01,0\n"),
  );
  assert.deepEqual(summaryDates(recent).sort(), ["2026-01-01", "2026-01-02"]);
  assert.deepEqual(summaryDates(recent.subarray(0, 15)), []);
  assert.deepEqual(summaryDates(new Uint8Array(64)), []);
  // 16-bit days hold 1950-01-01 to 2126-03-01.
  assert.equal(datesFitNarrowDays(["1950-01-01", "2026-05-05", "2126-03-01"]), true);
  assert.equal(datesFitNarrowDays(["2026-05-05", "1949-12-31"]), false);
  assert.equal(datesFitNarrowDays(["2126-03-02"]), false);
  // A delivery that held a date outside them is read with 32-bit days at once the next time.
  const old = encodeDeliverySummary(
    await summaryOf(HEADER + "u1,A,2026-01-02,1\nu2,B,1900-01-01,0\n"),
  );
  const settings = validateSettings({});
  assert.equal(runAggregation(settings, old).wideDays, true);
  assert.equal(runAggregation(settings, recent).wideDays, false);
  assert.equal(runAggregation(settings).wideDays, undefined);
});

Deno.test("a run reads only the head of the last summary, as far as its header ends", async () => {
  await withSqlite(async (db) => {
    const repo = db.deliverySummaries;
    assert.equal(await readSummaryHead(repo, "o", "e"), null);
    // 100,000 users (900 KB of hashes and variants) and the dates of 16 years, whose header
    // outgrows the first read of 64 KiB.
    const n = 100_000;
    const dates: Record<string, number> = {};
    for (let d = 0; d < 6000; d++) {
      dates[new Date(Date.UTC(2015, 0, 1 + d)).toISOString().slice(0, 10)] = 3;
    }
    const summary: DeliverySummary = {
      rows: 3 * n,
      variants: ["A", "B"],
      dates,
      users: {
        hi: Uint32Array.from({ length: n }, (_, i) => i),
        lo: new Uint32Array(n),
        variant: Uint8Array.from({ length: n }, (_, i) => i % 2),
        none: 0xff,
      },
    };
    for (const [name, days] of [["short", { "2026-01-01": 3 }], ["long", dates]] as const) {
      const blob = encodeDeliverySummary({ ...summary, dates: days });
      const row = { etag: name, sha256: "s", delivered_at: "d", summary: blob, changes: null };
      await repo.save("o", name, row);
      const head = await readSummaryHead(repo, "o", name);
      assert.equal(head?.etag, name);
      assert.ok(head!.summary.length < blob.length / 2, `${name}: ${head!.summary.length} bytes`);
      assert.deepEqual(head!.summary, blob.subarray(0, head!.summary.length));
      assert.equal(summaryUserCount(head!.summary), n);
      assert.deepEqual(summaryDates(head!.summary).sort(), Object.keys(days).sort());
    }
    // The long header took a second read, past the first 64 KiB.
    assert.ok((await readSummaryHead(repo, "o", "long"))!.summary.length > 64 * 1024);
  });
});
