/**
 * The shared case suite of the two CSV readers (as hono runs every router through one set of
 * cases): the upload validator (`DatasetValidator`) and the analysis reader (`CsvAggregator`, and
 * `aggregateDelivery` as the analysis runs it) over one corpus — the reliability corpus, generated
 * valid files (BOM, CRLF, quoted delimiters and line ends, semicolons with decimal commas, empty
 * cells, dimension columns), their mutations, and the cases where the two once disagreed.
 *
 * - The validator's verdict does not depend on how the bytes are chunked.
 * - Whatever it accepts, the analysis reads with the same rows, columns, delimiter and metric
 *   kinds, however the bytes are chunked, by direct upload or by two-step delivery.
 * - Whatever it refuses, a two-step delivery of the same bytes fails its analysis with the same
 *   error: code, message and line.
 */
import assert from "node:assert/strict";
import { CsvAggregator, DaysOutOfRange } from "../../src/analysis/aggregate/aggregate.ts";
import type { Aggregate } from "../../src/analysis/aggregate/aggregate_types.ts";
import { aggregateDelivery } from "../../src/analysis/aggregate_delivery.ts";
import type { Header } from "../../src/csv/header.ts";
import { REQUIRED_COLUMNS } from "../../src/csv/header.ts";
import { DatasetValidator, type ValidationSummary } from "../../src/pipeline/mod.ts";
import { Rng } from "../_faults.ts";
import { buildCorpus, mutate, pieces } from "../reliability/_corpus.ts";
import { CORPUS_SEED } from "../reliability/_corpus_run.ts";
import { generateFiles } from "./_generated_files.ts";

interface Case {
  name: string;
  bytes: Uint8Array;
  /** Chunk boundaries of the corpus case, if it has its own. */
  splits?: number[];
}

type Verdict =
  | { accepted: true; summary: ValidationSummary }
  | { accepted: false; code: string; message: string; line: number | null };

const encoder = new TextEncoder();

/**
 * The ways each case is cut: whole, byte by byte, in 7-byte pieces, and at the corpus case's own
 * splits; big inputs whole and by 64 KiB.
 */
function chunkings(c: Case): Uint8Array[][] {
  const sizes = c.bytes.length > 1 << 20 ? [0, 65_536] : [0, 1, 7];
  const out = sizes.map((size) => {
    if (size === 0) return [c.bytes];
    const chunks: Uint8Array[] = [];
    for (let i = 0; i < c.bytes.length; i += size) chunks.push(c.bytes.subarray(i, i + size));
    return chunks;
  });
  if (c.splits) out.push(pieces({ ...c, category: "", expect: "any", bytes: c.bytes.slice() }));
  return out;
}

function validate(chunks: Uint8Array[]): Verdict {
  const validator = new DatasetValidator();
  try {
    for (const chunk of chunks) validator.push(chunk);
    return { accepted: true, summary: validator.finish() };
  } catch (error) {
    const { code, message, line } = error as { code?: string; message: string; line?: number };
    return { accepted: false, code: code ?? String(error), message, line: line ?? null };
  }
}

/** The analysis reader over `chunks` on one thread: the aggregate and the header it read. */
function read(chunks: Uint8Array[]): { aggregate: Aggregate; header: Header | null } {
  let header: Header | null = null;
  const aggregator = new CsvAggregator({ onHeader: (read) => header = read });
  for (const chunk of chunks) aggregator.push(chunk);
  return { aggregate: aggregator.finish(), header };
}

/** What the analysis found, in the validator's terms. */
function asSummary(aggregate: Aggregate, header: Header | null) {
  const metrics = aggregate.metrics.map(({ name, detectedKind }) => ({ name, kind: detectedKind }));
  const names = header?.names ?? [];
  const metricNames = new Set(metrics.map((metric) => metric.name));
  return {
    rows: aggregate.rows,
    delimiter: header?.delimiter,
    columns: names,
    metrics,
    dimensions: names.filter((name) =>
      !(REQUIRED_COLUMNS as readonly string[]).includes(name) && !metricNames.has(name)
    ),
  };
}

function stream(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  return ReadableStream.from(chunks.map((chunk) => chunk.slice()));
}

/**
 * Runs one case through both readers; answers what disagreed. `worker`: whether the analysis may
 * start its worker thread (the same answer; each start costs tens of milliseconds).
 */
