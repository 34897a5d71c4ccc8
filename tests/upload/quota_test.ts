/**
 * `StorageQuotas` over an in-memory catalog: the arithmetic of a quota (fresh uploads,
 * replacements counting their growth, bodies without a declared length refused at the crossing
 * byte), reservations of uploads arriving together, and when the figures are read again.
 */
import { assertEquals, assertMatch, assertRejects, assertThrows } from "../_assert.ts";
import { ServiceError } from "../../src/errors.ts";
import type { Org } from "../../src/db/control_plane.ts";
import { type QuotaDb, StorageQuotas } from "../../src/upload/quota.ts";

/** One organization's quota and dataset sizes, counting the reads. */
class MemoryDb implements QuotaDb {
  quota: number | null = null;
  sizes = new Map<string, number>();
  reads = { orgs: 0, sums: 0, gets: 0 };

  orgs = {
    get: (id: string): Promise<Org | null> => {
      this.reads.orgs++;
      return Promise.resolve({
        id,
        name: "acme",
        active: true,
        created_at: "2026-12-01T00:00:00.000Z",
        quota_bytes: this.quota,
      });
    },
  };

  datasets = {
    get: (org_id: string, experiment_id: string) => {
      this.reads.gets++;
      const size = this.sizes.get(experiment_id);
      return Promise.resolve(
        size === undefined ? null : {
          org_id,
          experiment_id,
          key: `org/${org_id}/experiments/${experiment_id}/latest.csv`,
          size_bytes: size,
          etag: "e",
          delivered_at: "2026-12-01T00:00:00.000Z",
          observed_at: "2026-12-01T00:00:00.000Z",
          analysis_status: "ready" as const,
        },
      );
    },
    storedBytes: () => {
      this.reads.sums++;
      return Promise.resolve([...this.sizes.values()].reduce((a, b) => a + b, 0));
    },
  };
}

const at = (experimentId: string) => ({ orgId: "org_a", experimentId });

function setup(quota: number | null, sizes: Record<string, number> = {}, defaultQuota?: number) {
  const db = new MemoryDb();
  db.quota = quota;
  for (const [id, size] of Object.entries(sizes)) db.sizes.set(id, size);
  return { db, quotas: new StorageQuotas({ db, defaultQuotaBytes: defaultQuota }) };
}

async function refused(promise: Promise<unknown>): Promise<ServiceError> {
  const error = await assertRejects(() => promise, ServiceError);
  assertEquals(error.code, "quota_exceeded");
  return error;
}

Deno.test("StorageQuotas admits a fresh upload up to the quota and refuses one byte more", async () => {
  const { quotas } = setup(1000, { old: 600 });
  (await quotas.admit(at("new"), 400)).release();
  const error = await refused(quotas.admit(at("new"), 401));
  assertMatch(error.message, /take 600 bytes of its storage quota of 1000 bytes/);
  assertMatch(error.message, /would add 401 bytes/);
  assertMatch(
    error.message,
    /\(DELETE \/api\/v1\/datasets\/\{experiment_id\}\/\) or ask the operator/,
  );
  // Sizes from 1 MiB on are also given in MB.
  const large = setup(10 * 1048576, { old: 9 * 1048576 });
  const mb = await refused(large.quotas.admit(at("new"), 1048577));
  assertMatch(
    mb.message,
    /take 9437184 bytes \(9\.0 MB\) of its storage quota of 10485760 bytes \(10\.0 MB\)/,
  );
});

Deno.test("StorageQuotas counts a replacement's growth only; one of equal size passes at the quota", async () => {
  const { quotas } = setup(1000, { a: 600, b: 400 });
  // At the quota: the same size again, or smaller, passes; one byte more does not.
  (await quotas.admit(at("b"), 400)).release();
  (await quotas.admit(at("b"), 10)).release();
  const error = await refused(quotas.admit(at("b"), 401));
  assertMatch(error.message, /upload of 401 bytes would add 1 byte;/);
  // Over the quota (it was lowered): a replacement that shrinks still passes.
  const lowered = setup(500, { a: 600 });
  (await lowered.quotas.admit(at("a"), 300)).release();
  await refused(lowered.quotas.admit(at("c"), 1));
});

Deno.test("StorageQuotas without a quota admits anything and reads no usage", async () => {
  const { db, quotas } = setup(null, { a: 10 ** 12 });
  const hold = await quotas.admit(at("b"), 10 ** 12);
  hold.see(10 ** 13);
  hold.stored(10 ** 12);
  await quotas.refuseGrant(at("b"), 10 ** 12);
  assertEquals(db.reads.sums, 0);
  // The default applies to an organization without a quota of its own; its own wins.
  const byDefault = setup(null, { a: 900 }, 1000);
  await refused(byDefault.quotas.admit(at("b"), 101));
  const own = setup(2000, { a: 900 }, 1000);
  (await own.quotas.admit(at("b"), 1100)).release();
});

