/**
 * Fault-injection helpers for the reliability tests: a seeded random source, a loopback TCP
 * proxy that cuts, refuses or swallows connections, an object store wrapper that fails on
 * demand, raw HTTP exchanges over `Deno.connect`, and small probes (temporary files, peak RSS).
 * Everything listens on and connects to 127.0.0.1 only.
 */
import type {
  ListOptions,
  ListPage,
  ObjectInfo,
  ObjectStore,
  ObjectWriter,
  PresignOptions,
} from "../src/storage/object_store.ts";
import { StorageError } from "../src/storage/object_store.ts";

// ---------------------------------------------------------------------------------------------
// Seeded randomness

/** A small deterministic random source (mulberry32): the same seed gives the same sequence. */
export class Rng {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    let t = (this.#state = (this.#state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** A whole number in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** A whole number in [min, max]. */
  range(min: number, max: number): number {
    return min + this.int(max - min + 1);
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)];
  }

  bytes(n: number): Uint8Array<ArrayBuffer> {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = this.int(256);
    return out;
  }
}

// ---------------------------------------------------------------------------------------------
// Waiting and probing

/** Polls `fn` until it answers a truthy value; throws naming `what` after `timeoutMs`. */
export async function waitFor<T>(
  fn: () => Promise<T | null | undefined | false> | T | null | undefined | false,
  what = "condition",
  timeoutMs = 10_000,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (true) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Every file under `dir`, as paths relative to it, sorted; `[]` when `dir` does not exist. */
export async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (path: string, prefix: string) => {
    let entries: Deno.DirEntry[];
    try {
      entries = await Array.fromAsync(Deno.readDir(path));
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return;
      throw error;
    }
    for (const entry of entries) {
      const rel = prefix + entry.name;
      if (entry.isDirectory) await walk(`${path}/${entry.name}`, `${rel}/`);
      else out.push(rel);
    }
  };
  await walk(dir, "");
  return out.sort();
}

/** The local driver's temporary files (`{dataDir}/tmp`). */
export function tmpFiles(dataDir: string): Promise<string[]> {
  return listFiles(`${dataDir}/tmp`);
}

