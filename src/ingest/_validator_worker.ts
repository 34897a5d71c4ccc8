/**
 * Worker side of `OffThreadValidator`: runs one `DatasetValidator` and one SHA-256 per upload id
 * and answers the first error or the summary with the hash. The bytes come either as batches
 * posted in order (each batch's buffer is handed back), or from a file that another thread is
 * still writing: a follow reads it as it grows until told its final size.
 */
/// <reference lib="deno.worker" />
import { createHash, type Hash } from "node:crypto";
import { DatasetValidator, ValidationError } from "../pipeline/mod.ts";
import { ServiceError } from "../errors.ts";
import type { ValidatorReply, ValidatorRequest } from "./off_thread_validator.ts";

const validators = new Map<number, DatasetValidator | null>();
const hashes = new Map<number, Hash>();

function reply(message: ValidatorReply, transfer: Transferable[] = []): void {
  self.postMessage(message, transfer);
}

function failure(id: number, error: unknown): void {
  validators.set(id, null);
  if (error instanceof ServiceError) {
    const line = error instanceof ValidationError ? error.line : null;
    reply({ id, type: "error", code: error.code, message: error.message, line });
  } else {
    reply({ id, type: "error", code: "internal_error", message: String(error) });
  }
}

/** Answers the summary and hash of a finished upload (or its error) and forgets it. */
function complete(id: number): void {
  const validator = validators.get(id);
  const hash = hashes.get(id);
  validators.delete(id);
  hashes.delete(id);
  if (!validator || !hash) return; // its error was already answered
  try {
    const summary = validator.finish();
    reply({ id, type: "summary", summary, sha256: hash.digest("hex") });
  } catch (error) {
    failure(id, error);
    validators.delete(id);
  }
}

// ---------------------------------------------------------------------------------------------
// Following a growing file

interface Follow {
  id: number;
  file: Deno.FsFile;
  offset: number;
  /** The file's final size, once the writer said it. */
  end: number | null;
}

const follows = new Map<number, Follow>();
/** One read buffer for every follow: each step validates and hashes it before the next read. */
const READ = new Uint8Array(1024 * 1024);
/** Work done between two turns of the event loop (which delivers ends, aborts, new uploads). */
const SLICE_BYTES = 8 * 1024 * 1024;
/** Longest pause between two looks at files that stopped growing. */
const MAX_IDLE_MS = 16;

let pumping = false;
let wake: (() => void) | null = null;
const turn = new MessageChannel();
let turned: (() => void) | null = null;
turn.port2.onmessage = () => turned?.();

/** Lets queued messages run (a message, unlike a timer, is not delayed by nesting). */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => {
    turned = resolve;
    turn.port1.postMessage(0);
  });
}

function stopFollow(follow: Follow): void {
  follows.delete(follow.id);
  try {
    follow.file.close();
  } catch { /* already closed */ }
}

/** One read of one follow: answers the bytes taken (0 when the file has nothing new yet). */
function step(follow: Follow): number {
  const { id } = follow;
  if (!validators.get(id)) {
    stopFollow(follow); // failed already
    return 0;
  }
  if (follow.end !== null && follow.offset >= follow.end) {
    stopFollow(follow);
    if (follow.offset > follow.end) {
      failure(id, new Error(`The file grew past its final size ${follow.end}`));
    } else complete(id);
    return 0;
  }
  let n: number | null;
  try {
    n = follow.file.readSync(READ);
  } catch (error) {
    stopFollow(follow);
    failure(id, error);
    return 0;
  }
  if (n === null || n === 0) {
    if (follow.end !== null) {
      stopFollow(follow);
      failure(id, new Error(`The file ended at ${follow.offset} of ${follow.end} bytes`));
    }
    return 0;
  }
  const bytes = READ.subarray(0, n);
  follow.offset += n;
  try {
    validators.get(id)!.push(bytes);
    hashes.get(id)!.update(bytes);
  } catch (error) {
    stopFollow(follow);
    failure(id, error);
  }
  return n;
}

/** Reads every followed file as it grows, round robin, until none is left. */
async function pump(): Promise<void> {
  pumping = true;
  let idleMs = 1;
  let slice = 0;
  try {
    while (follows.size > 0) {
      let taken = 0;
      for (const follow of [...follows.values()]) taken += step(follow);
      if (taken > 0) {
        idleMs = 1;
        slice += taken;
        if (slice >= SLICE_BYTES) {
          slice = 0;
          await nextTurn();
        }
        continue;
      }
      // Every file has been read to its current end: wait for more bytes or for a message.
      slice = 0;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          wake = null;
          resolve();
        }, idleMs);
        wake = () => {
          clearTimeout(timer);
          wake = null;
          resolve();
        };
      });
      idleMs = Math.min(idleMs * 2, MAX_IDLE_MS);
    }
  } finally {
    pumping = false;
  }
}

function kick(): void {
  if (wake) wake();
  else if (!pumping) pump();
}

function follow(id: number, path: string): void {
  validators.set(id, new DatasetValidator());
  hashes.set(id, createHash("sha256"));
  try {
    follows.set(id, { id, file: Deno.openSync(path, { read: true }), offset: 0, end: null });
  } catch (error) {
    failure(id, error);
    return;
  }
  kick();
}

// ---------------------------------------------------------------------------------------------

self.onmessage = (event: MessageEvent<ValidatorRequest>) => {
  const m = event.data;
  switch (m.type) {
    case "start":
      validators.set(m.id, new DatasetValidator());
      hashes.set(m.id, createHash("sha256"));
      return;
    case "follow":
      follow(m.id, m.path);
      return;
    case "chunk": {
      const validator = validators.get(m.id);
      if (validator) {
        const bytes = new Uint8Array(m.buffer, 0, m.length);
        try {
          validator.push(bytes);
          hashes.get(m.id)?.update(bytes);
        } catch (error) {
          failure(m.id, error);
        }
      }
      reply({ id: m.id, type: "buffer", buffer: m.buffer }, [m.buffer]);
      return;
    }
    case "finish": {
      const following = follows.get(m.id);
      if (following) {
        following.end = m.size ?? following.offset;
        kick();
      } else complete(m.id);
      return;
    }
    case "abort": {
      const following = follows.get(m.id);
      if (following) stopFollow(following);
      validators.delete(m.id);
      hashes.delete(m.id);
      return;
    }
  }
};
