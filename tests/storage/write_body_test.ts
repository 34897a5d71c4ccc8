import { assert, assertEquals, assertRejects } from "../_assert.ts";
import { type ObjectInfo, type ObjectWriter, writeBody } from "../../src/storage/object_store.ts";
import { StorageError } from "../../src/storage/object_store.ts";
import { limitSource } from "../../src/upload/limits.ts";
import { byteSource } from "../../src/byte_source.ts";
import { datasetChecks } from "../../src/upload/checks.ts";
import { ValidationError } from "../../src/pipeline/mod.ts";

/** Keeps a copy of every write (the caller reuses its buffers once a write resolved). */
class CopyingWriter implements ObjectWriter {
  writes: Uint8Array[] = [];
  failAt = Infinity;
  write(chunk: Uint8Array): Promise<void> {
    if (this.writes.length === this.failAt) {
      return Promise.reject(new StorageError("Cannot write"));
    }
    this.writes.push(chunk.slice());
    // Resolved later, as a file's asynchronous write is: the next buffer fills meanwhile.
    return new Promise((resolve) => setTimeout(resolve, 1));
  }
  commit(): Promise<ObjectInfo> {
    return Promise.reject(new Error("not used"));
  }
  abort(): Promise<void> {
    return Promise.resolve();
  }
  bytes(): Uint8Array {
    const out = new Uint8Array(this.writes.reduce((n, w) => n + w.length, 0));
    let at = 0;
    for (const write of this.writes) {
      out.set(write, at);
      at += write.length;
    }
    return out;
  }
}

function data(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  let x = seed;
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

/** `bytes` as a byte stream in pieces of `piece` bytes. */
function byteStream(bytes: Uint8Array, piece: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    type: "bytes",
    pull(controller) {
      if (at >= bytes.length) {
        controller.close();
        controller.byobRequest?.respond(0);
        return;
      }
      controller.enqueue(bytes.slice(at, at += piece));
    },
  });
}

Deno.test("writeBody writes a source in order, in full buffers but the last", async () => {
  const body = data(100_000, 1);
  const writer = new CopyingWriter();
  assertEquals(
    await writeBody(byteSource(byteStream(body, 3000), true), writer, 16_384),
    body.length,
  );
  assertEquals(writer.bytes(), body);
  assertEquals(writer.writes.map((w) => w.length), [...new Array(6).fill(16_384), 1696]);
});

Deno.test("byteSource reads a byte stream in place only when asked to", async () => {
  for (const inPlace of [true, false]) {
    const body = data(50_000, 3);
    let at = 0;
    let pulls = 0;
    let inPlaceReads = 0;
    const stream = new ReadableStream({
      type: "bytes",
      pull(controller) {
        pulls++;
        const request = controller.byobRequest;
        if (at >= body.length) {
          controller.close();
          request?.respond(0);
          return;
        }
        if (request?.view) {
          inPlaceReads++;
          const into = new Uint8Array(request.view.buffer, request.view.byteOffset);
          const n = Math.min(5000, into.length, body.length - at);
          into.set(body.subarray(at, at += n));
          request.respond(n);
        } else {
          controller.enqueue(body.slice(at, at += 5000));
        }
      },
    });
    const writer = new CopyingWriter();
    assertEquals(await writeBody(byteSource(stream, inPlace), writer, 16_384), body.length);
    assertEquals(writer.bytes(), body);
    assertEquals(inPlaceReads, inPlace ? pulls - 1 : 0, `inPlace ${inPlace}`);
  }
});

Deno.test("writeBody fills a buffer from a stream's chunks before it writes", async () => {
  const body = data(10_000, 2);
  const writer = new CopyingWriter();
  const chunks = [body.subarray(0, 4000), body.subarray(4000)];
  assertEquals(
    await writeBody(byteSource(ReadableStream.from(chunks)), writer, 16_384),
    body.length,
  );
  assertEquals(writer.bytes(), body);
  assertEquals(writer.writes.map((w) => w.length), [10_000]);
});

Deno.test("writeBody writes nothing for an empty body", async () => {
  const writer = new CopyingWriter();
  assertEquals(await writeBody(byteSource(byteStream(new Uint8Array(), 10)), writer, 1024), 0);
  assertEquals(writer.writes, []);
});

Deno.test("writeBody stops at a failed write with the store's error and cancels the body", async () => {
  let cancelled: unknown = null;
  let at = 0;
  const endless = new ReadableStream<Uint8Array>({
    type: "bytes",
    pull(controller) {
      controller.enqueue(data(4096, at++));
    },
    cancel(reason) {
      cancelled = reason;
    },
  });
  const writer = new CopyingWriter();
  writer.failAt = 2;
  await assertRejects(() => writeBody(byteSource(endless, true), writer, 8192), StorageError);
  assert(cancelled instanceof StorageError);
  assertEquals(writer.writes.length, 2);
});

/** `bytes` in pieces of `piece` bytes: a byte stream, or a stream of chunks (as `Deno.serve`'s body). */
function bodyOf(
  kind: "byte" | "chunk",
  bytes: Uint8Array,
  piece: number,
): ReadableStream<Uint8Array> {
  if (kind === "byte") return byteStream(bytes, piece);
  const pieces = [];
  for (let at = 0; at < bytes.length; at += piece) pieces.push(bytes.slice(at, at + piece));
  return ReadableStream.from(pieces);
}

for (const kind of ["byte", "chunk"] as const) {
  Deno.test(`the upload's stages hand a body on in place: every byte lands in the writer's buffers, checked (${kind} stream)`, async () => {
    const rows = ["user_id,variant,date,m"];
    for (let i = 0; rows.length < 20_000; i++) rows.push(`u${i},${"AB"[i % 2]},2026-01-01,${i}`);
    const body = new TextEncoder().encode(rows.join("\n") + "\n");
    let counted = 0;
    const checks = datasetChecks();
    const limited = limitSource(bodyOf(kind, body, 7000), {
      maxBytes: 1e7,
      idleTimeoutMs: 5000,
      onBytes: (bytes) => counted += bytes,
      inPlace: true,
      inner: checks.hooks,
    });
    const writer = new CopyingWriter();
    assertEquals(await writeBody(limited, writer, 65_536), body.length);
    assertEquals(writer.bytes(), body);
    assertEquals(counted, body.length);
    assertEquals((await checks.result).summary.rows, 19_999);
    for (const write of writer.writes.slice(0, -1)) assertEquals(write.length, 65_536);
  });

  Deno.test(`the upload's stages stop at the first bad line: the bytes holding it are not written (${kind} stream)`, async () => {
    const good = "user_id,variant,date,m\n" + "u1,A,2026-01-01,1\n".repeat(5000);
    const body = new TextEncoder().encode(
      good + "u2,B,2026-02-30,1\n" + "u3,A,2026-01-01,1\n".repeat(5000),
    );
    const checks = datasetChecks();
    const limited = limitSource(bodyOf(kind, body, 1000), {
      maxBytes: 1e7,
      idleTimeoutMs: 5000,
      inPlace: true,
      inner: checks.hooks,
    });
    const writer = new CopyingWriter();
    const error = await assertRejects(
      () => writeBody(limited, writer, 4096),
      ValidationError,
    );
    assertEquals(error.code, "invalid_date");
    await assertRejects(() => checks.result, ValidationError);
    assert(writer.bytes().length <= good.length, `${writer.bytes().length} bytes written`);
  });
}