/** Peak resident set size of a process in bytes (`VmHWM` of /proc/PID/status); null if unknown. */
export async function peakRssBytes(pid: number): Promise<number | null> {
  try {
    const status = await Deno.readTextFile(`/proc/${pid}/status`);
    const m = /^VmHWM:\s+(\d+)\s+kB$/m.exec(status);
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** SHA-256 of bytes, hex. */
export async function sha256Hex(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** True when `haystack` contains the bytes of `needle`. */
export function containsBytes(haystack: Uint8Array, needle: Uint8Array): boolean {
  if (needle.length === 0) return true;
  const first = needle[0];
  let i = haystack.indexOf(first);
  while (i >= 0 && i + needle.length <= haystack.length) {
    let j = 1;
    while (j < needle.length && haystack[i + j] === needle[j]) j++;
    if (j === needle.length) return true;
    i = haystack.indexOf(first, i + 1);
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Raw HTTP over TCP

export interface RawResult {
  /** The status of the response, or null when the connection closed without one. */
  status: number | null;
  /** The response head (status line and headers), lower-cased header names not applied. */
  head: string;
  body: string;
  /** The server closed the connection. */
  closed: boolean;
  /** Nothing more arrived within the time limit. */
  timedOut: boolean;
}

/**
 * Sends `request` (bytes, or a function writing to the connection) to 127.0.0.1:`port` and reads
 * one response: until a complete response (by `Content-Length`), the connection closes, or
 * `timeoutMs` passes. Never throws for resets: a reset counts as closed.
 */
export async function rawExchange(
  port: number,
  request: Uint8Array | string | ((conn: Deno.TcpConn) => Promise<void>),
  timeoutMs = 5_000,
): Promise<RawResult> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    return await exchangeOn(conn, request, timeoutMs);
  } finally {
    try {
      conn.close();
    } catch { /* already closed */ }
  }
}

/** `rawExchange` on a connection the caller opened and keeps (for the requests after). */
export async function exchangeOn(
  conn: Deno.TcpConn,
  request: Uint8Array | string | ((conn: Deno.TcpConn) => Promise<void>),
  timeoutMs = 5_000,
): Promise<RawResult> {
  const result: RawResult = { status: null, head: "", body: "", closed: false, timedOut: false };
  try {
    if (typeof request === "function") await request(conn);
    else {
      const bytes = typeof request === "string" ? new TextEncoder().encode(request) : request;
      let offset = 0;
      while (offset < bytes.length) offset += await conn.write(bytes.subarray(offset));
    }
  } catch {
    // The server may close while we still write (a refused, oversize request).
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  const buf = new Uint8Array(64 * 1024);
  const deadline = Date.now() + timeoutMs;
  let timer: ReturnType<typeof setTimeout> | undefined;
  while (true) {
    const left = deadline - Date.now();
    if (left <= 0) {
      result.timedOut = true;
      break;
    }
    let n: number | null;
    try {
      const outcome = await Promise.race([
        conn.read(buf),
        new Promise<"timeout">((r) => timer = setTimeout(() => r("timeout"), left)),
      ]);
      if (outcome === "timeout") {
        result.timedOut = true;
        break;
      }
      n = outcome;
    } catch {
      result.closed = true;
      break;
    } finally {
      clearTimeout(timer);
    }
    if (n === null) {
      result.closed = true;
      break;
    }
    chunks.push(buf.slice(0, n));
    total += n;
    const text = new TextDecoder().decode(concat(chunks, total));
    const end = text.indexOf("\r\n\r\n");
    if (end >= 0) {
      const head = text.slice(0, end);
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
      const body = text.slice(end + 4);
      if (length && new TextEncoder().encode(body).length >= Number(length[1])) {
        result.head = head;
        result.body = body;
        break;
      }
    }
  }
  const text = new TextDecoder().decode(concat(chunks, total));
  const end = text.indexOf("\r\n\r\n");
  result.head = end >= 0 ? text.slice(0, end) : text;
  result.body = end >= 0 ? text.slice(end + 4) : "";
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(result.head);
  result.status = status ? Number(status[1]) : null;
  return result;
}

function concat(chunks: Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.length;
  }
  return out;
}

/** Writes all of `bytes` to a connection. */
export async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < bytes.length) offset += await conn.write(bytes.subarray(offset));
}

/**
 * Writes the head of an upload and `sent` bytes of `body` to a raw connection, then closes it.
 * `chunked` frames the body in chunks of random sizes (and may stop inside a chunk's framing).
 */
export async function abandonUpload(
  port: number,
  apiKey: string,
  experimentId: string,
  body: Uint8Array,
  sent: number,
  chunked: boolean,
  rng: Rng,
): Promise<void> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    const head = `POST /api/v1/datasets/upload/?experiment_id=${experimentId} HTTP/1.1\r\n` +
      `Host: 127.0.0.1\r\nAuthorization: Bearer ${apiKey}\r\nContent-Type: text/csv\r\n` +
      (chunked ? "Transfer-Encoding: chunked\r\n" : `Content-Length: ${body.length}\r\n`) + "\r\n";
    await writeAll(conn, new TextEncoder().encode(head));
    let offset = 0;
    while (offset < sent) {
      const n = Math.min(sent - offset, 1 + rng.int(512 * 1024));
      const piece = body.subarray(offset, offset + n);
      if (chunked) {
        await writeAll(conn, new TextEncoder().encode(`${n.toString(16)}\r\n`));
        await writeAll(conn, piece);
        if (offset + n < sent || rng.int(2) === 0) {
          await writeAll(conn, new TextEncoder().encode("\r\n"));
        }
      } else {
        await writeAll(conn, piece);
      }
      offset += n;
    }
    // Let the server read what was sent before the connection goes.
    await new Promise((r) => setTimeout(r, rng.int(50)));
  } catch {
    // The server may have answered and closed first (a refused body).
  } finally {
    conn.close();
  }
}

// ---------------------------------------------------------------------------------------------
// A loopback TCP proxy that fails on demand

