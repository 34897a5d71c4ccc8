/**
 * The generated corpus of malformed (and a few borderline valid) uploads. Everything is built in
 * code from a fixed seed, so the same seed gives the same bytes on every machine; nothing big is
 * committed. `buildCorpus({ seed, scale })` answers the cases; `scale` grows the random and
 * mutated parts (the soak suite runs larger scales and other seeds).
 */
import { Rng } from "../_faults.ts";

/** The 4xx codes a body can be refused with (docs/api.md, "The CSV"). */
export const BODY_CODES = [
  "archive_detected",
  "binary_content",
  "invalid_utf8",
  "invalid_csv",
  "missing_columns",
  "no_metric_column",
  "invalid_date",
  "no_data_rows",
  "payload_too_large",
] as const;

export interface CorpusCase {
  /** Unique, readable: category and variant. */
  name: string;
  category: string;
  bytes: Uint8Array<ArrayBuffer>;
  /** Chunk boundaries (offsets) when the body is sent as a stream; none: sent whole. */
  splits?: number[];
  /**
   * `accept`: 201; a list: a 4xx with one of these codes; `any`: 201 or a 4xx with a code of
   * `BODY_CODES` (mutations, which may stay valid).
   */
  expect: "accept" | "any" | readonly string[];
  /** After a 201, the analysis must still answer 200 (numbers at the edge of the double range). */
  analyse?: boolean;
}

const enc = new TextEncoder();

function bytes(...parts: (string | number[] | Uint8Array)[]): Uint8Array<ArrayBuffer> {
  const arrays = parts.map((p) =>
    typeof p === "string" ? enc.encode(p) : p instanceof Uint8Array ? p : Uint8Array.from(p)
  );
  const out = new Uint8Array(arrays.reduce((n, a) => n + a.length, 0));
  let offset = 0;
  for (const a of arrays) {
    out.set(a, offset);
    offset += a.length;
  }
  return out;
}

/** A valid dataset with quoting, UTF-8, CRLF and a dimension column: the seed of mutations. */
export function validBase(): Uint8Array<ArrayBuffer> {
  const rows = ["user_id,variant,date,converted,revenue,city"];
  const cities = ["Berlin", '"Zürich, CH"', "Kraków", '"say ""hi"""', "東京", "São Paulo"];
  for (let i = 0; i < 40; i++) {
    rows.push(
      `u${i},${i % 2 ? "B" : "A"},2026-01-${String(1 + (i % 28)).padStart(2, "0")},${
        i % 3 === 0 ? 1 : 0
      },${(i * 1.25).toFixed(2)},${cities[i % cities.length]}`,
    );
  }
  return bytes(rows.join("\r\n") + "\r\n");
}

const HEADER = "user_id,variant,date,m,dim\n";
const ROW = "u1,A,2026-01-01,1,x\n";

/** Splits `length` bytes at every offset in `at` (sorted, inside the body). */
function splitAt(at: number[], length: number): number[] {
  return [...new Set(at)].filter((n) => n > 0 && n < length).sort((a, b) => a - b);
}

/** Chunks of `size` bytes over the first `upTo` bytes (then the rest in one piece). */
function tinyChunks(size: number, upTo: number, length: number): number[] {
  const at: number[] = [];
  for (let i = size; i < Math.min(upTo, length); i += size) at.push(i);
  return splitAt(at, length);
}

function randomSplits(rng: Rng, length: number, pieces: number): number[] {
  const at: number[] = [];
  for (let i = 0; i < pieces; i++) at.push(1 + rng.int(Math.max(1, length - 1)));
  return splitAt(at, length);
}

// ---------------------------------------------------------------------------------------------

interface SignatureSample {
  name: string;
  /** Where the signature starts and how long it is. */
  offset: number;
  length: number;
  bytes: Uint8Array<ArrayBuffer>;
  code: string;
}

function utf16(text: string, littleEndian: boolean): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(text.length * 2);
  const view = new DataView(out.buffer);
  for (let i = 0; i < text.length; i++) view.setUint16(i * 2, text.charCodeAt(i), littleEndian);
  return out;
}

function utf32(text: string, littleEndian: boolean): Uint8Array<ArrayBuffer> {
  const points = [...text].map((c) => c.codePointAt(0)!);
  const out = new Uint8Array(points.length * 4);
  const view = new DataView(out.buffer);
  points.forEach((p, i) => view.setUint32(i * 4, p, littleEndian));
  return out;
}

