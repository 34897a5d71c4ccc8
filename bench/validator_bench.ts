/**
 * Micro-benchmark of the upload validator: reads a CSV into 64 KiB chunks, then times
 * `DatasetValidator` over all of them (push + finish), median of several runs, beside a fatal
 * `TextDecoder` over the same chunks.
 *
 *   deno run -A bench/validator_bench.ts [FILE]   (default /tmp/bench.csv, generated if missing)
 */
import process from "node:process";
import { DatasetValidator } from "../src/pipeline/mod.ts";
import { writeCsv } from "./generate_csv.ts";

/** Options of `benchValidator`. */
export interface BenchValidatorOptions {
  /** Timed runs; the median counts. Default 7. */
  runs?: number;
  /** Chunk size in bytes; default 65_536. */
  chunkBytes?: number;
  /** Rows to generate when the file is missing; default 4_700_000. */
  rows?: number;
}

/** One figure of the benchmark. */
export interface BenchValidatorResult {
  bytes: number;
  /** Validator throughput (median), in 10^6 bytes a second. */
  mbPerSecond: number;
  /**
   * Validator throughput by the process's CPU time (median): steadier than wall time when other
   * work shares the machine.
   */
  cpuMbPerSecond: number;
  /** Fatal streaming `TextDecoder` alone over the same chunks (median). */
  textDecoderMbPerSecond: number;
  rows: number;
}

/** Reads `path` (writing the generated dataset there first if it is missing) into chunks. */
export async function readChunks(
  path: string,
  chunkBytes = 65_536,
  rows?: number,
): Promise<Uint8Array[]> {
  try {
    await Deno.stat(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    await writeCsv(path, { rows });
  }
  const data = await Deno.readFile(path);
  const chunks: Uint8Array[] = [];
  for (let offset = 0; offset < data.length; offset += chunkBytes) {
    chunks.push(data.slice(offset, offset + chunkBytes));
  }
  return chunks;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

interface Timing {
  /** Median wall seconds. */
  wall: number;
  /** Median CPU seconds of the process. */
  cpu: number;
}

function timeRuns(runs: number, body: () => void): Timing {
  body(); // warm-up
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let run = 0; run < runs; run++) {
    const cpuStart = process.cpuUsage();
    const start = performance.now();
    body();
    wall.push((performance.now() - start) / 1000);
    const used = process.cpuUsage(cpuStart);
    cpu.push((used.user + used.system) / 1e6);
  }
  return { wall: median(wall), cpu: median(cpu) };
}

/** Times the validator over the file at `path`; answers the median throughput. */
export async function benchValidator(
  path = "/tmp/bench.csv",
  options: BenchValidatorOptions = {},
): Promise<BenchValidatorResult> {
  const runs = options.runs ?? 7;
  const chunks = await readChunks(path, options.chunkBytes, options.rows);
  const bytes = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
  let rows = 0;
  const validator = timeRuns(runs, () => {
    const check = new DatasetValidator();
    for (const chunk of chunks) check.push(chunk);
    rows = check.finish().rows;
  });
  const decoder = timeRuns(runs, () => {
    const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });
    for (const chunk of chunks) decoder.decode(chunk, { stream: true });
    decoder.decode();
  });
  return {
    bytes,
    mbPerSecond: bytes / 1e6 / validator.wall,
    cpuMbPerSecond: bytes / 1e6 / validator.cpu,
    textDecoderMbPerSecond: bytes / 1e6 / decoder.wall,
    rows,
  };
}

if (import.meta.main) {
  const path = Deno.args[0] ?? "/tmp/bench.csv";
  const result = await benchValidator(path);
  console.log(
    `input            ${(result.bytes / 1e6).toFixed(1)} MB, ${result.rows} rows, 64 KiB chunks`,
  );
  console.log(
    `DatasetValidator ${result.mbPerSecond.toFixed(0)} MB/s (median wall time; ` +
      `${result.cpuMbPerSecond.toFixed(0)} MB/s by CPU time)`,
  );
  console.log(`TextDecoder      ${result.textDecoderMbPerSecond.toFixed(0)} MB/s (fatal, stream)`);
}
