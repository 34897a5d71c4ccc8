import assert from "node:assert/strict";
import {
  detectSignature,
  SIGNATURE_BYTES,
  SignatureCheck,
  SIGNATURES,
} from "../../src/pipeline/signature_check.ts";
import { ValidationError } from "../../src/pipeline/validation_error.ts";
import { bytes, concat, HEADER, rejects, validate } from "./_helpers.ts";

/** A sample of each refused format: its first bytes and what the error names. */
const SAMPLES: { name: string; code: string; data: Uint8Array }[] = [
  { name: "ZIP", code: "archive_detected", data: bytes([0x50, 0x4b, 0x03, 0x04, 0x14, 0, 0, 0]) },
  { name: "ZIP", code: "archive_detected", data: bytes([0x50, 0x4b, 0x05, 0x06, 0, 0, 0, 0]) },
  {
    name: "ZIP",
    code: "archive_detected",
    data: bytes([0x50, 0x4b, 0x07, 0x08, 0x50, 0x4b, 3, 4]),
  },
  { name: "GZIP", code: "archive_detected", data: bytes([0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0]) },
  {
    name: "RAR",
    code: "archive_detected",
    data: bytes([0x52, 0x61, 0x72, 0x21, 0x1a, 0x07, 0x00, 0xcf]),
  },
  {
    name: "RAR",
    code: "archive_detected",
    data: bytes([0x52, 0x61, 0x72, 0x21, 0x1a, 0x07, 0x01, 0x00]),
  },
  { name: "7z", code: "archive_detected", data: bytes([0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c, 0, 4]) },
  {
    name: "bzip2",
    code: "archive_detected",
    data: concat("BZh9", [0x31, 0x41, 0x59, 0x26, 0x53, 0x59]),
  },
  {
    name: "bzip2",
    code: "archive_detected",
    data: concat("BZh1", [0x17, 0x72, 0x45, 0x38, 0x50, 0x90]),
  },
  { name: "xz", code: "archive_detected", data: bytes([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00, 0, 4]) },
  {
    name: "Zstandard",
    code: "archive_detected",
    data: bytes([0x28, 0xb5, 0x2f, 0xfd, 0x24, 0x04]),
  },
  { name: "UTF-32 LE", code: "binary_content", data: concat([0xff, 0xfe, 0, 0], [0x75, 0, 0, 0]) },
  { name: "UTF-32 BE", code: "binary_content", data: concat([0, 0, 0xfe, 0xff], [0, 0, 0, 0x75]) },
  { name: "UTF-16 LE", code: "binary_content", data: bytes([0xff, 0xfe, 0x75, 0, 0x73, 0]) },
  { name: "UTF-16 BE", code: "binary_content", data: bytes([0xfe, 0xff, 0, 0x75, 0, 0x73]) },
  { name: "tar", code: "archive_detected", data: tarHeader() },
];

/** A tar member header: a file name, NUL padding, and `ustar` at offset 257. */
function tarHeader(): Uint8Array {
  const block = new Uint8Array(512);
  block.set(bytes("data.csv"), 0);
  block.set(bytes("0000644"), 100);
  block.set(bytes("ustar\x0000"), 257);
  return concat(block, HEADER);
}

for (const sample of SAMPLES) {
  for (const chunk of [0, 1]) {
    const how = chunk === 0 ? "whole" : "split into 1-byte chunks";
    const bytesShown = [...sample.data.subarray(0, 4)].map((b) => b.toString(16)).join(" ");
    Deno.test(`DatasetValidator refuses a ${sample.name} signature (${bytesShown}) ${how}`, () => {
      const error = rejects(sample.data, sample.code, undefined, { chunk });
      assert.match(error.message, new RegExp(`^${sample.name} `));
      if (sample.code === "archive_detected") {
        assert.equal(
          error.message,
          `${sample.name} archive detected: send the raw CSV bytes, not an archive`,
        );
      }
    });
  }
}

Deno.test("DatasetValidator rejects a ZIP signature split over two chunks", () => {
  const zip = bytes([0x50, 0x4b, 0x03, 0x04, 0x0a, 0, 0, 0]);
  for (let cut = 1; cut < 4; cut++) {
    const error = rejects(zip, "archive_detected", null, { chunk: cut });
    assert.match(error.message, /^ZIP archive detected/);
  }
});

Deno.test("DatasetValidator rejects an empty ZIP (end of central directory only)", () => {
  const emptyZip = concat([0x50, 0x4b, 0x05, 0x06], new Uint8Array(18));
  assert.match(rejects(emptyZip, "archive_detected").message, /^ZIP/);
});

Deno.test("DatasetValidator names tar rather than its NUL bytes for a tar archive", () => {
  assert.match(rejects(tarHeader(), "archive_detected", null, { chunk: 1 }).message, /^tar/);
});