function signatureSamples(rng: Rng): SignatureSample[] {
  const csv = HEADER + ROW;
  const tail = () => rng.bytes(64 + rng.int(256));
  const sample = (name: string, sig: number[], rest: Uint8Array, code = "archive_detected") => ({
    name,
    offset: 0,
    length: sig.length,
    bytes: bytes(sig, rest),
    code,
  });
  // 257 bytes of plain CSV text, then tar's "ustar" magic.
  let lead = HEADER;
  while (lead.length < 257) lead += ROW;
  lead = lead.slice(0, 256) + "\n";
  return [
    sample("ZIP local file", [0x50, 0x4b, 0x03, 0x04], bytes([0x14, 0, 0, 0, 8, 0], tail())),
    sample("ZIP empty archive", [0x50, 0x4b, 0x05, 0x06], new Uint8Array(18)),
    sample("ZIP spanned", [0x50, 0x4b, 0x07, 0x08], bytes([0x50, 0x4b, 0x03, 0x04], tail())),
    sample("GZIP", [0x1f, 0x8b], bytes([8, 0, 0, 0, 0, 0, 0, 3], tail())),
    sample("RAR4", [0x52, 0x61, 0x72, 0x21, 0x1a, 0x07, 0x00], tail()),
    sample("RAR5", [0x52, 0x61, 0x72, 0x21, 0x1a, 0x07, 0x01, 0x00], tail()),
    sample("7z", [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c], bytes([0, 4], tail())),
    sample("bzip2 block", [0x42, 0x5a, 0x68, 0x39, 0x31, 0x41, 0x59, 0x26, 0x53, 0x59], tail()),
    sample("bzip2 empty", [0x42, 0x5a, 0x68, 0x31, 0x17, 0x72, 0x45, 0x38, 0x50, 0x90], tail()),
    sample("xz", [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00], tail()),
    sample("zstd", [0x28, 0xb5, 0x2f, 0xfd], tail()),
    {
      name: "tar ustar at 257",
      offset: 257,
      length: 6,
      bytes: bytes(lead, [0x75, 0x73, 0x74, 0x61, 0x72, 0x00], "00", tail()),
      code: "archive_detected",
    },
    sample("UTF-16 LE BOM", [0xff, 0xfe], utf16(csv, true), "binary_content"),
    sample("UTF-16 BE BOM", [0xfe, 0xff], utf16(csv, false), "binary_content"),
    sample("UTF-32 LE BOM", [0xff, 0xfe, 0x00, 0x00], utf32(csv, true), "binary_content"),
    sample("UTF-32 BE BOM", [0x00, 0x00, 0xfe, 0xff], utf32(csv, false), "binary_content"),
  ];
}

function signatureCases(rng: Rng): CorpusCase[] {
  const cases: CorpusCase[] = [];
  for (const s of signatureSamples(rng)) {
    const expect = [s.code];
    const category = "signature";
    cases.push({ name: `${s.name}, whole`, category, bytes: s.bytes, expect });
    cases.push({
      name: `${s.name}, 1-byte chunks`,
      category,
      bytes: s.bytes,
      splits: tinyChunks(1, s.offset + s.length + 8, s.bytes.length),
      expect,
    });
    // One chunk boundary at each place inside the signature.
    for (let k = 1; k < s.length; k++) {
      cases.push({
        name: `${s.name}, split after byte ${s.offset + k}`,
        category,
        bytes: s.bytes,
        splits: splitAt([s.offset + k], s.bytes.length),
        expect,
      });
    }
  }
  // Near misses: a header whose first bytes start a signature but do not complete it.
  for (const lead of ["PK", "Rar!", "BZh9", "7z", "\x1f"]) {
    const body = bytes(`${lead}x,${HEADER}`.replace("\n", ",extra\n"), `q,u1,A,2026-01-01,1,x,e\n`);
    cases.push({
      name: `near miss ${JSON.stringify(lead)}`,
      category: "signature near miss",
      bytes: body,
      splits: tinyChunks(1, 16, body.length),
      expect: "accept",
    });
  }
  return cases;
}

// ---------------------------------------------------------------------------------------------

