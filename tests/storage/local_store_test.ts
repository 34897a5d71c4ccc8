import { assert, assertEquals, assertThrows } from "../_assert.ts";
import { DirectorySyncs, LocalStore } from "../../src/storage/local_store.ts";
import { StorageError } from "../../src/storage/object_store.ts";
import { UrlSigner } from "../../src/crypto/url_signer.ts";

async function newStore() {
  const dir = await Deno.makeTempDir({ prefix: "abn-local-" });
  const store = new LocalStore({
    dataDir: dir,
    signer: new UrlSigner(new Uint8Array(32).fill(7)),
    publicUrl: "http://127.0.0.1:1",
  });
  await store.open();
  return { dir, store };
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<string> {
  return await new Response(stream).text();
}

Deno.test("LocalStore writer makes the object visible only at commit", async () => {
  const { dir, store } = await newStore();
  const key = "org/o1/experiments/e1/latest.csv";
  const w = await store.createWriter(key);
  await w.write(new TextEncoder().encode("a,b\n"));
  assertEquals(await store.head(key), null);
  await w.write(new TextEncoder().encode("1,2\n"));
  const info = await w.commit();
  assertEquals(info.size, 8);
  assertEquals((await store.head(key))?.etag, info.etag);
  assertEquals(await readAll((await store.get(key))!.body), "a,b\n1,2\n");
  await Deno.remove(dir, { recursive: true });
});

Deno.test("LocalStore abort leaves the previous object byte-identical and no temporary file", async () => {
  const { dir, store } = await newStore();
  const key = "org/o1/experiments/e1/latest.csv";
  const first = await store.createWriter(key);
  await first.write(new TextEncoder().encode("old"));
  const before = await first.commit();
  const second = await store.createWriter(key);
  await second.write(new TextEncoder().encode("new content"));
  await second.abort();
  await second.abort();
  assertEquals(await readAll((await store.get(key))!.body), "old");
  assertEquals((await store.head(key))?.etag, before.etag);
  assertEquals((await Array.fromAsync(Deno.readDir(`${dir}/tmp`))).length, 0);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("LocalStore writes a large object through early writebacks and commits it whole", async () => {
  const { dir, store } = await newStore();
  const key = "org/o1/experiments/big/latest.csv";
  const w = await store.createWriter(key);
  const piece = new Uint8Array(1024 * 1024);
  for (let i = 0; i < 40; i++) {
    piece.fill(i);
    await w.write(piece);
  }
  const info = await w.commit();
  assertEquals(info.size, 40 * 1024 * 1024);
  const stored = await Deno.readFile(`${dir}/storage/${key}`);
  for (let i = 0; i < 40; i++) assertEquals(stored[i * 1024 * 1024 + 17], i);
  assertEquals([...Deno.readDirSync(`${dir}/tmp`)], []);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("LocalStore fails the commit when an early writeback failed, and keeps the previous object", async () => {
  const { dir, store } = await newStore();
  const key = "org/o1/experiments/e1/latest.csv";
  const first = await store.createWriter(key);
  await first.write(new TextEncoder().encode("old"));
  await first.commit();
  const w = await store.createWriter(key);
  await w.write(new Uint8Array(1024));
  // The temporary file disappears before the first writeback (at 16 MiB) opens it.
  for (const entry of Deno.readDirSync(`${dir}/tmp`)) Deno.removeSync(`${dir}/tmp/${entry.name}`);
  for (let i = 0; i < 17; i++) await w.write(new Uint8Array(1024 * 1024));
  let failed: unknown = null;
  await w.commit().catch((error) => failed = error);
  assert(failed instanceof StorageError, String(failed));
  assertEquals(await readAll((await store.get(key))!.body), "old");
  await Deno.remove(dir, { recursive: true });
});

Deno.test("LocalStore etag changes when the object is replaced by identical bytes", async () => {
  const { dir, store } = await newStore();
  const key = "org/o1/experiments/e1/latest.csv";
  const etags = [];
  for (let i = 0; i < 2; i++) {
    const w = await store.createWriter(key);
    await w.write(new TextEncoder().encode("same"));
    etags.push((await w.commit()).etag);
  }
  assert(etags[0] !== etags[1]);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("LocalStore gives each version of a key a later time and its own etag, however quick", async () => {
  const { dir, store } = await newStore();
  const key = "org/o1/experiments/e1/latest.csv";
  const versions = [];
  // Many within one millisecond, each replacing the last (whose inode the next may take).
  for (let i = 0; i < 60; i++) {
    const w = await store.createWriter(key);
    await w.write(new TextEncoder().encode("same"));
    versions.push(await w.commit());
  }
  assertEquals(new Set(versions.map((v) => v.etag)).size, versions.length);
  for (let i = 1; i < versions.length; i++) {
    assert(versions[i].lastModified > versions[i - 1].lastModified, `version ${i}`);
  }
  assertEquals((await store.head(key))?.etag, versions.at(-1)!.etag);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("LocalStore lists by prefix in key order with pages and isolates prefixes", async () => {
  const { dir, store } = await newStore();
  for (const org of ["a", "ab"]) {
    for (const e of ["e3", "e1", "e2", "e5", "e4"]) {
      const w = await store.createWriter(`org/${org}/experiments/${e}/latest.csv`);
      await w.write(new Uint8Array([49]));
      await w.commit();
    }
  }
  const first = await store.list("org/a/experiments/", { limit: 2 });
  assertEquals(first.objects.map((o) => o.key.split("/")[3]), ["e1", "e2"]);
  const second = await store.list("org/a/experiments/", { limit: 2, cursor: first.nextCursor });
  assertEquals(second.objects.map((o) => o.key.split("/")[3]), ["e3", "e4"]);
  const third = await store.list("org/a/experiments/", { limit: 2, cursor: second.nextCursor });
  assertEquals(third.objects.map((o) => o.key.split("/")[3]), ["e5"]);
  assertEquals(third.nextCursor, null);
  assertEquals((await store.list("org/", {})).objects.length, 10);
  await store.delete("org/a/experiments/e1/latest.csv");
  await store.delete("org/a/experiments/e1/latest.csv");
  assertEquals((await store.list("org/a/experiments/")).objects.length, 4);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("LocalStore sweep removes stale temporaries but not open ones", async () => {
  const { dir, store } = await newStore();
  await Deno.writeTextFile(`${dir}/tmp/stale.part`, "x");
  const w = await store.createWriter("org/o/experiments/e/latest.csv");
  await w.write(new Uint8Array([1]));
  assertEquals(await store.sweep(), 1);
  assertEquals((await Array.fromAsync(Deno.readDir(`${dir}/tmp`))).length, 1);
  await w.abort();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("LocalStore sweep during a commit leaves the committing temporary alone", async () => {
  const { dir, store } = await newStore();
  const w = await store.createWriter("org/o/experiments/e/latest.csv");
  await w.write(new TextEncoder().encode("user_id,variant,date,x\n"));
  const committing = w.commit();
  assertEquals(await store.sweep(), 0);
  const info = await committing;
  assertEquals(info.size, 23);
  assertEquals((await Array.fromAsync(Deno.readDir(`${dir}/tmp`))).length, 0);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("LocalStore refuses keys that would leave the storage folder", async () => {
  const { dir, store } = await newStore();
  for (const key of ["../x", "org/../../x", "/etc/passwd", "org//x", "org/./x"]) {
    let refused = false;
    try {
      await store.head(key);
    } catch (error) {
      refused = error instanceof TypeError;
    }
    assert(refused, key);
  }
  await Deno.remove(dir, { recursive: true });
});

Deno.test("UrlSigner accepts its own signature and refuses altered, expired or re-pointed ones", () => {
  const signer = new UrlSigner(new Uint8Array(32).fill(3));
  const now = 1_000_000;
  const q = new URLSearchParams(signer.sign("PUT", "org/a/experiments/e/latest.csv", now + 60));
  assertEquals(signer.verify("PUT", "org/a/experiments/e/latest.csv", q, now).result, "ok");
  assertEquals(
    signer.verify("PUT", "org/a/experiments/e/latest.csv", q, now + 61).result,
    "expired",
  );
  assertEquals(signer.verify("PUT", "org/b/experiments/e/latest.csv", q, now).result, "invalid");
  assertEquals(signer.verify("GET", "org/a/experiments/e/latest.csv", q, now).result, "invalid");
  const longer = new URLSearchParams(q);
  longer.set("expires", String(now + 6000));
  assertEquals(
    signer.verify("PUT", "org/a/experiments/e/latest.csv", longer, now).result,
    "invalid",
  );
  const sized = new URLSearchParams(signer.sign("PUT", "k/x", now + 60, 10));
  assertEquals(signer.verify("PUT", "k/x", sized, now), { result: "ok", size: 10 });
  sized.set("size", "11");
  assertEquals(signer.verify("PUT", "k/x", sized, now).result, "invalid");
  sized.delete("size");
  assertEquals(signer.verify("PUT", "k/x", sized, now).result, "invalid");
  const other = new UrlSigner(new Uint8Array(32).fill(4));
  assertEquals(other.verify("PUT", "org/a/experiments/e/latest.csv", q, now).result, "invalid");
});

Deno.test("UrlSigner binds the key id that asked for a URL: it reads back, and cannot be changed or dropped", () => {
  const signer = new UrlSigner(new Uint8Array(32).fill(3));
  const now = 1_000_000;
  const keyId = "key_0123456789abcdef";
  const q = new URLSearchParams(signer.sign("PUT", "k/x", now + 60, 10, keyId));
  assertEquals(q.get("key_id"), keyId);
  assertEquals(signer.verify("PUT", "k/x", q, now), { result: "ok", size: 10, keyId });
  assertEquals(signer.verify("PUT", "k/x", q, now + 61), { result: "expired", size: 10, keyId });
  const other = new URLSearchParams(q);
  other.set("key_id", "key_fedcba9876543210");
  assertEquals(signer.verify("PUT", "k/x", other, now).result, "invalid");
  const dropped = new URLSearchParams(q);
  dropped.delete("key_id");
  assertEquals(signer.verify("PUT", "k/x", dropped, now).result, "invalid");
  const malformed = new URLSearchParams(q);
  malformed.set("key_id", "key_x&size=1");
  assertEquals(signer.verify("PUT", "k/x", malformed, now).result, "invalid");
  assertThrows(() => signer.sign("PUT", "k/x", now + 60, undefined, "not a key"), TypeError);
  // A URL signed without a key id (before ids were bound) still passes, naming none.
  const plain = new URLSearchParams(signer.sign("PUT", "k/x", now + 60));
  assertEquals(signer.verify("PUT", "k/x", plain, now), { result: "ok", size: undefined });
});

Deno.test("LocalStore lists in key order across folders whose names prefix each other, from any cursor", async () => {
  const { dir, store } = await newStore();
  // "x-1/…" and "x.y/…" sort before "x/…" ('-' and '.' are below '/'), "x0/…" after.
  const ids = ["x", "x-1", "x.y", "x0", "X", "_a", "a", "xa"];
  for (const id of ids) {
    const w = await store.createWriter(`org/o/experiments/${id}/latest.csv`);
    await w.write(new Uint8Array([49]));
    await w.commit();
  }
  const keys = ids.map((id) => `org/o/experiments/${id}/latest.csv`).sort();
  const all = await store.list("org/o/experiments/");
  assertEquals(all.objects.map((o) => o.key), keys);
  for (const limit of [1, 2, 3]) {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<typeof store.list>> = await store.list("org/", {
        limit,
        cursor,
      });
      seen.push(...page.objects.map((o) => o.key));
      cursor = page.nextCursor;
    } while (cursor);
    assertEquals(seen, keys, `limit ${limit}`);
  }
  // startAfter: any key, stored or not.
  const after = await store.list("org/o/", { startAfter: "org/o/experiments/x/latest.csv" });
  assertEquals(
    after.objects.map((o) => o.key),
    keys.filter((k) => k > "org/o/experiments/x/latest.csv"),
  );
  const between = await store.list("org/o/", { startAfter: "org/o/experiments/x-0" });
  assertEquals(between.objects[0].key, "org/o/experiments/x-1/latest.csv");
  await Deno.remove(dir, { recursive: true });
});

Deno.test("LocalStore answers a page without reading the folders before its cursor", async () => {
  const { dir, store } = await newStore();
  for (const org of ["a", "b", "c"]) {
    for (const id of ["e1", "e2"]) {
      const w = await store.createWriter(`org/${org}/experiments/${id}/latest.csv`);
      await w.write(new Uint8Array([49]));
      await w.commit();
    }
  }
  const read: string[] = [];
  const readDir = Deno.readDir;
  Deno.readDir = (path: string | URL) => {
    read.push(String(path).slice(dir.length + "/storage".length) || "/");
    return readDir(path);
  };
  try {
    const page = await store.list("org/", { limit: 1, cursor: "org/b/experiments/e2/latest.csv" });
    assertEquals(page.objects.map((o) => o.key), ["org/c/experiments/e1/latest.csv"]);
    // The root, org/, and what leads to the first key after the cursor: nothing of org/a.
    assertEquals(read, [
      "/org",
      "/org/b",
      "/org/b/experiments",
      "/org/b/experiments/e2",
      "/org/c",
      "/org/c/experiments",
      "/org/c/experiments/e1",
      "/org/c/experiments/e2",
    ]);
  } finally {
    Deno.readDir = readDir;
  }
  await Deno.remove(dir, { recursive: true });
});

Deno.test("DirectorySyncs shares one fsync among the requests made while one runs", async () => {
  const dir = await Deno.makeTempDir({ prefix: "abn-dirsync-" });
  const syncs = new DirectorySyncs();
  await syncs.sync(dir);
  assertEquals(syncs.started, 1);
  // The first starts at once; the nine made while it runs share the next one.
  await Promise.all(Array.from({ length: 10 }, () => syncs.sync(dir)));
  assertEquals(syncs.started, 3);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("LocalStore reads a small object whole, from the descriptor it stat'ed", async () => {
  const { dir, store } = await newStore();
  const key = "org/o/experiments/e/latest.csv";
  for (const size of [0, 5, 64 * 1024, 64 * 1024 + 1, 300_000]) {
    const bytes = new Uint8Array(size).map((_, i) => i % 251);
    const w = await store.createWriter(key);
    await w.write(bytes);
    const info = await w.commit();
    const got = (await store.get(key))!;
    assertEquals(got.info, info);
    assertEquals(new Uint8Array(await new Response(got.body).arrayBuffer()), bytes);
  }
  assertEquals(await store.get("org/o/experiments/none/latest.csv"), null);
  await Deno.remove(dir, { recursive: true });
});