Deno.test("StorageQuotas refuses a body without a declared length at the byte that crosses", async () => {
  const { quotas } = setup(1000, { a: 700, b: 100 });
  // Replacing b (100 bytes): 300 bytes may arrive in all (200 of growth).
  const hold = await quotas.admit(at("b"), null);
  hold.see(100);
  hold.see(300);
  const error = assertThrows(() => hold.see(302), ServiceError);
  assertEquals(error.code, "quota_exceeded");
  assertMatch(error.message, /exceeded at byte 301 of this upload/);
  assertMatch(error.message, /nothing was stored/);
  hold.release();
  // A fresh one over a full quota: refused at its first byte.
  const full = setup(800, { a: 800 });
  const fresh = await full.quotas.admit(at("new"), null);
  assertMatch(assertThrows(() => fresh.see(65536), ServiceError).message, /at byte 1 /);
});

Deno.test("StorageQuotas reserves the growth of uploads streaming together", async () => {
  const { db, quotas } = setup(1000, { a: 200 });
  const first = await quotas.admit(at("x"), 500);
  // 500 of the remaining 800 are on their way: 300 are left for others.
  const error = await refused(quotas.admit(at("y"), 301));
  assertMatch(error.message, /other uploads now arriving 500 bytes/);
  const chunked = await quotas.admit(at("z"), null);
  chunked.see(300);
  assertThrows(() => chunked.see(301), ServiceError, "at byte 301");
  await refused(quotas.admit(at("y"), 1)); // the chunked one holds the last 300
  chunked.release();
  // The first is stored: its bytes are now the catalog's, its reservation is gone.
  db.sizes.set("x", 500);
  first.stored(500);
  first.release();
  (await quotas.admit(at("y"), 300)).release();
  await refused(quotas.admit(at("y"), 301));
  // A refused or failed upload reserves nothing afterwards.
  const failed = await quotas.admit(at("w"), 300);
  failed.release();
  failed.release();
  (await quotas.admit(at("y"), 300)).release();
});

Deno.test("StorageQuotas refuses a grant at the quota, or one whose size_bytes would pass it", async () => {
  const { quotas } = setup(1000, { a: 600 });
  await quotas.refuseGrant(at("b"));
  await quotas.refuseGrant(at("b"), 400);
  assertMatch((await refused(quotas.refuseGrant(at("b"), 401))).message, /size_bytes 401/);
  await quotas.refuseGrant(at("a"), 1000); // replaces a: 400 of growth
  const full = setup(1000, { a: 1000 });
  const error = await refused(full.quotas.refuseGrant(at("a")));
  assertMatch(error.message, /Storage quota reached: .* take 1000 bytes of its storage quota/);
  await refused(full.quotas.refuseGrant(at("a"), 1000)); // at the quota, whatever the size
});

Deno.test("StorageQuotas reads the quota once a second and the usage once per refresh or after forget", async () => {
  const db = new MemoryDb();
  db.quota = 1000;
  db.sizes.set("a", 100);
  const quotas = new StorageQuotas({ db, refreshMs: 200, quotaCacheMs: 100 });
  for (let i = 0; i < 20; i++) (await quotas.admit(at(`e${i}`), 10)).release();
  assertEquals(db.reads, { orgs: 1, sums: 1, gets: 0 });
  // An upload this process stores joins the figure without a read (counted whole: it fits as
  // a new dataset, so the size of the one it may replace is not read).
  const hold = await quotas.admit(at("b"), 800);
  db.sizes.set("b", 800);
  hold.stored(800);
  assertEquals(db.reads, { orgs: 1, sums: 1, gets: 0 });
  // Near the quota: the dataset replaced is read, and the usage again (it counted b whole).
  await refused(quotas.admit(at("c"), 101));
  assertEquals(db.reads, { orgs: 1, sums: 2, gets: 1 });
  (await quotas.admit(at("b"), 900)).release(); // b grows by 100: fits
  // A dataset deleted (or noticed in storage) is seen at the next upload once forgotten.
  db.sizes.delete("b");
  await refused(quotas.admit(at("c"), 101));
  assertEquals(db.reads.sums, 2);
  quotas.forget("org_a");
  (await quotas.admit(at("c"), 101)).release();
  assertEquals(db.reads.sums, 3);
  // A quota changed by the operator applies within its cache time; the usage after a refresh.
  db.quota = 100;
  db.sizes.set("d", 500);
  await new Promise((resolve) => setTimeout(resolve, 250));
  await refused(quotas.admit(at("c"), 1));
  assertEquals([db.reads.orgs, db.reads.sums], [2, 4]);
});

Deno.test("StorageQuotas never refuses on a usage that counted a replacement whole", async () => {
  const { db, quotas } = setup(1000, { a: 600 });
  // Admitted whole (600 + 300 fits), stored as a replacement of a: the true usage is 300.
  const hold = await quotas.admit(at("a"), 300);
  db.sizes.set("a", 300);
  hold.stored(300);
  // Counted whole the usage would be 900; read again, 300 + 700 fits.
  (await quotas.admit(at("b"), 700)).release();
  await refused(quotas.admit(at("b"), 701));
});