const BAD_UTF8: [string, number[]][] = [
  ["truncated 2-byte", [0xc3]],
  ["truncated 3-byte", [0xe2, 0x82]],
  ["truncated 4-byte", [0xf0, 0x9f, 0x98]],
  ["overlong slash C0 AF", [0xc0, 0xaf]],
  ["overlong C1 BF", [0xc1, 0xbf]],
  ["overlong 3-byte", [0xe0, 0x80, 0xaf]],
  ["overlong 4-byte", [0xf0, 0x80, 0x80, 0xaf]],
  ["high surrogate", [0xed, 0xa0, 0x80]],
  ["low surrogate", [0xed, 0xbf, 0xbf]],
  ["surrogate pair (CESU-8)", [0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80]],
  ["above U+10FFFF", [0xf4, 0x90, 0x80, 0x80]],
  ["F5 lead", [0xf5, 0x80, 0x80, 0x80]],
  ["FE byte", [0xfe]],
  ["FF byte", [0xff]],
  ["lone continuation", [0x80]],
  ["lone continuation BF", [0xbf]],
  ["lead then ASCII", [0xe2, 0x41]],
];

const GOOD_UTF8: [string, number[]][] = [
  ["ü", [0xc3, 0xbc]],
  ["€", [0xe2, 0x82, 0xac]],
  ["U+FFFF", [0xef, 0xbf, 0xbf]],
  ["emoji", [0xf0, 0x9f, 0x98, 0x80]],
  ["U+10FFFF", [0xf4, 0x8f, 0xbf, 0xbf]],
];

function utf8Cases(rng: Rng): CorpusCase[] {
  const cases: CorpusCase[] = [];
  const places = (seq: number[]) =>
    [
      ["header name", bytes("user_id,variant,date,m,d", seq, "\n", ROW)],
      ["unquoted cell", bytes(HEADER, "u1,A,2026-01-01,1,x", seq, "y\n", ROW)],
      ["quoted cell", bytes(HEADER, 'u1,A,2026-01-01,1,"x', seq, 'y"\n', ROW)],
      ["end of file", bytes(HEADER, ROW, "u2,B,2026-01-02,0,x", seq)],
    ] as const;
  for (const [what, seq] of BAD_UTF8) {
    for (const [where, body] of places(seq)) {
      // A boundary right after the sequence's first byte, plus a few random ones.
      const at = body.indexOf(seq[0]);
      cases.push({
        name: `invalid UTF-8 ${what} in ${where}`,
        category: "utf-8",
        bytes: body,
        splits: splitAt([at + 1, ...randomSplits(rng, body.length, 3)], body.length),
        expect: ["invalid_utf8"],
      });
    }
  }
  for (const [what, seq] of GOOD_UTF8) {
    for (const [where, body] of places(seq)) {
      if (where === "header name" || where === "end of file") continue;
      const at = body.indexOf(seq[0]);
      cases.push({
        name: `valid UTF-8 ${what} in ${where}, split inside`,
        category: "utf-8 valid",
        bytes: body,
        splits: splitAt([at + 1, at + seq.length - 1], body.length),
        expect: "accept",
      });
    }
  }
  return cases;
}

function nulAndEncodingCases(): CorpusCase[] {
  const csv = HEADER + ROW;
  const nul = (name: string, body: Uint8Array<ArrayBuffer>): CorpusCase => ({
    name,
    category: "nul / utf-16 / utf-32",
    bytes: body,
    expect: ["binary_content"],
  });
  return [
    nul("NUL first byte", bytes([0], csv)),
    nul("NUL in header", bytes("user_id,vari", [0], "ant,date,m,dim\n", ROW)),
    nul("NUL in unquoted cell", bytes(HEADER, "u1,A,2026-01-01,1,x", [0], "\n")),
    nul("NUL in quoted cell", bytes(HEADER, 'u1,A,2026-01-01,1,"x', [0], '"\n')),
    nul("NUL last byte", bytes(HEADER, ROW, [0])),
    nul("NUL bytes only", new Uint8Array(512)),
    nul("UTF-16 LE without BOM", utf16(csv, true)),
    nul("UTF-16 BE without BOM", utf16(csv, false)),
    nul("UTF-32 LE without BOM", utf32(csv, true)),
    nul("UTF-32 BE without BOM", utf32(csv, false)),
  ];
}

// ---------------------------------------------------------------------------------------------

