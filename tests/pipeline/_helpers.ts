import assert from "node:assert/strict";
import {
  DatasetValidator,
  type DatasetValidatorOptions,
  ValidationError,
  type ValidationSummary,
} from "../../src/pipeline/mod.ts";

const encoder = new TextEncoder();

/** The standard header of the test datasets. */
export const HEADER = "user_id,variant,date,converted,revenue\n";

/** Encodes text as UTF-8; byte arrays pass through. */
export function bytes(input: string | Uint8Array | number[]): Uint8Array {
  if (typeof input === "string") return encoder.encode(input);
  return input instanceof Uint8Array ? input : new Uint8Array(input);
}

/** Joins byte pieces. */
export function concat(...parts: (string | Uint8Array | number[])[]): Uint8Array {
  const pieces = parts.map(bytes);
  const out = new Uint8Array(pieces.reduce((sum, piece) => sum + piece.length, 0));
  let offset = 0;
  for (const piece of pieces) {
    out.set(piece, offset);
    offset += piece.length;
  }
  return out;
}

/** Splits bytes into chunks of `size` (0: one chunk), each a fresh copy. */
export function chunked(data: Uint8Array, size: number): Uint8Array[] {
  if (size <= 0) return [data.slice()];
  const chunks: Uint8Array[] = [];
  for (let offset = 0; offset < data.length; offset += size) {
    chunks.push(data.slice(offset, offset + size));
  }
  return chunks;
}

export interface RunOptions extends DatasetValidatorOptions {
  /** Chunk size; default 0 (one chunk). */
  chunk?: number;
}

/** Validates the input pushed in chunks and answers the summary. */
export function validate(
  input: string | Uint8Array | number[],
  options: RunOptions = {},
): ValidationSummary {
  const validator = new DatasetValidator(options);
  for (const chunk of chunked(bytes(input), options.chunk ?? 0)) validator.push(chunk);
  return validator.finish();
}

/** Asserts that validation fails with `code` (and `line`, when given); answers the error. */
export function rejects(
  input: string | Uint8Array | number[],
  code: string,
  line?: number | null,
  options: RunOptions = {},
): ValidationError {
  let caught: unknown = null;
  try {
    validate(input, options);
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof ValidationError, `expected a ValidationError, got ${caught}`);
  assert.equal(caught.code, code, caught.message);
  if (line !== undefined) assert.equal(caught.line, line, caught.message);
  return caught;
}

/** Chunk sizes every structural case is run with: whole, byte by byte, and odd splits. */
export const CHUNK_SIZES = [0, 1, 2, 3, 7, 64];
