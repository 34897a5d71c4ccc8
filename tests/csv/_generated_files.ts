/**
 * Valid CSV files generated from a seed for the shared case suite: each mixes the features the
 * two readers must agree on — a BOM, CRLF or LF, comma or semicolon (with decimal commas),
 * quoted cells holding delimiters, line ends and escaped quotes, spaces around cells, blank
 * lines, empty cells, 0/1 and numeric metrics written in every accepted form, and dimension
 * columns — with the required columns anywhere in the header.
 */
import { Rng } from "../_faults.ts";

/** One generated file and what it was built to hold. */
export interface GeneratedFile {
  name: string;
  bytes: Uint8Array<ArrayBuffer>;
  delimiter: "," | ";";
  /** Header names as written, trimmed. */
  columns: string[];
  /** The metric columns and their kinds, in header order. */
  metrics: { name: string; kind: "conversion" | "numeric" }[];
  /** Data rows. */
  rows: number;
}

type ColumnKind = "conversion" | "numeric" | "dimension" | "blank";

const encoder = new TextEncoder();

/** Quotes `text` as RFC 4180 asks: in quotes, with quotes doubled. */
function quote(text: string): string {
  return `"${text.replaceAll('"', '""')}"`;
}

/** `text` as a cell: quoted when it must be (or at random when it may be). */
function cell(rng: Rng, text: string, delimiter: string): string {
  const must = text.includes(delimiter) || text.includes('"') || text.includes("\n") ||
    text.includes("\r");
  return must || rng.int(8) === 0 ? quote(text) : text;
}

/** Spaces or a tab around a value, now and then (both readers ignore them). */
function pad(rng: Rng, text: string): string {
  if (rng.int(10) !== 0) return text;
  return rng.pick([" ", "\t", "  "]) + text + rng.pick(["", " ", "\t"]);
}

function date(rng: Rng): string {
  const [year, month, day] = rng.pick([
    [2026, 1, 1 + rng.int(31)],
    [2026, 2, 1 + rng.int(28)],
    [2024, 2, 29],
    [2000, 2, 29],
    [2026, 4, 1 + rng.int(30)],
    [2026, 12, 31],
    [1, 1, 1],
    [9999, 12, 31],
  ]);
  return `${String(year).padStart(4, "0")}-${String(month).padStart(2, "0")}-${
    String(day).padStart(2, "0")
  }`;
}

function binary(rng: Rng, comma: boolean): string {
  const one = rng.int(2) === 1 ? "1" : "0";
  const point = comma && rng.int(2) === 0 ? "," : ".";
  return rng.pick([one, one, one, `${one}${point}0`, `${one}${point}`, `${one}${point}000`]);
}

function numeric(rng: Rng, comma: boolean): string {
  const point = comma && rng.int(2) === 0 ? "," : ".";
  const digits = String(rng.int(100_000));
  return rng.pick([
    digits,
    `-${digits}`,
    `+${digits}`,
    `${digits}${point}${rng.int(100)}`,
    `${point}${rng.int(10)}5`,
    `${rng.int(10)}e${rng.int(5)}`,
    `-${rng.int(10)}${point}5E-${rng.int(3)}`,
    "00042",
    "2",
  ]);
}

/** Numbers whose value may be 0 or 1 but whose writing is not 0/1: they make a column numeric. */
const NOT_BINARY = ["7.5", "+1", "-0", "1e0", "01", ".0", "00", "-1", "1.5"];

const WORDS = [
  "Berlin",
  "Zürich, CH",
  'say "hi"',
  "two\nlines",
  "東京",
  "a;b",
  "x\r\ny",
  "-",
  "n/a",
];

function text(rng: Rng): string {
  return rng.int(3) === 0 ? rng.pick(WORDS) : `t${rng.int(50)}`;
}

