/**
 * Writes a deterministic A/B dataset `user_id,variant,date,converted,revenue` for benchmarks and
 * large tests. About 42 bytes a row: 4.7 M rows make ~200 MB, spread over ~1.2 M users. With
 * `dimensions`, two more columns: `country` (30 values, a few of them rare) and `device` (3
 * values), each fixed per user; about 52 bytes a row, so 3.7 M rows make the same ~193 MB.
 *
 *   deno run -A bench/generate_csv.ts OUT.csv [ROWS] [--dimensions]
 */

export interface GenerateOptions {
  /** Data rows to write; default 4_700_000. */
  rows?: number;
  /** Distinct users; default rows / 4. */
  users?: number;
  /** Variant names; default ["A", "B"]. */
  variants?: string[];
  /** Days covered starting 2026-01-01; default 28. */
  days?: number;
  /** PRNG seed; default 1. */
  seed?: number;
  /** Conversion probability per variant; default 0.10 for the first, +0.005 for each next one. */
  conversion?: number[];
  /** Add the dimension columns `country` and `device`; default false. */
  dimensions?: boolean;
}

/** The 30 countries of the dimension benchmark, most frequent first (weights 1/rank). */
export const COUNTRIES = [
  "US",
  "DE",
  "GB",
  "FR",
  "NL",
  "ES",
  "IT",
  "CA",
  "BR",
  "MX",
  "PL",
  "SE",
  "BE",
  "AT",
  "CH",
  "DK",
  "NO",
  "FI",
  "IE",
  "PT",
  "CZ",
  "GR",
  "HU",
  "RO",
  "JP",
  "KR",
  "AU",
  "NZ",
  "IN",
  "ZA",
];
export const DEVICES = ["mobile", "desktop", "tablet"];

/** A small, seedable PRNG (mulberry32). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A 20-character user id derived from the user's number: `usr-` and 16 hex digits. */
export function userId(n: number): string {
  const hi = Math.imul(n ^ 0x5bd1e995, 0x9e3779b1) >>> 0;
  const lo = Math.imul(n + 0x7f4a7c15, 0x85ebca6b) >>> 0;
  return `usr-${hi.toString(16).padStart(8, "0")}${lo.toString(16).padStart(8, "0")}`;
}

/** Yields the dataset as byte chunks of about 1 MiB. */
export async function* generateCsv(options: GenerateOptions = {}): AsyncGenerator<Uint8Array> {
  const rows = options.rows ?? 4_700_000;
  const users = Math.max(1, options.users ?? Math.floor(rows / 4));
  const variants = options.variants ?? ["A", "B"];
  const days = options.days ?? 28;
  const conversion = options.conversion ?? variants.map((_, i) => 0.1 + 0.005 * i);
  const rand = mulberry32(options.seed ?? 1);
  const encoder = new TextEncoder();
  const dates: string[] = [];
  for (let d = 0; d < days; d++) {
    dates.push(new Date(Date.UTC(2026, 0, 1 + d)).toISOString().slice(0, 10));
  }
  const userIds = Array.from({ length: users }, (_, u) => userId(u));
  // Dimension cells per user, from the user's number (the same in every row of the user).
  let dims: string[] | null = null;
  if (options.dimensions) {
    const weights = COUNTRIES.map((_, i) => 1 / (i + 1));
    const total = weights.reduce((a, b) => a + b, 0);
    const pick = mulberry32(99);
    dims = Array.from({ length: users }, () => {
      let r = pick() * total;
      let c = 0;
      while (c < COUNTRIES.length - 1 && (r -= weights[c]) > 0) c++;
      const d = pick();
      return `,${COUNTRIES[c]},${DEVICES[d < 0.55 ? 0 : d < 0.93 ? 1 : 2]}`;
    });
  }
  let text = `user_id,variant,date,converted,revenue${dims ? ",country,device" : ""}\n`;
  for (let i = 0; i < rows; i++) {
    const user = Math.floor(rand() * users);
    const v = user % variants.length;
    const date = dates[Math.floor(rand() * days)];
    const converted = rand() < conversion[v] ? 1 : 0;
    const revenue = converted ? (5 + rand() * 95).toFixed(2) : "0.00";
    text += `${userIds[user]},${variants[v]},${date},${converted},${revenue}${
      dims ? dims[user] : ""
    }\n`;
    if (text.length >= 1 << 20) {
      yield encoder.encode(text);
      text = "";
    }
  }
  if (text.length > 0) yield encoder.encode(text);
  await Promise.resolve();
}

/** Writes the dataset to `path` and answers its size in bytes. */
export async function writeCsv(path: string, options: GenerateOptions = {}): Promise<number> {
  using file = await Deno.open(path, { write: true, create: true, truncate: true });
  let size = 0;
  for await (const chunk of generateCsv(options)) {
    let offset = 0;
    while (offset < chunk.length) offset += await file.write(chunk.subarray(offset));
    size += chunk.length;
  }
  return size;
}

/** Generates the dataset at `path` unless a file is there (saying so on stderr). */
export async function ensureCsv(path: string, options: GenerateOptions = {}): Promise<void> {
  try {
    await Deno.stat(path);
  } catch {
    const rows = ((options.rows ?? 4_700_000) / 1e6).toFixed(2).replace(/0$/, "");
    const extra = options.dimensions ? " with country and device" : "";
    console.error(`${path} is missing: generating ${rows} M rows${extra}`);
    await writeCsv(path, options);
  }
}

if (import.meta.main) {
  const dimensions = Deno.args.includes("--dimensions");
  const [out, rows] = Deno.args.filter((arg) => arg !== "--dimensions");
  if (!out) {
    console.error("usage: generate_csv.ts OUT.csv [ROWS] [--dimensions]");
    Deno.exit(2);
  }
  const size = await writeCsv(out, { rows: rows ? Number(rows) : undefined, dimensions });
  console.log(`${out}: ${(size / 1048576).toFixed(1)} MiB`);
}
