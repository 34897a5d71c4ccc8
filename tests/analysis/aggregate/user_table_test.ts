import { assert, assertEquals } from "../../_assert.ts";
import { copyId, hashWords, UserTable } from "../../../src/analysis/aggregate/_user_table.ts";

const encoder = new TextEncoder();

/** `count` distinct ids of 1 to 40 bytes, in a shuffled order (a fixed seed). */
function someIds(count: number): Uint8Array[] {
  let seed = 12345;
  const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
  const ids: Uint8Array[] = [];
  for (let i = 0; i < count; i++) {
    const text = `u${i.toString(36)}-${"x".repeat(next() % 33)}`;
    ids.push(encoder.encode(text));
  }
  for (let i = ids.length - 1; i > 0; i--) {
    const j = next() % (i + 1);
    [ids[i], ids[j]] = [ids[j], ids[i]];
  }
  return ids;
}

/** Looks `id` up in `table` as the aggregation does (the id copied to words, then hashed). */
function lookup(table: UserTable, id: Uint8Array): number {
  const words = new Int32Array((id.length + 3) >> 2);
  const hash = copyId(id, 0, id.length, words, 0);
  return table.lookup(words, 0, id.length, hash);
}

/** The id bytes kept in `record`. */
function idOf(table: UserTable, record: number): string {
  const length = table.i32[2 * record];
  const start = 8 * record + 4 * table.words;
  return new TextDecoder().decode(new Uint8Array(table.arena, start, length));
}

/** Adds every id, then looks each up again (in another order), checking records and ids. */
function addAndFind(table: UserTable, ids: Uint8Array[]): void {
  const records = new Map<string, number>();
  for (const id of ids) {
    const record = lookup(table, id);
    assert(table.isNew, "a new id is added");
    records.set(new TextDecoder().decode(id), record);
  }
  assertEquals(table.size, ids.length);
  assertEquals(new Set(records.values()).size, ids.length, "one record per id");
  for (const id of ids.slice().reverse()) {
    const record = lookup(table, id);
    assert(!table.isNew, "a known id is found");
    const text = new TextDecoder().decode(id);
    assertEquals(record, records.get(text));
    assertEquals(idOf(table, record), text);
  }
}

Deno.test("hashWords answers copyId's hash for ids of every length up to 13 bytes", () => {
  const bytes = encoder.encode("usr-9019f85e168b58c0\u00e9");
  for (let length = 0; length <= 13; length++) {
    for (let start = 0; start + length <= bytes.length; start += 3) {
      const words = new Int32Array(8);
      const hash = copyId(bytes, start, start + length, words, 2);
      assertEquals(hashWords(words, 2, length), hash, `length ${length} from ${start}`);
    }
  }
});

Deno.test("a user table finds each of 20,000 users again, growing from its small start", () => {
  const table = new UserTable(4);
  addAndFind(table, someIds(20_000));
  assert(!table.wide, "records of under 128 MiB keep one word a slot");
});

Deno.test("a user table sized for its users finds each of them", () => {
  const table = new UserTable(6, 1 << 20, 30_000);
  addAndFind(table, someIds(30_000));
});

Deno.test("a user table whose records outgrow narrow slots turns them wide and finds every user", () => {
  // 40 records' worth of 8-byte units narrow, then wide: users added before and after the turn,
  // and rehashed as pairs later.
  const table = new UserTable(4, 0, 0, 200);
  const ids = someIds(5_000);
  addAndFind(table, ids);
  assert(table.wide, "the slots turned wide");
  assert(table.top > 200);
});