/**
 * `pass` forwards; `cut` forwards until a connection sent `cutAfterBytes` upstream, then closes
 * both sides; `refuse` closes every new connection at once; `blackhole` accepts and reads but
 * never forwards nor answers.
 */
export type ProxyMode = "pass" | "cut" | "refuse" | "blackhole";

export interface FaultProxy {
  port: number;
  /** `http://127.0.0.1:{port}` */
  endpoint: string;
  mode: ProxyMode;
  /** Bytes a connection may send upstream before a `cut`. */
  cutAfterBytes: number;
  /** When set, answers flow back to clients at most this fast (a slow storage to read from). */
  downBytesPerSecond: number | null;
  /**
   * Request heads (request line and headers) seen going upstream, in order, while `recordHeads`
   * is on: lets a test check what the service sends to the storage.
   */
  readonly heads: string[];
  recordHeads: boolean;
  /** Connections accepted, and connections cut, refused or swallowed. */
  readonly stats: { accepted: number; cut: number; refused: number; swallowed: number };
  /**
   * Switches the mode and closes every open connection, so that pooled keep-alive connections
   * cannot carry on in the old mode: the next request connects anew.
   */
  setMode(mode: ProxyMode, cutAfterBytes?: number): void;
  close(): Promise<void>;
}

export function startFaultProxy(
  targetPort: number,
  options: { mode?: ProxyMode; cutAfterBytes?: number } = {},
): FaultProxy {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const open = new Set<Deno.Conn>();
  const tasks = new Set<Promise<void>>();
  const stats = { accepted: 0, cut: 0, refused: 0, swallowed: 0 };
  const closeConn = (conn: Deno.Conn) => {
    if (!open.delete(conn)) return;
    try {
      conn.close();
    } catch { /* already closed */ }
  };
  const proxy: FaultProxy = {
    port,
    endpoint: `http://127.0.0.1:${port}`,
    mode: options.mode ?? "pass",
    cutAfterBytes: options.cutAfterBytes ?? 64 * 1024,
    downBytesPerSecond: null,
    heads: [],
    recordHeads: false,
    stats,
    setMode(mode: ProxyMode, cutAfterBytes?: number) {
      proxy.mode = mode;
      if (cutAfterBytes !== undefined) proxy.cutAfterBytes = cutAfterBytes;
      for (const conn of [...open]) closeConn(conn);
    },
    async close() {
      listener.close();
      for (const conn of [...open]) closeConn(conn);
      await accepting;
      while (tasks.size > 0) await Promise.allSettled([...tasks]);
    },
  };

  const handle = async (client: Deno.Conn) => {
    open.add(client);
    stats.accepted++;
    const mode = proxy.mode;
    if (mode === "refuse") {
      stats.refused++;
      closeConn(client);
      return;
    }
    const buf = new Uint8Array(32 * 1024);
    if (mode === "blackhole") {
      stats.swallowed++;
      try {
        while ((await client.read(buf)) !== null) { /* swallow */ }
      } catch { /* closed */ }
      closeConn(client);
      return;
    }
    let upstream: Deno.Conn;
    try {
      upstream = await Deno.connect({ hostname: "127.0.0.1", port: targetPort });
    } catch {
      closeConn(client);
      return;
    }
    open.add(upstream);
    const limit = mode === "cut" ? proxy.cutAfterBytes : Infinity;
    // Request heads start a connection or follow a blank line; body bytes in between are skipped
    // by scanning for an HTTP method at the start of a line after a head ended.
    let pendingText = "";
    const recordHeads = (bytes: Uint8Array) => {
      pendingText += new TextDecoder("latin1").decode(bytes);
      const re =
        /(?:^|\r\n)((?:GET|PUT|POST|HEAD|DELETE) \S+ HTTP\/1\.1\r\n(?:[^\r\n]+\r\n)*)\r\n/g;
      let last = 0;
      for (const m of pendingText.matchAll(re)) {
        proxy.heads.push(m[1]);
        last = m.index! + m[0].length;
      }
      // Keep a tail that may hold the start of a head cut by this read.
      pendingText = pendingText.slice(Math.max(last, pendingText.length - 16 * 1024));
    };
    let sent = 0;
    const up = (async () => {
      try {
        while (true) {
          const n = await client.read(buf);
          if (n === null) break;
          if (sent + n > limit) {
            const rest = Math.max(0, limit - sent);
            if (rest > 0) await writeAll(upstream, buf.subarray(0, rest));
            stats.cut++;
            break;
          }
          sent += n;
          if (proxy.recordHeads) recordHeads(buf.subarray(0, n));
          await writeAll(upstream, buf.subarray(0, n));
        }
      } catch { /* either side closed */ }
      closeConn(client);
      closeConn(upstream);
    })();
    const down = (async () => {
      const back = new Uint8Array(32 * 1024);
      try {
        while (true) {
          const rate = proxy.downBytesPerSecond;
          const n = await upstream.read(rate ? back.subarray(0, 4096) : back);
          if (n === null) break;
          await writeAll(client, back.subarray(0, n));
          if (rate) await new Promise((r) => setTimeout(r, (n / rate) * 1000));
        }
      } catch { /* either side closed */ }
      closeConn(client);
      closeConn(upstream);
    })();
    await Promise.allSettled([up, down]);
  };

  const accepting = (async () => {
    try {
      for await (const conn of listener) {
        const task = handle(conn).finally(() => tasks.delete(task));
        tasks.add(task);
      }
    } catch { /* listener closed */ }
  })();
  return proxy;
}