function limitCases(): CorpusCase[] {
  const MB = 1024 * 1024;
  const line = (n: number) => "x".repeat(n);
  const manyColumns = (n: number) => {
    const names = ["user_id", "variant", "date"];
    for (let i = 3; i < n; i++) names.push(`c${i}`);
    return names.join(",");
  };
  const at1000 = manyColumns(1000);
  const row1000 = ["u1", "A", "2026-01-01", ...Array(997).fill("1")].join(",");
  const category = "limits";
  const cases: CorpusCase[] = [
    {
      name: "a 10 MB data line",
      category,
      bytes: bytes(HEADER, "u1,A,2026-01-01,1,", line(10 * MB), "\n"),
      expect: ["invalid_csv"],
    },
    {
      name: "a 10 MB header line",
      category,
      bytes: bytes(line(10 * MB), "\n"),
      expect: ["invalid_csv"],
    },
    {
      name: "a 10 MB quoted cell over many lines",
      category,
      bytes: bytes(HEADER, 'u1,A,2026-01-01,1,"', ("y".repeat(99) + "\n").repeat(100_000), '"\n'),
      expect: ["invalid_csv"],
    },
    {
      name: "a million-column header",
      category,
      bytes: bytes(manyColumns(1_000_000), "\n", ROW),
      expect: ["invalid_csv"],
    },
    {
      name: "a million-column data row",
      category,
      bytes: bytes(HEADER, "u1,A,2026-01-01,1", ",".repeat(1_000_000), "\n"),
      expect: ["invalid_csv"],
    },
    {
      name: "1001 columns",
      category,
      bytes: bytes(manyColumns(1001), "\n", row1000, ",1\n"),
      expect: ["invalid_csv"],
    },
    {
      name: "exactly 1000 columns",
      category,
      bytes: bytes(at1000, "\n", row1000, "\n"),
      expect: "accept",
    },
  ];
  // Streamed in 1 MiB pieces (chunked, no declared length). The same bodies with a declared
  // length take the off-thread validator: see the ignored test in bad_input_test.ts.
  for (const c of cases) c.splits = tinyChunks(MB, c.bytes.length, c.bytes.length);
  return cases;
}

function structureCases(): CorpusCase[] {
  const c = (
    name: string,
    body: string | Uint8Array<ArrayBuffer>,
    expect: CorpusCase["expect"],
  ) => ({
    name,
    category: "structure",
    bytes: typeof body === "string" ? bytes(body) : body,
    expect,
  });
  const bom = [0xef, 0xbb, 0xbf];
  return [
    c("empty body", "", ["no_data_rows"]),
    c("header only", HEADER, ["no_data_rows"]),
    c("header only, no line feed", HEADER.trim(), ["no_data_rows"]),
    c("blank lines only", "\n\n\n\r\n", ["no_data_rows"]),
    c("BOM only", bytes(bom), ["no_data_rows"]),
    c("BOM and header only", bytes(bom, HEADER), ["no_data_rows"]),
    c("BOM, header and a row", bytes(bom, HEADER, ROW), "accept"),
    c("spaces only", "     ", ["invalid_csv"]),
    c("unbalanced quote at end of file", HEADER + ROW + 'u2,B,2026-01-02,0,"open', ["invalid_csv"]),
    c("unbalanced quote at end of file, with line feed", HEADER + 'u2,B,2026-01-02,0,"x\n', [
      "invalid_csv",
    ]),
    c("unbalanced quote in the header", 'user_id,"variant,date,m\n' + ROW, ["invalid_csv"]),
    c("a lone quote as the last byte", HEADER + ROW + '"', ["invalid_csv"]),
    c("quote inside an unquoted cell", HEADER + 'u1,A,2026-01-01,1,x"y\n', ["invalid_csv"]),
    c("text after a closing quote", HEADER + 'u1,A,2026-01-01,1,"x"y\n', ["invalid_csv"]),
    c("tab delimiter", "user_id\tvariant\tdate\tm\nu1\tA\t2026-01-01\t1\n", ["invalid_csv"]),
    c("pipe delimiter", "user_id|variant|date|m\nu1|A|2026-01-01|1\n", ["invalid_csv"]),
    c("space delimiter", "user_id variant date m\nu1 A 2026-01-01 1\n", ["invalid_csv"]),
    c("comma header, semicolon rows", HEADER + "u1;A;2026-01-01;1;x\n", ["invalid_csv"]),
    c("semicolon header, comma rows", "user_id;variant;date;m\nu1,A,2026-01-01,1\n", [
      "invalid_csv",
    ]),
    c("mixed delimiters in the header", "user_id,variant;date,m\nu1,A;2026-01-01,1\n", [
      "missing_columns",
    ]),
    c(
      "semicolon file with decimal commas",
      "user_id;variant;date;m\nu1;A;2026-01-01;1,5\n",
      "accept",
    ),
    c("CR-only line ends", HEADER.replace("\n", "\r") + ROW.replace("\n", "\r"), ["invalid_csv"]),
    c("CRLF line ends", HEADER.replace("\n", "\r\n") + ROW.replace("\n", "\r\n"), "accept"),
    c("a short row", HEADER + "u1,A,2026-01-01,1\n", ["invalid_csv"]),
    c("a long row", HEADER + "u1,A,2026-01-01,1,x,extra\n", ["invalid_csv"]),
    c("empty user_id", HEADER + ",A,2026-01-01,1,x\n", ["invalid_csv"]),
    c("empty variant", HEADER + "u1, ,2026-01-01,1,x\n", ["invalid_csv"]),
    c("duplicate column", "user_id,variant,date,m,m\nu1,A,2026-01-01,1,2\n", ["invalid_csv"]),
    c("unnamed column", "user_id,variant,date,,m\nu1,A,2026-01-01,1,2\n", ["invalid_csv"]),
    c("missing date column", "user_id,variant,m\nu1,A,1\n", ["missing_columns"]),
    c("required names in another case", "User_ID,Variant,Date,m\nu1,A,2026-01-01,1\n", [
      "missing_columns",
    ]),
    c("quoted header names", '"user_id","variant","date","m"\nu1,A,2026-01-01,1\n', "accept"),
    c("no metric column", "user_id,variant,date,city\nu1,A,2026-01-01,Berlin\n", [
      "no_metric_column",
    ]),
  ];
}

