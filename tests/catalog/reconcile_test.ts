import { assertEquals } from "../_assert.ts";
import { SqliteControlPlane } from "../../src/db/sqlite/sqlite_control_plane.ts";
import { nowIso } from "../../src/db/control_plane.ts";
import { LocalStore } from "../../src/storage/local_store.ts";
import type { ListOptions, ListPage, ObjectInfo } from "../../src/storage/object_store.ts";
import { UrlSigner } from "../../src/crypto/url_signer.ts";
import { createLogger } from "../../src/log.ts";
import type { Delivery } from "../../src/deliveries.ts";
import { DeliveryHub } from "../../src/deliveries.ts";
import { DatasetCatalog } from "../../src/catalog/dataset_catalog.ts";
import { reconcile } from "../../src/catalog/reconcile.ts";

/** A local store whose cursors are opaque tokens, as S3's continuation tokens are. */
class OpaqueCursorStore extends LocalStore {
  /** Runs after each page is listed, before it is answered (a commit racing the listing). */
  afterList: (() => Promise<void>) | null = null;

  override async list(prefix: string, options: ListOptions = {}): Promise<ListPage> {
    const cursor = options.cursor ? atob(options.cursor) : null;
    const page = await super.list(prefix, { ...options, cursor });
    await this.afterList?.();
    return { ...page, nextCursor: page.nextCursor === null ? null : btoa(page.nextCursor) };
  }
}

async function setup() {
  const dir = await Deno.makeTempDir({ prefix: "abn-reconcile-" });
  const store = new OpaqueCursorStore({
    dataDir: dir,
    signer: new UrlSigner(new Uint8Array(32).fill(1)),
    publicUrl: "http://127.0.0.1:1",
  });
  await store.open();
  const db = new SqliteControlPlane(`${dir}/abn.sqlite`);
  const log = createLogger({ sink: () => {} });
  const catalog = new DatasetCatalog({ db, log });
  const deliveries = new DeliveryHub({ log, catalog, db });
  const heard: Delivery[] = [];
  deliveries.subscribe((d) => heard.push(d));
  const write = async (key: string, text: string): Promise<ObjectInfo> => {
    const writer = await store.createWriter(key);
    await writer.write(new TextEncoder().encode(text));
    return await writer.commit();
  };
  return {
    store,
    db,
    catalog,
    deliveries,
    heard,
    write,
    async close() {
      await db.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

const key = (org: string, id: string) => `org/${org}/experiments/${id}/latest.csv`;

Deno.test("reconcile adds objects written behind the service's back, replaces changed rows and removes deleted ones, page by page", async () => {
  const t = await setup();
  try {
    // Known to the catalog: same, changed (replaced since), gone (deleted since).
    const same = await t.write(key("o1", "same"), "1");
    const old = await t.write(key("o1", "changed"), "1");
    const gone = await t.write(key("o1", "gone"), "1");
    await t.catalog.record([same, old, gone], nowIso());
    await t.store.delete(gone.key);
    await new Promise((r) => setTimeout(r, 5));
    const changed = await t.write(key("o1", "changed"), "22");
    // Written straight into storage: two organizations, and a key that is not a dataset's.
    const fresh = [
      await t.write(key("o1", "a-new"), "1"),
      await t.write(key("o1", "x"), "1"),
      await t.write(key("o2", "y"), "1"),
    ];
    await t.write("org/o1/notes.txt", "not a dataset");
    const result = await reconcile({
      store: t.store,
      db: t.db,
      deliveries: t.deliveries,
      pageSize: 2,
    });
    assertEquals(result, { listed: 5, delivered: 4, removed: 1 });
    const rows = await t.db.datasets.keyRange("", null, 100);
    assertEquals(
      rows.map((r) => [r.key, r.etag]),
      [...fresh, same, changed].map((i) => [i.key, i.etag]).sort((a, b) => a[0] < b[0] ? -1 : 1),
    );
    assertEquals(
      t.heard.map((d) => `${d.experimentId}:${d.source}`).sort(),
      ["a-new:reconcile", "changed:reconcile", "x:reconcile", "y:reconcile"],
    );
    // A second run finds nothing to do.
    t.heard.length = 0;
    const again = await reconcile({
      store: t.store,
      db: t.db,
      deliveries: t.deliveries,
      pageSize: 2,
    });
    assertEquals(again, { listed: 5, delivered: 0, removed: 0 });
    assertEquals(t.heard, []);
  } finally {
    await t.close();
  }
});

Deno.test("reconcile never undoes a delivery committed while its listing ran", async () => {
  const t = await setup();
  try {
    const before = await t.write(key("o1", "busy"), "1");
    await t.catalog.record([before], nowIso());
    let raced = false;
    t.store.afterList = async () => {
      if (raced) return;
      raced = true;
      // After the page was listed: a re-delivery of "busy" and a new "late", recorded at commit.
      await new Promise((r) => setTimeout(r, 5));
      const again = await t.write(key("o1", "busy"), "22");
      const late = await t.write(key("o1", "late"), "1");
      await t.catalog.record([again, late], nowIso());
    };
    await reconcile({ store: t.store, db: t.db, deliveries: t.deliveries });
    const busy = await t.db.datasets.get("o1", "busy");
    assertEquals(busy?.etag, (await t.store.head(key("o1", "busy")))?.etag);
    assertEquals(busy?.size_bytes, 2);
    assertEquals((await t.db.datasets.get("o1", "late"))?.experiment_id, "late");
  } finally {
    await t.close();
  }
});

Deno.test("reconcile removes rows past the last listed key and of an emptied storage", async () => {
  const t = await setup();
  try {
    const kept = await t.write(key("o1", "a"), "1");
    const rows = ["b", "c", "d"].map((id) => ({
      key: key("o1", id),
      size: 1,
      etag: id,
      lastModified: new Date(),
    }));
    await t.catalog.record([kept, ...rows], nowIso());
    await new Promise((r) => setTimeout(r, 2));
    assertEquals(
      await reconcile({ store: t.store, db: t.db, deliveries: t.deliveries, pageSize: 1 }),
      { listed: 1, delivered: 0, removed: 3 },
    );
    await t.store.delete(kept.key);
    await new Promise((r) => setTimeout(r, 2));
    assertEquals(
      await reconcile({ store: t.store, db: t.db, deliveries: t.deliveries }),
      { listed: 0, delivered: 0, removed: 1 },
    );
    assertEquals(await t.db.datasets.keyRange("", null, 10), []);
  } finally {
    await t.close();
  }
});
