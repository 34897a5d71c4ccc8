import assert from "node:assert/strict";
import { mulberry32 } from "../../bench/generate_csv.ts";
import { DatasetValidator } from "../../src/pipeline/mod.ts";
import { Utf8Check } from "../../src/pipeline/utf8_check.ts";
import { bytes, chunked, concat, HEADER, rejects, validate } from "./_helpers.ts";

/** Checks `data` in chunks of `size` and at the end; true when valid. */
function valid(data: Uint8Array, size = 0): boolean {
  const check = new Utf8Check();
  for (const chunk of chunked(data, size)) {
    if (check.check(chunk) !== -1) return false;
  }
  return !check.pending;
}

function decoderAccepts(data: Uint8Array): boolean {
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(data);
    return true;
  } catch {
    return false;
  }
}

const INVALID: [string, number[]][] = [
  ["a lone continuation byte", [0x41, 0x80, 0x41]],
  ["an overlong two-byte slash", [0xc0, 0xaf]],
  ["an overlong C1 lead", [0xc1, 0xbf]],
  ["an overlong three-byte form", [0xe0, 0x80, 0xaf]],
  ["an overlong four-byte form", [0xf0, 0x80, 0x80, 0xaf]],
  ["a high surrogate", [0xed, 0xa0, 0x80]],
  ["a low surrogate", [0xed, 0xbf, 0xbf]],
  ["a code point above U+10FFFF", [0xf4, 0x90, 0x80, 0x80]],
  ["an F5 lead byte", [0xf5, 0x80, 0x80, 0x80]],
  ["an FF byte", [0xff]],
  ["a lead byte followed by ASCII", [0xc3, 0x41]],
  ["a three-byte lead cut by ASCII", [0xe2, 0x82, 0x41]],
];

for (const [what, sequence] of INVALID) {
  Deno.test(`Utf8Check rejects ${what}`, () => {
    for (const size of [0, 1, 2]) assert.equal(valid(bytes(sequence), size), false);
    assert.equal(decoderAccepts(bytes(sequence)), false);
  });
}

Deno.test("Utf8Check accepts every width of character, split at every byte", () => {
  const text = bytes("aé€😀\u{10FFFF}\uD7FF\uE000z");
  for (const size of [0, 1, 2, 3, 5]) assert.ok(valid(text, size), `chunk ${size}`);
});

Deno.test("Utf8Check keeps a sequence open across chunks and reports it as pending", () => {
  const check = new Utf8Check();
  assert.equal(check.check(bytes([0x41, 0xf0, 0x9f])), -1);
  assert.ok(check.pending);
  assert.equal(check.check(bytes([0x98])), -1);
  assert.ok(check.pending);
  assert.equal(check.check(bytes([0x80, 0x41])), -1);
  assert.equal(check.pending, false);
});

Deno.test("Utf8Check answers the index of the bad sequence", () => {
  assert.equal(new Utf8Check().check(bytes([0x41, 0x42, 0xed, 0xa0, 0x80])), 2);
});

Deno.test("Utf8Check agrees with a fatal TextDecoder on random bytes", () => {
  const random = mulberry32(7);
  const pieces = [
    [0x41],
    [0xc3, 0xa9],
    [0xe2, 0x82, 0xac],
    [0xf0, 0x9f, 0x98, 0x80],
    [0x80],
    [
      0xed,
    ],
    [0xa0],
    [0xf4],
    [0x90],
    [0xc0],
    [0xe0],
    [0xbf],
    [0xf8],
  ];
  let disagreements = 0;
  let invalid = 0;
  for (let round = 0; round < 3000; round++) {
    const parts: number[] = [];
    const count = 1 + Math.floor(random() * 6);
    for (let k = 0; k < count; k++) parts.push(...pieces[Math.floor(random() * pieces.length)]);
    const data = bytes(parts);
    const expected = decoderAccepts(data);
    if (!expected) invalid++;
    for (const size of [0, 1, 2]) if (valid(data, size) !== expected) disagreements++;
  }
  assert.equal(disagreements, 0);
  assert.ok(invalid > 500, "the sample exercises invalid input");
});

Deno.test("DatasetValidator accepts a multibyte character split across chunks", () => {
  const data = bytes(`${HEADER}u1,Ä€😀,2026-01-01,1,2.5\nu2,B,2026-01-02,0,0\n`);
  const start = data.indexOf(0xc3);
  for (let cut = start + 1; cut < start + 9; cut++) {
    const validator = new DatasetValidator();
    validator.push(data.slice(0, cut));
    validator.push(data.slice(cut));
    assert.equal(validator.finish().rows, 2, `cut at ${cut}`);
  }
  for (const size of [1, 2, 3, 5, 7]) assert.equal(validate(data, { chunk: size }).rows, 2);
});

Deno.test("DatasetValidator rejects invalid UTF-8 in the last byte at finish", async (t) => {
  const data = concat(`${HEADER}u1,A,2026-01-01,1,2.5\nu2,B,2026-01-02,0,`, [0xe2, 0x82]);
  for (const size of [0, 1, 4]) {
    await t.step(`in chunks of ${size}`, () => {
      const error = rejects(data, "invalid_utf8", 3, { chunk: size });
      assert.match(error.message, /^Cannot decode line 3: the file is not valid UTF-8/);
    });
  }
});

Deno.test("DatasetValidator rejects an overlong encoding and a surrogate with their line", () => {
  rejects(
    concat(`${HEADER}u1,A,2026-01-01,1,2\nu`, [0xc0, 0xaf], ",B,2026-01-01,1,2\n"),
    "invalid_utf8",
    3,
  );
  rejects(
    concat(`${HEADER}u1,A,2026-01-01,1,2\n\nu`, [0xed, 0xa0, 0x80], ",B,2026-01-01,1,2\n"),
    "invalid_utf8",
    4,
  );
  rejects(
    concat(`${HEADER}u1,"A`, [0xf4, 0x90, 0x80, 0x80], `",2026-01-01,1,2\n`),
    "invalid_utf8",
    2,
    { chunk: 3 },
  );
});

Deno.test("DatasetValidator rejects invalid UTF-8 in the header", () => {
  rejects(concat("user_id,vari", [0xff], "ant,date,x\nu1,A,2026-01-01,1\n"), "invalid_utf8", 1);
  rejects(concat("user_id,variant,date,x", [0xc3]), "invalid_utf8", 1, { chunk: 1 });
});

Deno.test("DatasetValidator names the byte where a bad sequence starts however the chunks cut it", () => {
  const data = concat(
    `${HEADER}u1,A,2026-01-01,1,2\nu2,x`,
    [0xf0, 0x9f, 0x41],
    ",2026-01-01,1,2\n",
  );
  const start = data.indexOf(0xf0);
  for (const size of [0, 1, 2, 3, 5, 7]) {
    const error = rejects(data, "invalid_utf8", 3, { chunk: size });
    assert.equal(
      error.message,
      `Cannot decode line 3: the file is not valid UTF-8 (byte ${start})`,
      `chunks of ${size}`,
    );
  }
});