function dateCases(): CorpusCase[] {
  const bad = [
    "2026-13-45",
    "2026-02-30",
    "2025-02-29",
    "1900-02-29",
    "0000-01-01",
    "2026-00-10",
    "2026-01-00",
    "2026-04-31",
    "26-01-01",
    "2026/01/01",
    "2026-1-1",
    "",
    "2026-01-01T00:00:00Z",
    "20260101",
    "2026-01-01x",
    "２０２６-01-01",
    "-2026-01-01",
    "9999-99-99",
  ];
  const good = [
    "2024-02-29",
    "2000-02-29",
    " 2026-01-01 ",
    "9999-12-31",
    "0001-01-01",
    '"2026-01-01"',
  ];
  return [
    ...bad.map((d) => ({
      name: `date ${JSON.stringify(d)}`,
      category: "dates",
      bytes: bytes(HEADER, `u1,A,${d},1,x\n`),
      expect: ["invalid_date"] as const,
    })),
    ...good.map((d) => ({
      name: `date ${JSON.stringify(d)}`,
      category: "dates valid",
      bytes: bytes(HEADER, `u1,A,${d},1,x\n`),
      expect: "accept" as const,
    })),
  ];
}

function numberCases(): CorpusCase[] {
  const edge = [
    "1e999",
    "-1e999",
    "1" + "0".repeat(250),
    "4.9e-324",
    "1e-400",
    "9007199254740993",
    "1.7976931348623157e308",
    "-0",
    "+.5",
    "00001",
  ];
  const text = ["NaN", "Infinity", "-Infinity", "inf", "nan", "0x10", "1" + "0".repeat(300), "1,5"];
  const rows = (values: string[], extra: (i: number) => string) =>
    values.map((v, i) => `u${i},${i % 2 ? "B" : "A"},2026-01-0${1 + (i % 9)},${extra(i)}${v}\n`)
      .join("");
  const cases: CorpusCase[] = [];
  for (const v of edge) {
    cases.push({
      name: `huge or tiny number ${v.length > 20 ? v.slice(0, 12) + "…" : v} as the only metric`,
      category: "numbers",
      bytes: bytes("user_id,variant,date,m\n", rows([v, "1", "2", "3", v, "0"], () => "")),
      expect: "accept",
      analyse: true,
    });
  }
  for (const v of text) {
    cases.push({
      name: `${v.length > 20 ? v.slice(0, 12) + "…" : v} as the only metric`,
      category: "numbers",
      bytes: bytes("user_id,variant,date,m\n", `u1,A,2026-01-01,"${v}"\nu2,B,2026-01-01,1\n`),
      expect: ["no_metric_column"],
    });
    cases.push({
      name: `${v.length > 20 ? v.slice(0, 12) + "…" : v} beside a metric`,
      category: "numbers",
      bytes: bytes("user_id,variant,date,k,m\n", `u1,A,2026-01-01,1,"${v}"\nu2,B,2026-01-01,0,2\n`),
      expect: "accept",
      analyse: true,
    });
  }
  return cases;
}

