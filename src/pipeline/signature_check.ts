import { ValidationError } from "./validation_error.ts";

/** A file signature: `bytes` at `offset`, `-1` matching any byte. */
export interface Signature {
  /** What the bytes announce, as named in the error message. */
  name: string;
  /** `archive_detected` for archives and compressed streams, `binary_content` for the rest. */
  code: "archive_detected" | "binary_content";
  offset: number;
  bytes: readonly number[];
}

const ANY = -1;

function archive(name: string, bytes: number[], offset = 0): Signature {
  return { name, code: "archive_detected", offset, bytes };
}

function encoding(name: string, bytes: number[]): Signature {
  return { name, code: "binary_content", offset: 0, bytes };
}

/**
 * The signatures refused at the start of an upload. Where one signature starts another (the
 * UTF-32 LE and UTF-16 LE byte order marks), the longer comes first.
 */
export const SIGNATURES: readonly Signature[] = [
  archive("ZIP", [0x50, 0x4b, 0x03, 0x04]),
  archive("ZIP", [0x50, 0x4b, 0x05, 0x06]),
  archive("ZIP", [0x50, 0x4b, 0x07, 0x08]),
  archive("GZIP", [0x1f, 0x8b]),
  archive("RAR", [0x52, 0x61, 0x72, 0x21, 0x1a, 0x07, 0x01, 0x00]),
  archive("RAR", [0x52, 0x61, 0x72, 0x21, 0x1a, 0x07, 0x00]),
  archive("7z", [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c]),
  archive("bzip2", [0x42, 0x5a, 0x68, ANY, 0x31, 0x41, 0x59, 0x26, 0x53, 0x59]),
  archive("bzip2", [0x42, 0x5a, 0x68, ANY, 0x17, 0x72, 0x45, 0x38, 0x50, 0x90]),
  archive("xz", [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]),
  archive("Zstandard", [0x28, 0xb5, 0x2f, 0xfd]),
  encoding("UTF-32 LE", [0xff, 0xfe, 0x00, 0x00]),
  encoding("UTF-32 BE", [0x00, 0x00, 0xfe, 0xff]),
  encoding("UTF-16 LE", [0xff, 0xfe]),
  encoding("UTF-16 BE", [0xfe, 0xff]),
  // tar's magic at offset 257 with the byte(s) that end it: POSIX `ustar\0`, GNU `ustar  \0`.
  // Its NUL keeps text that merely holds "ustar" there (a cell "mustard") from matching.
  archive("tar", [0x75, 0x73, 0x74, 0x61, 0x72, 0x20, 0x20, 0x00], 257),
  archive("tar", [0x75, 0x73, 0x74, 0x61, 0x72, 0x00], 257),
];

/** Bytes needed to rule out every signature: the end of GNU tar's `ustar  \0` at offset 257. */
export const SIGNATURE_BYTES = 265;

const MATCH = 0;
const MISMATCH = 1;
const INCOMPLETE = 2;

function compare(signature: Signature, prefix: Uint8Array): number {
  const { offset, bytes } = signature;
  const end = Math.min(prefix.length, offset + bytes.length);
  for (let i = offset; i < end; i++) {
    const want = bytes[i - offset];
    if (want !== ANY && prefix[i] !== want) return MISMATCH;
  }
  return end === offset + bytes.length ? MATCH : INCOMPLETE;
}

/**
 * Finds the signature the first bytes of an upload carry. Answers `null` when none can match,
 * `undefined` when more bytes are needed to decide. With `final`, the prefix is the whole input
 * and the answer is never `undefined`.
 */
export function detectSignature(
  prefix: Uint8Array,
  final = false,
): Signature | null | undefined {
  let undecided = false;
  for (const signature of SIGNATURES) {
    const result = compare(signature, prefix);
    // A longer signature that may still match hides the shorter ones sharing its start.
    if (result === MATCH && !undecided) return signature;
    if (result === INCOMPLETE && !final) undecided = true;
  }
  return undecided ? undefined : null;
}

/** The error a detected signature answers with. */
export function signatureError(signature: Signature): ValidationError {
  const message = signature.code === "archive_detected"
    ? `${signature.name} archive detected: send the raw CSV bytes, not an archive`
    : `${signature.name} byte order mark detected: send the CSV encoded as UTF-8`;
  return new ValidationError(signature.code, message);
}

/**
 * Refuses archives and non-UTF-8 encodings by the signature in the first bytes, however the
 * bytes are split into chunks. A first chunk of at least `SIGNATURE_BYTES` is checked in place;
 * shorter first chunks are held (at most `SIGNATURE_BYTES` copied) until the decision.
 */
export class SignatureCheck {
  #held = new Uint8Array(SIGNATURE_BYTES);
  #length = 0;
  #done = false;

  /** True once the first bytes passed. */
  get done(): boolean {
    return this.#done;
  }

  /** The bytes held back before the decision; pass them on before the rest of the chunk. */
  get held(): Uint8Array {
    return this.#held.subarray(0, this.#length);
  }

  /**
   * Looks at the next chunk. Throws a `ValidationError` on a signature. Answers `-1` while
   * undecided (the chunk is held), otherwise the index in `chunk` where the unheld bytes start:
   * pass `held` on first, then `chunk` from that index.
   */
  push(chunk: Uint8Array): number {
    if (this.#done) return 0;
    if (this.#length === 0 && chunk.length >= SIGNATURE_BYTES) {
      this.#decide(chunk, true);
      return 0;
    }
    const taken = Math.min(chunk.length, SIGNATURE_BYTES - this.#length);
    this.#held.set(chunk.subarray(0, taken), this.#length);
    this.#length += taken;
    return this.#decide(this.held, this.#length === SIGNATURE_BYTES) ? taken : -1;
  }

  /** End of input: decides on what was held; answers the held bytes to pass on. */
  finish(): Uint8Array {
    if (!this.#done) this.#decide(this.held, true);
    return this.held;
  }

  #decide(prefix: Uint8Array, final: boolean): boolean {
    const signature = detectSignature(prefix, final);
    if (signature) throw signatureError(signature);
    if (signature === undefined) return false;
    this.#done = true;
    return true;
  }
}
