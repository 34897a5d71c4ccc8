/**
 * The narrow storage interface the HTTP layer and the jobs see. Drivers: `local_store.ts`
 * (the embedded default, files under `{ABN_DATA_DIR}/storage`) and `s3_store.ts`
 * (any S3-compatible service).
 */
import type { ByteSource } from "../byte_source.ts";

/** What the store knows of one stored object. */
export interface ObjectInfo {
  key: string;
  size: number;
  /** Changes whenever the content is replaced. */
  etag: string;
  lastModified: Date;
}

/**
 * A pending object. Bytes written are invisible until `commit()` resolves; `abort()` discards
 * them and leaves any previous object under the same key exactly as it was.
 */
export interface ObjectWriter {
  /**
   * Appends bytes; resolves when the store can take more (backpressure). The caller may reuse
   * `chunk` once the promise resolves: a driver that needs the bytes longer copies them.
   */
  write(chunk: Uint8Array): Promise<void>;
  /** Makes the object visible atomically and answers its info. */
  commit(): Promise<ObjectInfo>;
  /** Discards what was written. Safe to call more than once and after a failed commit. */
  abort(): Promise<void>;
}

/**
 * `writer` as the last stage of a stream pipeline: each chunk goes to `write` (its backpressure
 * is the stream's). Closing the stream commits nothing: the caller commits once every check of
 * the bytes passed, or aborts the writer.
 */
export function objectWritable(writer: ObjectWriter): WritableStream<Uint8Array> {
  return new WritableStream<Uint8Array>({ write: (chunk) => writer.write(chunk) });
}

/**
 * Writes `source` to `writer` and answers the bytes written; commits nothing (the caller commits
 * once every check of the bytes passed, or aborts the writer). The source is read into two
 * buffers of `bufferBytes` that take turns: one is written while the other fills, and each is
 * filled again once its write ended (the contract of `ObjectWriter.write`).
 */
export async function writeBody(
  source: ByteSource,
  writer: ObjectWriter,
  bufferBytes: number,
): Promise<number> {
  const buffers: (ArrayBuffer | null)[] = [null, null];
  let writing: Promise<void> | null = null;
  let total = 0;
  try {
    for (let turn = 0, done = false; !done; turn ^= 1) {
      let buffer = buffers[turn] ?? new ArrayBuffer(bufferBytes);
      let filled = 0;
      while (filled < bufferBytes && !done) {
        const read = await source.read(new Uint8Array(buffer, filled, bufferBytes - filled));
        buffer = read.bytes.buffer as ArrayBuffer; // the same, or where a BYOB read moved it
        done = read.done;
        filled += read.bytes.length;
      }
      buffers[turn] = buffer;
      await writing; // the other buffer's
      writing = filled > 0 ? writer.write(new Uint8Array(buffer, 0, filled)) : null;
      writing?.catch(() => {}); // awaited at the next turn
      total += filled;
    }
    await writing;
    return total;
  } catch (error) {
    await source.cancel(error).catch(() => {});
    await writing?.catch(() => {});
    throw error;
  }
}

export interface ListOptions {
  /** Most objects to answer; default 1000. */
  limit?: number;
  /** Opaque cursor from a previous page's `nextCursor`. */
  cursor?: string | null;
  /** Without a cursor: start after this key (exclusive). */
  startAfter?: string | null;
}

export interface ListPage {
  objects: ObjectInfo[];
  nextCursor: string | null;
}

export interface PresignOptions {
  /** Lifetime of the URL in seconds. */
  expiresInSeconds: number;
  /** When set, the URL only accepts a body of exactly this many bytes. */
  contentLength?: number;
  /**
   * The API key id that asked for the URL: the local driver binds it into the URL, so the
   * delivery's audit event names it (S3's grants record it instead).
   */
  keyId?: string;
}

export interface ObjectStore {
  readonly driver: "local" | "s3";
  /** The bucket name reported in upload grants (`"local"` for the local driver). */
  readonly bucket: string;
  /** Checks the store is usable at start-up (bucket exists or is created). */
  open(): Promise<void>;
  createWriter(key: string): Promise<ObjectWriter>;
  head(key: string): Promise<ObjectInfo | null>;
  get(key: string): Promise<{ info: ObjectInfo; body: ReadableStream<Uint8Array> } | null>;
  delete(key: string): Promise<void>;
  /** Objects whose key starts with `prefix`, in key order. */
  list(prefix: string, options?: ListOptions): Promise<ListPage>;
  /** A URL that accepts one plain `PUT` of the object without other credentials. */
  presignPut(key: string, options: PresignOptions): Promise<string>;
  /** Removes leftovers of interrupted writes (temporaries, stale multipart uploads). */
  sweep(): Promise<number>;
}

/** Thrown by drivers when the storage service fails; answered as 500 `storage_error`. */
export class StorageError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "StorageError";
  }
}

/** The storage key of an organization's dataset. */
export function datasetKey(orgId: string, experimentId: string): string {
  return `org/${orgId}/experiments/${experimentId}/latest.csv`;
}

/** The prefix under which all of an organization's datasets live. */
export function orgPrefix(orgId: string): string {
  return `org/${orgId}/experiments/`;
}

/** Parses `org/{org}/experiments/{id}/latest.csv`; null for any other key. */
export function parseDatasetKey(key: string): { orgId: string; experimentId: string } | null {
  const m = /^org\/([^/]+)\/experiments\/([A-Za-z0-9._-]{1,128})\/latest\.csv$/.exec(key);
  return m ? { orgId: m[1], experimentId: m[2] } : null;
}
