/**
 * The embedded default storage: an object with key K lives at `{dataDir}/storage/K`. Writes go
 * to a temporary file under `{dataDir}/tmp`, are fsynced and renamed into place, so an object is
 * either the previous version or the new one, never half of either.
 */
import type {
  ListOptions,
  ListPage,
  ObjectInfo,
  ObjectStore,
  ObjectWriter,
  PresignOptions,
} from "./object_store.ts";
import { sha256Hex } from "../crypto/sha256.ts";
import { StorageError } from "./object_store.ts";
import type { UrlSigner } from "../crypto/url_signer.ts";

export interface LocalStoreOptions {
  /** The data directory; objects under `storage/`, temporaries under `tmp/`. */
  dataDir: string;
  /** Signs upload URLs served by this process at `{publicUrl}/storage/{key}`. */
  signer: UrlSigner;
  /** The service's external base URL. */
  publicUrl: string;
}

/** Bytes written between two early writebacks. */
const WRITEBACK_BYTES = 16 * 1024 * 1024;

/**
 * Starts writing a file's pages to disk while the file is still being written: every 16 MiB an
 * fdatasync runs on a second descriptor, so the disk works while the upload streams and the
 * fsync at commit only waits for the last pages. A failed writeback fails the commit (after an
 * I/O error Linux may report it to one fsync only).
 */
class EarlyWriteback {
  #path: string;
  #handle: Deno.FsFile | null = null;
  #running: Promise<void> | null = null;
  #since = 0;
  #error: unknown = null;
  #closed = false;

  constructor(path: string) {
    this.#path = path;
  }

  wrote(bytes: number): void {
    this.#since += bytes;
    if (this.#since < WRITEBACK_BYTES || this.#running !== null || this.#closed) return;
    this.#since = 0;
    this.#running = this.#run().finally(() => this.#running = null);
  }

  async #run(): Promise<void> {
    try {
      this.#handle ??= await Deno.open(this.#path, { read: true });
      await this.#handle.syncData();
    } catch (error) {
      this.#error ??= error;
    }
  }

  /** Waits for a writeback in progress; throws the error of any that failed. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#running;
    try {
      this.#handle?.close();
    } catch { /* already closed */ }
    this.#handle = null;
    if (this.#error !== null) throw this.#error;
  }
}

/** Keys of safe segments only (none empty, none starting with a dot): the common case. */
const PLAIN_KEY = /^[A-Za-z0-9_~-][A-Za-z0-9._~-]*(?:\/[A-Za-z0-9_~-][A-Za-z0-9._~-]*)*$/;

function checkKey(key: string): void {
  if (PLAIN_KEY.test(key)) return;
  if (
    key === "" || key.startsWith("/") || key.includes("\\") || key.includes("\0") ||
    key.split("/").some((part) => part === "" || part === "." || part === "..")
  ) {
    throw new TypeError(`Invalid storage key: ${JSON.stringify(key)}`);
  }
}

function etagOf(stat: Deno.FileInfo): string {
  const basis = `${stat.size}:${stat.mtime?.getTime() ?? 0}:${stat.ino ?? 0}:${stat.dev}`;
  return sha256Hex(basis).slice(0, 32);
}

export class LocalStore implements ObjectStore {
  readonly driver = "local" as const;
  readonly bucket = "local";
  readonly root: string;
  readonly tmpDir: string;
  #signer: UrlSigner;
  #publicUrl: string;
  #open = new Set<string>();

  constructor(options: LocalStoreOptions) {
    this.root = `${options.dataDir}/storage`;
    this.tmpDir = `${options.dataDir}/tmp`;
    this.#signer = options.signer;
    this.#publicUrl = options.publicUrl;
  }

  async open(): Promise<void> {
    await Deno.mkdir(this.root, { recursive: true });
    await Deno.mkdir(this.tmpDir, { recursive: true });
  }

  pathOf(key: string): string {
    checkKey(key);
    return `${this.root}/${key}`;
  }

