/**
 * The embedded default storage: an object with key K lives at `{dataDir}/storage/K`. Writes go
 * to a temporary file under `{dataDir}/tmp`, are fsynced and renamed into place, so an object is
 * either the previous version or the new one, never half of either.
 *
 * Small objects are the common case (a nightly file of a few rows): their file-system calls that
 * only touch the page cache (create, small writes, mkdir, rename, stat, small reads) run
 * synchronously, since each asynchronous call costs 40–60 µs of thread hand-offs on this
 * runtime, several times the call itself. The fsyncs stay asynchronous, and those of a directory
 * are shared: commits that renamed into the same directory while its fsync ran wait for one more
 * fsync together (`DirectorySyncs`), and the parent of a newly made experiment folder is fsynced
 * too, so that the new folder survives a power failure with its file.
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
/** Writes up to this size go to the page cache synchronously (microseconds). */
const SYNC_WRITE_BYTES = 64 * 1024;
/** Objects up to this size are read whole and synchronously by `get`. */
const SYNC_READ_BYTES = 64 * 1024;

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

/** Writes all of `chunk`: a small one synchronously (to the page cache, see above), a large not. */
async function writeAll(file: Deno.FsFile, chunk: Uint8Array): Promise<void> {
  let offset = 0;
  if (chunk.length <= SYNC_WRITE_BYTES) {
    while (offset < chunk.length) offset += file.writeSync(chunk.subarray(offset));
  } else {
    while (offset < chunk.length) offset += await file.write(chunk.subarray(offset));
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

/**
 * The file's stat, its mtime moved past that of the version at `target` if it is not later: the
 * ETag reads the mtime to the millisecond, and a version written within the millisecond of the
 * one before may get the inode of the one before that, so without it two versions of one key
 * could share an ETag. Each version's mtime is later than the last one's.
 */
function laterThanBefore(file: Deno.FsFile, target: string): Deno.FileInfo {
  const stat = file.statSync();
  let before: Date | null = null;
  try {
    before = Deno.statSync(target).mtime;
  } catch { /* a new key */ }
  if (before === null || stat.mtime === null || stat.mtime > before) return stat;
  const later = new Date(before.getTime() + 1);
  file.utimeSync(later, later);
  return file.statSync();
}

export class LocalStore implements ObjectStore {
  readonly driver = "local" as const;
  readonly bucket = "local";
  readonly #root: string;
  readonly #tmpDir: string;
  #signer: UrlSigner;
  #publicUrl: string;
  #open = new Set<string>();
  readonly #dirSyncs = new DirectorySyncs();

  constructor(options: LocalStoreOptions) {
    this.#root = `${options.dataDir}/storage`;
    this.#tmpDir = `${options.dataDir}/tmp`;
    this.#signer = options.signer;
    this.#publicUrl = options.publicUrl;
  }

  async open(): Promise<void> {
    await Deno.mkdir(this.#root, { recursive: true });
    await Deno.mkdir(this.#tmpDir, { recursive: true });
  }

  #pathOf(key: string): string {
    checkKey(key);
    return `${this.#root}/${key}`;
  }

  /**
   * Makes the folder `dir` (under the root) if needed; answers the folders whose entries changed
   * (the parents of those made), to fsync with the commit.
   */
  #makeDirectory(dir: string): string[] {
    try {
      Deno.mkdirSync(dir);
    } catch (error) {
      if (error instanceof Deno.errors.AlreadyExists) return [];
      if (!(error instanceof Deno.errors.NotFound)) throw error;
      // Its parent is missing too (a new organization): make the chain, fsync every level.
      const parent = dir.slice(0, dir.lastIndexOf("/"));
      const made = this.#makeDirectory(parent);
      Deno.mkdirSync(dir);
      return [...made, parent];
    }
    return [dir.slice(0, dir.lastIndexOf("/"))];
  }

  createWriter(key: string): Promise<ObjectWriter> {
    try {
      return Promise.resolve(this.#writer(key));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  #writer(key: string): ObjectWriter {
    const target = this.#pathOf(key);
    const tmp = `${this.#tmpDir}/${crypto.randomUUID()}.part`;
    let file: Deno.FsFile;
    try {
      file = Deno.openSync(tmp, { write: true, createNew: true, mode: 0o640 });
    } catch (error) {
      throw new StorageError("Cannot open a temporary file", { cause: error });
    }
    this.#open.add(tmp);
    const writeback = new EarlyWriteback(tmp);
    let done = false;
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
          await writeAll(file, chunk);
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
          const dir = target.slice(0, target.lastIndexOf("/"));
          const made = this.#makeDirectory(dir);
          // The renamed file keeps its size, mtime and inode: the ETag is known now. In a folder
          // just made there is no version before.
          const stat = made.length > 0 ? file.statSync() : laterThanBefore(file, target);
          file.close();
          Deno.renameSync(tmp, target);
          this.#open.delete(tmp);
          await Promise.all([dir, ...made].map((d) => this.#dirSyncs.sync(d)));
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
    };
  }

  async head(key: string): Promise<ObjectInfo | null> {
    const path = this.#pathOf(key);
    try {
      const stat = await Deno.stat(path);
      if (!stat.isFile) return null;
      return { key, size: stat.size, etag: etagOf(stat), lastModified: stat.mtime ?? new Date() };
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return null;
      throw new StorageError("Cannot read local storage", { cause: error });
    }
  }

  get(key: string): Promise<{ info: ObjectInfo; body: ReadableStream<Uint8Array> } | null> {
    const path = this.#pathOf(key);
    let file: Deno.FsFile;
    let stat: Deno.FileInfo;
    try {
      file = Deno.openSync(path, { read: true });
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return Promise.resolve(null);
      return Promise.reject(new StorageError("Cannot read local storage", { cause: error }));
    }
    try {
      stat = file.statSync();
      const info = {
        key,
        size: stat.size,
        etag: etagOf(stat),
        lastModified: stat.mtime ?? new Date(),
      };
      if (stat.size > SYNC_READ_BYTES) {
        // A byte stream that reads 256 KiB ahead of its reader into one buffer of its own, and
        // copies them into the reader's buffer (chunks of 256 KiB for a reader without one): the
        // disk's part of each read overlaps the reading of the one before, and nothing is
        // allocated per read. Each read is a turn of the event loop that requests share; with
        // 64 KiB reads a 200 MB file spent over a second awaiting them (docs/performance.md,
        // "Reading the CSV").
        const ahead = new Uint8Array(256 * 1024);
        /** Bytes read ahead and not handed out yet; null while `reading`. */
        let ready: Uint8Array | null = null;
        let reading: Promise<number | null> | null = null;
        const readAhead = () => {
          reading = file.read(ahead);
          reading.catch(() => {}); // awaited by the next pull, if any
        };
        const close = () => {
          try {
            file.close();
          } catch { /* closed */ }
        };
        readAhead();
        const body = new ReadableStream({
          type: "bytes",
          autoAllocateChunkSize: ahead.length,
          async pull(controller) {
            const request = controller.byobRequest!;
            const { buffer, byteOffset, byteLength } = request.view!;
            try {
              if (ready === null) {
                const n = await reading;
                if (n === null) {
                  close();
                  controller.close();
                  request.respond(0);
                  return;
                }
                ready = ahead.subarray(0, n);
              }
              const n = Math.min(ready.length, byteLength);
              new Uint8Array(buffer, byteOffset, n).set(ready.subarray(0, n));
              ready = n < ready.length ? ready.subarray(n) : null;
              if (ready === null) readAhead();
              request.respond(n);
            } catch (error) {
              close();
              throw new StorageError("Cannot read local storage", { cause: error });
            }
          },
          async cancel() {
            await reading?.catch(() => {});
            close();
          },
        });
        return Promise.resolve({ info, body });
      }
      // Small: read whole now, from the descriptor that was stat'ed (the same object).
      const bytes = new Uint8Array(stat.size);
      let filled = 0;
      while (filled < bytes.length) {
        const n = file.readSync(bytes.subarray(filled));
        if (n === null) break;
        filled += n;
      }
      file.close();
      return Promise.resolve({ info, body: ReadableStream.from([bytes.subarray(0, filled)]) });
    } catch (error) {
      try {
        file.close();
      } catch { /* closed */ }
      return Promise.reject(new StorageError("Cannot read local storage", { cause: error }));
    }
  }

  async delete(key: string): Promise<void> {
    const path = this.#pathOf(key);
    try {
      await Deno.remove(path);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return;
      throw new StorageError("Cannot delete from local storage", { cause: error });
    }
    // Remove now-empty parent folders up to the storage root; failures are harmless.
    let dir = path.slice(0, path.lastIndexOf("/"));
    while (dir.length > this.#root.length) {
      try {
        await Deno.remove(dir);
      } catch {
        break;
      }
      dir = dir.slice(0, dir.lastIndexOf("/"));
    }
  }

  /**
   * Walks the folders in key order from the cursor on and stops after the page: a page reads the
   * folders on the way to the cursor and those of its own objects, not the whole tree.
   */
  async list(prefix: string, options: ListOptions = {}): Promise<ListPage> {
    const limit = Math.max(1, Math.min(options.limit ?? 1000, 1000));
    const after = options.cursor ?? options.startAfter ?? "";
    const base = prefix.slice(0, prefix.lastIndexOf("/") + 1);
    const keys: string[] = [];
    await this.#walkInOrder(base, prefix, after, limit + 1, keys);
    const page = keys.slice(0, limit);
    const objects: ObjectInfo[] = [];
    for (const key of page) {
      const info = await this.head(key);
      if (info) objects.push(info);
    }
    return { objects, nextCursor: keys.length > limit ? page[page.length - 1] : null };
  }

  /**
   * Collects into `out`, in key order, up to `want` keys under the folder `dirKey` (`""` or ending
   * with `/`) that start with `prefix` and come after `after`, skipping whole folders before it.
   */
  async #walkInOrder(
    dirKey: string,
    prefix: string,
    after: string,
    want: number,
    out: string[],
  ): Promise<void> {
    for (const { key, dir } of await sortedEntries(this.#root, dirKey)) {
      if (out.length >= want) return;
      if (!dir) {
        if (key > after && key.startsWith(prefix)) out.push(key);
        continue;
      }
      // Every key in the folder starts with `key`: outside the prefix, or all before `after`?
      if (!key.startsWith(prefix) && !prefix.startsWith(key)) continue;
      if (key <= after && !after.startsWith(key)) continue;
      await this.#walkInOrder(key, prefix, after, want, out);
    }
  }

  presignPut(key: string, options: PresignOptions): Promise<string> {
    checkKey(key);
    const expires = Math.floor(Date.now() / 1000) + options.expiresInSeconds;
    const query = this.#signer.sign("PUT", key, expires, options.contentLength, options.keyId);
    // Plain keys need no escaping (PLAIN_KEY's characters are all unreserved).
    const path = PLAIN_KEY.test(key) ? key : key.split("/").map(encodeURIComponent).join("/");
    return Promise.resolve(`${this.#publicUrl}/storage/${path}?${query}`);
  }

  async sweep(): Promise<number> {
    let removed = 0;
    try {
      for await (const entry of Deno.readDir(this.#tmpDir)) {
        const path = `${this.#tmpDir}/${entry.name}`;
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

/**
 * fsyncs of folders, shared: a request waits for an fsync that starts after it (the one running
 * may have started before its rename), and every request made while one runs shares the next.
 */
export class DirectorySyncs {
  readonly #state = new Map<string, { running: Promise<void>; next: Promise<void> | null }>();
  /** fsyncs started (tests count them). */
  started = 0;

  sync(dir: string): Promise<void> {
    const state = this.#state.get(dir);
    if (state === undefined) return this.#start(dir);
    state.next ??= state.running.then(() => this.#start(dir));
    return state.next;
  }

  #start(dir: string): Promise<void> {
    this.started++;
    const running = syncDirectory(dir).finally(() => {
      const state = this.#state.get(dir);
      if (state?.running !== running) return;
      if (state.next === null) this.#state.delete(dir);
    });
    const state = this.#state.get(dir);
    if (state) {
      state.running = running;
      state.next = null;
    } else this.#state.set(dir, { running, next: null });
    return running;
  }
}

async function syncDirectory(dir: string): Promise<void> {
  let handle: Deno.FsFile;
  try {
    handle = Deno.openSync(dir, { read: true });
  } catch {
    return; // Not every platform can open a directory; the rename itself is still atomic.
  }
  try {
    await handle.sync();
  } catch {
    // Nor fsync one.
  } finally {
    handle.close();
  }
}

/** Entries of a folder as keys, in key order (a folder's keys follow `{name}/`). */
async function sortedEntries(
  root: string,
  dirKey: string,
): Promise<{ key: string; dir: boolean }[]> {
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(`${root}/${dirKey}`.replace(/\/$/, "")));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
      return [];
    }
    throw new StorageError("Cannot list local storage", { cause: error });
  }
  const items: { key: string; dir: boolean }[] = [];
  for (const entry of entries) {
    if (entry.isDirectory) items.push({ key: `${dirKey}${entry.name}/`, dir: true });
    else if (entry.isFile) items.push({ key: `${dirKey}${entry.name}`, dir: false });
  }
  return items.sort((a, b) => a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
}