/** One valid file from `rng`. */
export function generateFile(rng: Rng, index: number): GeneratedFile {
  const delimiter = rng.int(3) === 0 ? ";" : ",";
  const comma = delimiter === ";";
  const lineEnd = rng.int(2) === 0 ? "\r\n" : "\n";
  const bom = rng.int(3) === 0;
  const kinds: ColumnKind[] = [];
  const extra = rng.range(1, 6);
  for (let i = 0; i < extra; i++) {
    kinds.push(rng.pick(["conversion", "numeric", "numeric", "dimension", "blank"] as const));
  }
  if (!kinds.includes("conversion") && !kinds.includes("numeric")) kinds.push("numeric");
  const names: string[] = kinds.map((kind, i) => `${kind.slice(0, 3)}_${i}`);
  const columns: (ColumnKind | "user_id" | "variant" | "date")[] = [...kinds];
  for (const required of ["user_id", "variant", "date"] as const) {
    const at = rng.int(columns.length + 1);
    columns.splice(at, 0, required);
    names.splice(at, 0, required);
  }
  const header = names.map((name) => {
    const written = rng.int(6) === 0 ? ` ${name} ` : name;
    return rng.int(5) === 0 ? quote(written) : written;
  }).join(delimiter);

  // Each metric column gets at least one value of its kind, so its kind is as built.
  const rowCount = rng.range(1, 60);
  const lines: string[] = [header];
  for (let r = 0; r < rowCount; r++) {
    if (rng.int(15) === 0) lines.push(""); // a blank line
    const fields = columns.map((kind) => {
      switch (kind) {
        case "user_id": {
          const id = rng.int(4) === 0 ? `u,${rng.int(20)}` : `u${rng.int(20)}`;
          return cell(rng, pad(rng, id), delimiter);
        }
        case "variant":
          return cell(rng, pad(rng, rng.pick(["A", "B", "control", "B;2", 'C "x"'])), delimiter);
        case "date":
          return cell(rng, pad(rng, date(rng)), delimiter);
        case "conversion":
          return r > 0 && rng.int(6) === 0
            ? ""
            : cell(rng, pad(rng, binary(rng, comma)), delimiter);
        case "numeric":
          // The first value makes the column numeric, at times one written like 0/1 but not so
          // by the rule; the others are at times 0/1.
          return r === 0
            ? cell(rng, rng.pick(NOT_BINARY).replace(".", comma ? "," : "."), delimiter)
            : rng.int(6) === 0
            ? pad(rng, "")
            : rng.int(3) === 0
            ? cell(rng, pad(rng, binary(rng, comma)), delimiter)
            : cell(rng, pad(rng, numeric(rng, comma)), delimiter);
        case "dimension":
          return r === 0 ? cell(rng, "Berlin", delimiter) : cell(rng, text(rng), delimiter);
        default:
          return rng.int(2) === 0 ? "" : " ";
      }
    });
    lines.push(fields.join(delimiter));
  }
  let body = lines.join(lineEnd);
  if (rng.int(4) !== 0) body += lineEnd;
  if (rng.int(10) === 0) body += lineEnd; // a blank last line
  const bytes = encoder.encode((bom ? "\uFEFF" : "") + body);
  return {
    name: `generated file #${index} (${delimiter === ";" ? "semicolon" : "comma"}, ${
      lineEnd === "\n" ? "LF" : "CRLF"
    }${bom ? ", BOM" : ""}, ${rowCount} rows)`,
    bytes,
    delimiter,
    columns: names,
    metrics: kinds.flatMap((kind, i) =>
      kind === "conversion" || kind === "numeric"
        ? [{ name: `${kind.slice(0, 3)}_${i}`, kind }]
        : []
    ),
    rows: rowCount,
  };
}

/** `count` valid files from `seed`. */
export function generateFiles(seed: number, count: number): GeneratedFile[] {
  const rng = new Rng(seed);
  return Array.from({ length: count }, (_, i) => generateFile(rng, i));
}