// ---------------------------------------------------------------------------------------------
// An object store that fails on demand

export type StoreOperation =
  | "createWriter"
  | "write"
  | "commit"
  | "head"
  | "get"
  | "delete"
  | "list"
  | "presignPut"
  | "sweep";

/**
 * Wraps a store; `failNext(op, n)` makes the next `n` calls of `op` throw a `StorageError`
 * (or the given error). `calls` counts every call per operation.
 */
export class FaultyStore implements ObjectStore {
  readonly inner: ObjectStore;
  readonly calls = new Map<StoreOperation, number>();
  #failures = new Map<StoreOperation, { left: number; error: () => unknown }>();

  constructor(inner: ObjectStore) {
    this.inner = inner;
  }

  get driver() {
    return this.inner.driver;
  }

  get bucket() {
    return this.inner.bucket;
  }

  failNext(op: StoreOperation, times = 1, error?: () => unknown): void {
    this.#failures.set(op, {
      left: times,
      error: error ?? (() => new StorageError(`injected ${op} failure`)),
    });
  }

  /** Injected failures of `op` not yet used. */
  pending(op: StoreOperation): number {
    return this.#failures.get(op)?.left ?? 0;
  }

  #enter(op: StoreOperation): void {
    this.calls.set(op, (this.calls.get(op) ?? 0) + 1);
    const failure = this.#failures.get(op);
    if (failure && failure.left > 0) {
      failure.left--;
      throw failure.error();
    }
  }

  open(): Promise<void> {
    return this.inner.open();
  }

  async createWriter(key: string): Promise<ObjectWriter> {
    this.#enter("createWriter");
    const writer = await this.inner.createWriter(key);
    return {
      write: async (chunk) => {
        try {
          this.#enter("write");
        } catch (error) {
          await writer.abort();
          throw error;
        }
        return writer.write(chunk);
      },
      commit: async () => {
        try {
          this.#enter("commit");
        } catch (error) {
          await writer.abort();
          throw error;
        }
        return writer.commit();
      },
      abort: () => writer.abort(),
    };
  }

  async head(key: string): Promise<ObjectInfo | null> {
    this.#enter("head");
    return await this.inner.head(key);
  }

  async get(key: string) {
    this.#enter("get");
    return await this.inner.get(key);
  }

  async delete(key: string): Promise<void> {
    this.#enter("delete");
    return await this.inner.delete(key);
  }

  async list(prefix: string, options?: ListOptions): Promise<ListPage> {
    this.#enter("list");
    return await this.inner.list(prefix, options);
  }

  async presignPut(key: string, options: PresignOptions): Promise<string> {
    this.#enter("presignPut");
    return await this.inner.presignPut(key, options);
  }

  async sweep(): Promise<number> {
    this.#enter("sweep");
    return await this.inner.sweep();
  }
}