function randomCases(rng: Rng, count: number): CorpusCase[] {
  const cases: CorpusCase[] = [];
  for (let i = 0; i < count; i++) {
    const length = i % 4 === 0 ? rng.range(1, 16) : rng.range(17, 4096);
    const body = rng.bytes(length);
    cases.push({
      name: `random bytes #${i} (${length} B)`,
      category: "random bytes",
      bytes: body,
      splits: i % 3 === 0 ? randomSplits(rng, length, 5) : undefined,
      expect: BODY_CODES,
    });
  }
  return cases;
}

const INTERESTING = [0x00, 0x0a, 0x0d, 0x22, 0x2c, 0x3b, 0x20, 0x09, 0x80, 0xc3, 0xed, 0xff];

/** One seeded mutation of `base`: flips, overwrites, insertions, deletions, truncations. */
export function mutate(
  base: Uint8Array,
  rng: Rng,
): { what: string; bytes: Uint8Array<ArrayBuffer> } {
  const b = new Uint8Array(base);
  const at = rng.int(b.length);
  switch (rng.int(8)) {
    case 0: {
      b[at] ^= 1 << rng.int(8);
      return { what: `bit flip at ${at}`, bytes: b };
    }
    case 1: {
      const v = rng.pick(INTERESTING);
      b[at] = v;
      return { what: `byte ${v} at ${at}`, bytes: b };
    }
    case 2: {
      const v = rng.pick(INTERESTING);
      return { what: `insert ${v} at ${at}`, bytes: bytes(b.subarray(0, at), [v], b.subarray(at)) };
    }
    case 3: {
      const n = rng.range(1, 64);
      return {
        what: `insert ${n} random bytes at ${at}`,
        bytes: bytes(b.subarray(0, at), rng.bytes(n), b.subarray(at)),
      };
    }
    case 4: {
      const n = rng.range(1, 40);
      return { what: `delete ${n} at ${at}`, bytes: bytes(b.subarray(0, at), b.subarray(at + n)) };
    }
    case 5:
      return { what: `truncate at ${at}`, bytes: b.slice(0, at) };
    case 6: {
      const n = rng.range(1, 200);
      return {
        what: `duplicate ${n} at ${at}`,
        bytes: bytes(b.subarray(0, at + n), b.subarray(at, at + n), b.subarray(at + n)),
      };
    }
    default: {
      const n = rng.range(2, 6);
      for (let i = 0; i < n; i++) b[rng.int(b.length)] = rng.int(256);
      return { what: `${n} random bytes overwritten`, bytes: b };
    }
  }
}

function mutationCases(rng: Rng, count: number): CorpusCase[] {
  const base = validBase();
  const cases: CorpusCase[] = [];
  for (let i = 0; i < count; i++) {
    const { what, bytes: body } = mutate(base, rng);
    cases.push({
      name: `mutation #${i}: ${what}`,
      category: "mutations",
      bytes: body,
      splits: i % 2 === 0 ? randomSplits(rng, body.length, 4) : undefined,
      expect: "any",
    });
  }
  return cases;
}

export interface CorpusOptions {
  seed: number;
  /** Multiplies the random and mutated parts; default 1 (40 random bodies, 150 mutations). */
  scale?: number;
  /** Leave out the multi-megabyte cases (10 MB lines, a million columns). */
  small?: boolean;
}

export function buildCorpus(options: CorpusOptions): CorpusCase[] {
  const rng = new Rng(options.seed);
  const scale = options.scale ?? 1;
  const cases = [
    ...signatureCases(rng),
    ...utf8Cases(rng),
    ...nulAndEncodingCases(),
    ...(options.small ? [] : limitCases()),
    ...structureCases(),
    ...dateCases(),
    ...numberCases(),
    ...randomCases(rng, Math.round(40 * scale)),
    ...mutationCases(rng, Math.round(150 * scale)),
  ];
  const names = new Set<string>();
  for (const c of cases) {
    if (names.has(c.name)) throw new Error(`duplicate corpus case name: ${c.name}`);
    names.add(c.name);
  }
  return cases;
}

/** The pieces of a case's body at its split points. */
export function pieces(c: CorpusCase): Uint8Array<ArrayBuffer>[] {
  const at = [0, ...(c.splits ?? []), c.bytes.length];
  const out: Uint8Array<ArrayBuffer>[] = [];
  for (let i = 0; i + 1 < at.length; i++) out.push(c.bytes.slice(at[i], at[i + 1]));
  return out.length > 0 ? out : [c.bytes.slice()];
}