async function compare(c: Case, worker: boolean): Promise<string[]> {
  const failures: string[] = [];
  const fail = (what: string) => failures.push(`${c.name}: ${what}`);
  const cuts = chunkings(c);
  const verdict = validate([c.bytes]);
  const expected = JSON.stringify(verdict);
  for (const chunks of cuts.slice(1)) {
    const other = JSON.stringify(validate(chunks));
    if (other !== expected) {
      fail(
        `the validator's verdict depends on the chunking (${chunks.length} chunks): ` +
          `${expected.slice(0, 200)} vs ${other.slice(0, 200)}`,
      );
    }
  }

  if (verdict.accepted) {
    const { rows, delimiter, columns, metrics, dimensions } = verdict.summary;
    const wanted = JSON.stringify({ rows, delimiter, columns, metrics, dimensions });
    let first: Aggregate | null = null;
    for (const chunks of cuts) {
      try {
        const { aggregate, header } = read(chunks);
        const found = JSON.stringify(asSummary(aggregate, header));
        if (found !== wanted) fail(`read ${found}, the validator found ${wanted}`);
        if (first === null) first = aggregate;
        else if (JSON.stringify(aggregate) !== JSON.stringify(first)) {
          fail(`the aggregate depends on the chunking (${chunks.length} chunks)`);
        }
      } catch (error) {
        fail(`accepted, but the analysis reader refused it: ${error}`);
      }
    }
    // As the analysis runs: after a direct upload (validated) and after a two-step delivery.
    for (const validated of [true, false]) {
      const how = `validated: ${validated}`;
      try {
        const analyse = (wideDays: boolean) =>
          aggregateDelivery(stream(cuts[cuts.length - 1]), {
            validated,
            worker,
            wideDays,
          });
        // A date outside 16-bit days is read again with 32-bit ones, as `runAnalysis` does.
        const aggregate = await analyse(false).catch((error) => {
          if (error instanceof DaysOutOfRange) return analyse(true);
          throw error;
        });
        if (first && JSON.stringify(aggregate) !== JSON.stringify(first)) {
          fail(`aggregateDelivery (${how}) read another aggregate`);
        }
      } catch (error) {
        fail(`accepted, but aggregateDelivery (${how}) failed: ${error}`);
      }
    }
  } else {
    for (const chunks of [cuts[0], cuts[cuts.length - 1]]) {
      try {
        await aggregateDelivery(stream(chunks), { worker });
        fail(`refused (${verdict.code}), but a two-step delivery was analysed`);
      } catch (error) {
        const { code, message, line } = error as { code?: string; message: string; line?: number };
        const got = JSON.stringify({ accepted: false, code, message, line: line ?? null });
        if (got !== expected) {
          fail(`a two-step delivery failed with ${got}, the upload with ${expected}`);
        }
      }
    }
  }
  return failures;
}

/** Compares every case; one in `WORKER_EVERY` runs the analysis with its worker thread. */
async function assertAgree(cases: Case[]): Promise<void> {
  const failures: string[] = [];
  for (const [i, c] of cases.entries()) {
    failures.push(...await compare(c, i % WORKER_EVERY === 0));
  }
  assert.deepEqual(failures.slice(0, 20), [], failures.slice(0, 20).join("\n"));
}

const WORKER_EVERY = 16;

const GENERATED = generateFiles(20_260_214, 160);

Deno.test("the validator and the analysis reader agree on the reliability corpus", async () => {
  const corpus = buildCorpus({ seed: CORPUS_SEED });
  await assertAgree(corpus.map(({ name, bytes, splits }) => ({ name, bytes, splits })));
});

Deno.test("the validator accepts the generated files as they were built", () => {
  for (const file of GENERATED) {
    const verdict = validate([file.bytes]);
    assert.ok(verdict.accepted, `${file.name}: ${JSON.stringify(verdict)}`);
    const { rows, delimiter, columns, metrics } = verdict.summary;
    assert.deepEqual(
      { rows, delimiter, columns, metrics },
      { rows: file.rows, delimiter: file.delimiter, columns: file.columns, metrics: file.metrics },
      file.name,
    );
  }
});

Deno.test("the validator and the analysis reader agree on generated valid files", async () => {
  await assertAgree(GENERATED);
});