  async createWriter(key: string): Promise<ObjectWriter> {
    const target = this.pathOf(key);
    const tmp = `${this.tmpDir}/${crypto.randomUUID()}.part`;
    let file: Deno.FsFile;
    try {
      file = await Deno.open(tmp, { write: true, createNew: true, mode: 0o640 });
    } catch (error) {
      throw new StorageError("Cannot open a temporary file", { cause: error });
    }
    this.#open.add(tmp);
    const writeback = new EarlyWriteback(tmp);
    let done = false;
    let spooled = 0;
    const finish = () => {
      if (done) return false;
      done = true;
      return true;
    };
    // The temporary file stays in `#open` (safe from a sweep) until it is renamed or removed.
    const discard = async () => {
      await writeback.close().catch(() => {});
      try {
        file.close();
      } catch { /* already closed */ }
      await Deno.remove(tmp).catch(() => {});
      this.#open.delete(tmp);
    };
    return {
      write: async (chunk: Uint8Array) => {
        if (done) throw new StorageError("Write after the object was finished");
        try {
          let offset = 0;
          while (offset < chunk.length) offset += await file.write(chunk.subarray(offset));
          writeback.wrote(chunk.length);
        } catch (error) {
          throw new StorageError("Cannot write to local storage", { cause: error });
        }
      },
      commit: async () => {
        if (!finish()) throw new StorageError("The object was already finished");
        try {
          await writeback.close();
          await file.syncData();
          file.close();
          const dir = target.slice(0, target.lastIndexOf("/"));
          await Deno.mkdir(dir, { recursive: true });
          await Deno.rename(tmp, target);
          this.#open.delete(tmp);
          await syncDirectory(dir);
          const stat = await Deno.stat(target);
          return {
            key,
            size: stat.size,
            etag: etagOf(stat),
            lastModified: stat.mtime ?? new Date(),
          };
        } catch (error) {
          await discard();
          throw new StorageError("Cannot commit to local storage", { cause: error });
        }
      },
      abort: async () => {
        if (!finish()) return;
        await discard();
      },
      spool: {
        path: tmp,
        pipeFrom: async (body, signal) => {
          if (done) throw new StorageError("Write after the object was finished");
          // The pipe gets a descriptor of its own and closes it at the end: with `preventClose`
          // the runtime can finish a pipe before its last write (the chunk is lost). The
          // writer's own descriptor stays open for the fsync of commit.
          const sink = await Deno.open(tmp, { write: true });
          try {
            await body.pipeTo(sink.writable, { signal });
          } catch (error) {
            try {
              sink.close();
            } catch { /* closed by the pipe */ }
            throw error;
          }
        },
        size: async () => {
          const size = (await file.stat()).size;
          writeback.wrote(size - spooled);
          spooled = size;
          return size;
        },
      },
    };
  }

  async head(key: string): Promise<ObjectInfo | null> {
    const path = this.pathOf(key);
    try {
      const stat = await Deno.stat(path);
      if (!stat.isFile) return null;
      return { key, size: stat.size, etag: etagOf(stat), lastModified: stat.mtime ?? new Date() };
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return null;
      throw new StorageError("Cannot read local storage", { cause: error });
    }
  }

  async get(key: string): Promise<{ info: ObjectInfo; body: ReadableStream<Uint8Array> } | null> {
    const path = this.pathOf(key);
    let file: Deno.FsFile;
    try {
      file = await Deno.open(path, { read: true });
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return null;
      throw new StorageError("Cannot read local storage", { cause: error });
    }
    const stat = await file.stat();
    return {
      info: { key, size: stat.size, etag: etagOf(stat), lastModified: stat.mtime ?? new Date() },
      body: file.readable,
    };
  }

  async delete(key: string): Promise<void> {
    const path = this.pathOf(key);
    try {
      await Deno.remove(path);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return;
      throw new StorageError("Cannot delete from local storage", { cause: error });
    }
    // Remove now-empty parent folders up to the storage root; failures are harmless.
    let dir = path.slice(0, path.lastIndexOf("/"));
    while (dir.length > this.root.length) {
      try {
        await Deno.remove(dir);
      } catch {
        break;
      }
      dir = dir.slice(0, dir.lastIndexOf("/"));
    }
  }

  async list(prefix: string, options: ListOptions = {}): Promise<ListPage> {
    const limit = Math.max(1, Math.min(options.limit ?? 1000, 1000));
    const after = options.cursor ?? "";
    const base = prefix.slice(0, prefix.lastIndexOf("/") + 1);
    const keys: string[] = [];
    await walk(`${this.root}/${base}`.replace(/\/$/, ""), base, (key) => {
      if (key.startsWith(prefix) && key > after) keys.push(key);
    });
    keys.sort();
    const page = keys.slice(0, limit);
    const objects: ObjectInfo[] = [];
    for (const key of page) {
      const info = await this.head(key);
      if (info) objects.push(info);
    }
    return { objects, nextCursor: keys.length > limit ? page[page.length - 1] : null };
  }

  presignPut(key: string, options: PresignOptions): Promise<string> {
    checkKey(key);
    const expires = Math.floor(Date.now() / 1000) + options.expiresInSeconds;
    const query = this.#signer.sign("PUT", key, expires, options.contentLength);
    // Plain keys need no escaping (PLAIN_KEY's characters are all unreserved).
    const path = PLAIN_KEY.test(key) ? key : key.split("/").map(encodeURIComponent).join("/");
    return Promise.resolve(`${this.#publicUrl}/storage/${path}?${query}`);
  }

  async sweep(): Promise<number> {
    let removed = 0;
    try {
      for await (const entry of Deno.readDir(this.tmpDir)) {
        const path = `${this.tmpDir}/${entry.name}`;
        if (!entry.isFile || this.#open.has(path)) continue;
        await Deno.remove(path).then(() => removed++, () => {});
      }
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) {
        throw new StorageError("Cannot sweep temporary files", { cause: error });
      }
    }
    return removed;
  }
}

async function walk(dir: string, keyBase: string, visit: (key: string) => void): Promise<void> {
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(dir));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
      return;
    }
    throw new StorageError("Cannot list local storage", { cause: error });
  }
  for (const entry of entries) {
    const key = `${keyBase}${entry.name}`;
    if (entry.isDirectory) await walk(`${dir}/${entry.name}`, `${key}/`, visit);
    else if (entry.isFile) visit(key);
  }
}

async function syncDirectory(dir: string): Promise<void> {
  try {
    using handle = await Deno.open(dir, { read: true });
    await handle.sync();
  } catch {
    // Not every platform can fsync a directory; the rename itself is still atomic.
  }
}
