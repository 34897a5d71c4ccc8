/**
 * SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104) in plain TypeScript, for the short messages
 * signed and hashed on every request (API key lookups, upload URLs, SigV4). Under Deno each
 * `node:crypto` call crosses into Rust and builds Buffers: a few microseconds per HMAC, more than
 * the rest of the initiate route together. Here an HMAC of a ~100-byte message is three block
 * compressions in the JIT, with the padded key's states computed once. Long inputs (uploaded
 * files) still go through `node:crypto`, which is faster per byte.
 */

const K = new Int32Array([
  0x428a2f98,
  0x71374491,
  0xb5c0fbcf,
  0xe9b5dba5,
  0x3956c25b,
  0x59f111f1,
  0x923f82a4,
  0xab1c5ed5,
  0xd807aa98,
  0x12835b01,
  0x243185be,
  0x550c7dc3,
  0x72be5d74,
  0x80deb1fe,
  0x9bdc06a7,
  0xc19bf174,
  0xe49b69c1,
  0xefbe4786,
  0x0fc19dc6,
  0x240ca1cc,
  0x2de92c6f,
  0x4a7484aa,
  0x5cb0a9dc,
  0x76f988da,
  0x983e5152,
  0xa831c66d,
  0xb00327c8,
  0xbf597fc7,
  0xc6e00bf3,
  0xd5a79147,
  0x06ca6351,
  0x14292967,
  0x27b70a85,
  0x2e1b2138,
  0x4d2c6dfc,
  0x53380d13,
  0x650a7354,
  0x766a0abb,
  0x81c2c92e,
  0x92722c85,
  0xa2bfe8a1,
  0xa81a664b,
  0xc24b8b70,
  0xc76c51a3,
  0xd192e819,
  0xd6990624,
  0xf40e3585,
  0x106aa070,
  0x19a4c116,
  0x1e376c08,
  0x2748774c,
  0x34b0bcb5,
  0x391c0cb3,
  0x4ed8aa4a,
  0x5b9cca4f,
  0x682e6ff3,
  0x748f82ee,
  0x78a5636f,
  0x84c87814,
  0x8cc70208,
  0x90befffa,
  0xa4506ceb,
  0xbef9a3f7,
  0xc67178f2,
]);

const INITIAL = new Int32Array([
  0x6a09e667,
  0xbb67ae85,
  0x3c6ef372,
  0xa54ff53a,
  0x510e527f,
  0x9b05688c,
  0x1f83d9ab,
  0x5be0cd19,
]);

const BLOCK = 64;
/** The message schedule, shared: the functions here never run concurrently on one thread. */
const W = new Int32Array(64);
const encoder = new TextEncoder();

/** Folds the 64-byte block at `at` of `data` into `state`. */
function compress(state: Int32Array, data: Uint8Array, at: number): void {
  for (let i = 0; i < 16; i++, at += 4) {
    W[i] = (data[at] << 24) | (data[at + 1] << 16) | (data[at + 2] << 8) | data[at + 3];
  }
  for (let i = 16; i < 64; i++) {
    const w15 = W[i - 15];
    const w2 = W[i - 2];
    const s0 = ((w15 >>> 7) | (w15 << 25)) ^ ((w15 >>> 18) | (w15 << 14)) ^ (w15 >>> 3);
    const s1 = ((w2 >>> 17) | (w2 << 15)) ^ ((w2 >>> 19) | (w2 << 13)) ^ (w2 >>> 10);
    W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
  }
  let a = state[0], b = state[1], c = state[2], d = state[3];
  let e = state[4], f = state[5], g = state[6], h = state[7];
  for (let i = 0; i < 64; i++) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const ch = (e & f) ^ (~e & g);
    const t1 = (h + S1 + ch + K[i] + W[i]) | 0;
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const maj = (a & b) ^ (a & c) ^ (b & c);
    const t2 = (S0 + maj) | 0;
    h = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  state[0] = (state[0] + a) | 0;
  state[1] = (state[1] + b) | 0;
  state[2] = (state[2] + c) | 0;
  state[3] = (state[3] + d) | 0;
  state[4] = (state[4] + e) | 0;
  state[5] = (state[5] + f) | 0;
  state[6] = (state[6] + g) | 0;
  state[7] = (state[7] + h) | 0;
}

/** Reused for the last block or two of every message, and for strings turned into bytes. */
const TAIL = new Uint8Array(2 * BLOCK);
let scratch = new Uint8Array(1024);

/**
 * Hashes the first `length` bytes of `data` into `state`, which already holds `before` bytes
 * (whole blocks) of the message; the digest is left in `state`.
 */
function finish(state: Int32Array, data: Uint8Array, length: number, before: number): void {
  let at = 0;
  for (; at + BLOCK <= length; at += BLOCK) compress(state, data, at);
  // The tail, the 0x80 marker and the bit length: one block, or two when the tail is long.
  const rest = length - at;
  const end = rest < 56 ? BLOCK : 2 * BLOCK;
  for (let i = 0; i < rest; i++) TAIL[i] = data[at + i];
  TAIL[rest] = 0x80;
  TAIL.fill(0, rest + 1, end - 8);
  const bits = (before + length) * 8;
  const high = Math.floor(bits / 0x100000000);
  TAIL[end - 8] = high >>> 24;
  TAIL[end - 7] = high >>> 16;
  TAIL[end - 6] = high >>> 8;
  TAIL[end - 5] = high;
  TAIL[end - 4] = bits >>> 24;
  TAIL[end - 3] = bits >>> 16;
  TAIL[end - 2] = bits >>> 8;
  TAIL[end - 1] = bits;
  compress(state, TAIL, 0);
  if (end > BLOCK) compress(state, TAIL, BLOCK);
}