Deno.test("the validator and the analysis reader agree on mutations of the generated files", async () => {
  const rng = new Rng(20_260_215);
  const cases: Case[] = [];
  for (const file of GENERATED) {
    for (let i = 0; i < 2; i++) {
      const { what, bytes } = mutate(file.bytes, rng);
      cases.push({ name: `${file.name}, ${what}`, bytes });
    }
  }
  await assertAgree(cases);
});

/** Inputs on which the two readers once disagreed, and their neighbours. */
const ONCE_APART: [string, string][] = [
  ["year 0000", "user_id,variant,date,m\nu1,A,0000-01-01,1\n"],
  ["February 30", "user_id,variant,date,m\nu1,A,2026-02-30,1\n"],
  ["February 29 of a common year", "user_id,variant,date,m\nu1,A,2025-02-29,1\n"],
  ["April 31", "user_id,variant,date,m\nu1,A,2026-04-31,1\n"],
  ["February 29 of a leap year", "user_id,variant,date,m\nu1,A,2024-02-29,1\n"],
  [
    "a blank metric cell over 256 bytes",
    `user_id,variant,date,k,m\nu1,A,2026-01-01,1,2\nu2,B,2026-01-01,0,${" ".repeat(300)}\n`,
  ],
  [
    "a blank metric cell of 256 bytes",
    `user_id,variant,date,k,m\nu1,A,2026-01-01,1,2\nu2,B,2026-01-01,0,${" ".repeat(256)}\n`,
  ],
  ["a carriage return ending a header name", "user_id,variant,date,m\r\r\nu1,A,2026-01-01,1\n"],
  ["an unnamed column", "user_id,variant,date,,m\nu1,A,2026-01-01,1,2\n"],
  [
    "1001 columns in the header",
    `user_id,variant,date,${
      Array.from({ length: 998 }, (_, i) => `c${i}`).join(",")
    }\nu1,A,2026-01-01${",1".repeat(998)}\n`,
  ],
  ["an empty user_id", "user_id,variant,date,m\n,A,2026-01-01,1\n"],
  ["a variant of spaces", "user_id,variant,date,m\nu1, \t ,2026-01-01,1\n"],
  [
    "a lone carriage return inside a row",
    "user_id,variant,date,m\nu1,A,2026-01-01,1\ru2,A,2026-01-01,1\n",
  ],
  ["a lone carriage return inside a cell", "user_id,variant,date,m,d\nu1,A,2026-01-01,1,x\ry\n"],
  ["a lone carriage return ending the file", "user_id,variant,date,m\nu1,A,2026-01-01,1\r"],
  ["a header in UTF-8 with a broken byte", "user_id,variant,date,m\xff\nu1,A,2026-01-01,1\n"],
  ["a BOM on the second line", "\n\uFEFFuser_id,variant,date,m\nu1,A,2026-01-01,1\n"],
  ["a BOM alone on the first line", "\uFEFF\r\nuser_id,variant,date,m\nu1,A,2026-01-01,1\n"],
  [
    "an unclosed quote opened on the row's second line",
    'user_id,variant,date,m\n"u\n1",A,2026-01-01,"1',
  ],
  ["a quoted header with a line end in a name", 'user_id,variant,date,"a\nb"\nu1,A,2026-01-01,1\n'],
  [
    "a decimal comma with a comma delimiter, quoted",
    'user_id,variant,date,m,k\nu1,A,2026-01-01,"1,5",1\n',
  ],
  [
    "0/1 written as 1.0, 0,00 and 1.",
    "user_id;variant;date;m\nu1;A;2026-01-01;1.0\nu2;B;2026-01-01;0,00\nu3;B;2026-01-01;1.\n",
  ],
  [
    "signed and exponent 0/1",
    "user_id,variant,date,m,k\nu1,A,2026-01-01,+1,1e0\nu2,B,2026-01-01,-0,0\n",
  ],
  ["a number split from its row by spaces", "user_id,variant,date,m\nu1,A, 2026-01-01 ,\t7 \n"],
  ["an escaped quote in a user_id", 'user_id,variant,date,m\n"""",A,2026-01-01,1\n'],
  ["a metric column with only empty cells", "user_id,variant,date,m,k\nu1,A,2026-01-01,,1\n"],
];

Deno.test("the validator and the analysis reader agree where they once disagreed", async () => {
  await assertAgree(ONCE_APART.map(([name, text]) => ({ name, bytes: encoder.encode(text) })));
});