Deno.test("DatasetValidator names a GNU tar archive, and takes text holding ustar at 257 as text", () => {
  const gnu = tarHeader();
  gnu.set(bytes("ustar  \x00"), 257);
  assert.match(rejects(gnu, "archive_detected", null, { chunk: 1 }).message, /^tar/);
  // A cell "mustard" puts "ustar" at offset 257, followed by "d": a dataset, not an archive.
  let text = "user_id,variant,date,converted,topping\n";
  for (let i = 0; text.length < 200; i++) text += `u${i},A,2026-01-01,1,ketchup\n`;
  // The last row's id fills the line up to its "mustard" at offset 256 (16 bytes between them).
  text += `u${"x".repeat(256 - 16 - text.length - 1)},B,2026-01-02,0,mustard\n`;
  assert.equal(text.indexOf("ustar"), 257);
  for (const chunk of [1, 7, 4096]) {
    assert.equal(validate(text, { chunk }).rows, text.split("\n").length - 2);
  }
});

Deno.test("DatasetValidator accepts a dataset whose header merely starts like a signature", () => {
  const summary = validate("PKid,user_id,variant,date\n1,u1,A,2026-01-01\n", { chunk: 1 });
  assert.equal(summary.rows, 1);
  const rar = "Rar,user_id,variant,date\n1,u1,A,2026-01-01\n";
  assert.deepEqual(validate(rar, { chunk: 1 }).metrics, [{ name: "Rar", kind: "conversion" }]);
});

Deno.test("detectSignature answers undefined while a signature may still match", () => {
  assert.equal(detectSignature(bytes([0x50])), undefined);
  assert.equal(detectSignature(bytes([0x50, 0x4b, 0x03])), undefined);
  assert.equal(detectSignature(bytes([0xff, 0xfe])), undefined); // UTF-16 LE or UTF-32 LE
  assert.equal(detectSignature(bytes("user_id,variant")), undefined); // tar at 257 still open
});

Deno.test("detectSignature decides on a short input when it is final", () => {
  assert.equal(detectSignature(bytes([0x50, 0x4b, 0x03]), true), null);
  assert.equal(detectSignature(bytes([0xff, 0xfe]), true)?.name, "UTF-16 LE");
  assert.equal(detectSignature(bytes([0xff, 0xfe, 0x00, 0x00]))?.name, "UTF-32 LE");
  assert.equal(detectSignature(bytes([0xff, 0xfe, 0x41, 0x00]))?.name, "UTF-16 LE");
  assert.equal(detectSignature(new Uint8Array(0), true), null);
});

Deno.test("detectSignature answers null for CSV once the tar offset is passed", () => {
  const csv = bytes(HEADER.repeat(8));
  assert.ok(csv.length >= SIGNATURE_BYTES);
  assert.equal(detectSignature(csv), null);
});

Deno.test("SIGNATURES lists a longer signature before a shorter one it starts with", () => {
  SIGNATURES.forEach((longer, i) => {
    SIGNATURES.slice(0, i).forEach((earlier) => {
      const startsWith = earlier.offset === longer.offset &&
        earlier.bytes.length < longer.bytes.length &&
        earlier.bytes.every((b, k) => b === longer.bytes[k]);
      assert.ok(!startsWith, `${earlier.name} hides ${longer.name}`);
    });
  });
});

Deno.test("SignatureCheck holds short chunks until it can decide", () => {
  const check = new SignatureCheck();
  const csv = bytes(HEADER.repeat(8));
  assert.equal(check.push(csv.subarray(0, 100)), -1);
  assert.equal(check.held.length, 100);
  assert.equal(check.push(csv.subarray(100, 300)), SIGNATURE_BYTES - 100);
  assert.ok(check.done);
  assert.deepEqual(check.held, csv.subarray(0, SIGNATURE_BYTES));
});

Deno.test("SignatureCheck checks a long first chunk in place", () => {
  const check = new SignatureCheck();
  assert.equal(check.push(bytes(HEADER.repeat(8))), 0);
  assert.equal(check.held.length, 0);
  assert.ok(check.done);
});

Deno.test("SignatureCheck throws as soon as a signature is complete", () => {
  const check = new SignatureCheck();
  assert.equal(check.push(bytes([0x1f])), -1);
  assert.throws(() => check.push(bytes([0x8b])), ValidationError);
});

Deno.test("SignatureCheck decides at finish on an input shorter than the tar offset", () => {
  const check = new SignatureCheck();
  check.push(bytes("user_id"));
  assert.deepEqual(check.finish(), bytes("user_id"));
  const utf16 = new SignatureCheck();
  utf16.push(bytes([0xff, 0xfe]));
  assert.throws(() => utf16.finish(), /UTF-16 LE/);
});