function wordsToBytes(state: Int32Array, out: Uint8Array): Uint8Array {
  for (let i = 0; i < 8; i++) {
    const word = state[i];
    out[i * 4] = word >>> 24;
    out[i * 4 + 1] = word >>> 16;
    out[i * 4 + 2] = word >>> 8;
    out[i * 4 + 3] = word;
  }
  return out;
}

/** The working state of the function running now (they never run concurrently on one thread). */
const STATE = new Int32Array(8);
/** Bytes of the last `bytesOf` result. */
let byteCount = 0;

/**
 * The UTF-8 bytes of `message` (their count in `byteCount`): a shared buffer for strings, valid
 * until the next call.
 */
function bytesOf(message: string | Uint8Array): Uint8Array {
  if (typeof message !== "string") {
    byteCount = message.length;
    return message;
  }
  // At most three bytes per UTF-16 unit.
  if (scratch.length < message.length * 3) scratch = new Uint8Array(message.length * 3);
  byteCount = encoder.encodeInto(message, scratch).written;
  return scratch;
}

/** SHA-256 of `message` (a string is hashed as UTF-8). */
export function sha256(message: string | Uint8Array): Uint8Array {
  STATE.set(INITIAL);
  const bytes = bytesOf(message);
  finish(STATE, bytes, byteCount, 0);
  return wordsToBytes(STATE, new Uint8Array(32));
}

/** SHA-256 of `message` as lowercase hex, without building the digest's bytes. */
export function sha256Hex(message: string | Uint8Array): string {
  STATE.set(INITIAL);
  const bytes = bytesOf(message);
  finish(STATE, bytes, byteCount, 0);
  return stateHex(STATE);
}

function stateHex(state: Int32Array): string {
  let out = "";
  for (let i = 0; i < 8; i++) out += wordHex(state[i]);
  return out;
}

function wordHex(word: number): string {
  return HEX[word >>> 24] + HEX[(word >>> 16) & 255] + HEX[(word >>> 8) & 255] + HEX[word & 255];
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

export function toHex(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i++) out += HEX[bytes[i]];
  return out;
}

const BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/** Base64url without padding (RFC 4648 section 5). */
export function toBase64Url(bytes: Uint8Array): string {
  let out = "";
  let i = 0;
  for (; i + 3 <= bytes.length; i += 3) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    out += BASE64URL[n >>> 18] + BASE64URL[(n >>> 12) & 63] + BASE64URL[(n >>> 6) & 63] +
      BASE64URL[n & 63];
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i] << 16;
    out += BASE64URL[n >>> 18] + BASE64URL[(n >>> 12) & 63];
  } else if (rest === 2) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8);
    out += BASE64URL[n >>> 18] + BASE64URL[(n >>> 12) & 63] + BASE64URL[(n >>> 6) & 63];
  }
  return out;
}

/** The inner digest of an HMAC, before the outer hash reads it. */
const TAIL_DIGEST = new Uint8Array(32);

/** HMAC-SHA256 with one key: the states after the padded key's block are computed once. */
export class HmacSha256 {
  #inner: Int32Array;
  #outer: Int32Array;

  constructor(key: Uint8Array | string) {
    let k = typeof key === "string" ? encoder.encode(key) : key;
    if (k.length > BLOCK) k = sha256(k);
    const pad = new Uint8Array(BLOCK);
    pad.fill(0x36);
    for (let i = 0; i < k.length; i++) pad[i] ^= k[i];
    this.#inner = INITIAL.slice();
    compress(this.#inner, pad, 0);
    pad.fill(0x5c);
    for (let i = 0; i < k.length; i++) pad[i] ^= k[i];
    this.#outer = INITIAL.slice();
    compress(this.#outer, pad, 0);
  }

  /** Leaves the MAC of `message` in `STATE`. */
  #mac(message: string | Uint8Array): void {
    STATE.set(this.#inner);
    const bytes = bytesOf(message);
    finish(STATE, bytes, byteCount, BLOCK);
    const inner = wordsToBytes(STATE, TAIL_DIGEST);
    STATE.set(this.#outer);
    finish(STATE, inner, 32, BLOCK);
  }

  /** The MAC of `message` (a string is signed as UTF-8), 32 bytes. */
  digest(message: string | Uint8Array): Uint8Array {
    this.#mac(message);
    return wordsToBytes(STATE, new Uint8Array(32));
  }

  /** The MAC as lowercase hex. */
  hex(message: string | Uint8Array): string {
    this.#mac(message);
    return stateHex(STATE);
  }

  /** The MAC as unpadded base64url. */
  base64Url(message: string | Uint8Array): string {
    this.#mac(message);
    return toBase64Url(wordsToBytes(STATE, DIGEST_OUT));
  }
}

/** Where `base64Url` puts the digest before encoding it. */
const DIGEST_OUT = new Uint8Array(32);

/** One-shot HMAC-SHA256. */
export function hmacSha256(key: Uint8Array | string, message: string | Uint8Array): Uint8Array {
  return new HmacSha256(key).digest(message);
}
