/**
 * The CSV checks and the SHA-256 of a direct upload, as hooks of the upload's byte stage (its
 * limits', `limits.ts`): each read is checked and hashed, in the reader's own buffer, before it
 * is handed on, so the bytes holding the first problem never reach storage (the stream errors
 * with the `ValidationError` instead), and `result` resolves once the last byte passed.
 * The checks are docs/api.md's ("What a direct upload checks"), by `src/pipeline/`'s validator.
 *
 * They run on the request's thread: on two processors a worker thread that checked and hashed
 * each read was no faster (tmpfs 0.40 of the raw sink both ways, disk 0.51 against 0.54), one
 * that only hashed was slower (0.33–0.36 against 0.37–0.41), and both peaked 90–200 MB higher
 * (2026-12-02; docs/performance.md, "The CSV checks" and "Ideas tried").
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { ByteStageHooks } from "./_byte_stage.ts";
import { sha256Hex } from "../crypto/sha256.ts";
import {
  DatasetValidator,
  type DatasetValidatorOptions,
  type ValidationSummary,
} from "../pipeline/mod.ts";

/** What the checks found in a dataset that passed them. */
export interface CheckedDataset {
  summary: ValidationSummary;
  /** SHA-256 of every byte, hex. */
  sha256: string;
}

/** Bodies up to this size are hashed at the end, in TypeScript (one call, no Buffers). */
const SMALL_HASH_BYTES = 16 * 1024;

/**
 * SHA-256 of a body seen chunk by chunk: a small body is kept and hashed at once by `sha256Hex`
 * (a microsecond or two; each `node:crypto` call costs several under Deno), a larger one streams
 * through `node:crypto`, faster per byte.
 */
class BodyHash {
  #small: Uint8Array | null = new Uint8Array(0);
  #stream: ReturnType<typeof createHash> | null = null;

  update(chunk: Uint8Array): void {
    const small = this.#small;
    if (small !== null && small.length + chunk.length <= SMALL_HASH_BYTES) {
      const joined = new Uint8Array(small.length + chunk.length);
      joined.set(small);
      joined.set(chunk, small.length);
      this.#small = joined;
      return;
    }
    if (this.#stream === null) {
      this.#stream = createHash("sha256");
      if (small !== null && small.length > 0) this.#stream.update(small);
      this.#small = null;
    }
    this.#stream.update(chunk);
  }

  digest(): string {
    return this.#stream === null ? sha256Hex(this.#small!) : this.#stream.digest("hex");
  }
}

/**
 * The checks and the hash of the bytes a stage sees (see the module's documentation): `result`
 * rejects with the error that ended the stage, and never causes an unhandled rejection by itself.
 */
export function datasetChecks(
  options: DatasetValidatorOptions = {},
): { hooks: ByteStageHooks; result: Promise<CheckedDataset> } {
  const validator = new DatasetValidator(options);
  const hash = new BodyHash();
  const { promise, resolve, reject } = Promise.withResolvers<CheckedDataset>();
  promise.catch(() => {});
  return {
    hooks: {
      see(bytes) {
        validator.push(bytes);
        hash.update(bytes);
      },
      end() {
        resolve({ summary: validator.finish(), sha256: hash.digest() });
      },
      stop: reject,
    },
    result: promise,
  };
}
