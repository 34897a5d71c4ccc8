/**
 * Listings of more than one page on Ceph's gateway: 2,500 datasets, listed through the driver,
 * reconciliation (storage → catalog) and the API. The gateway keeps a bucket's index in shards and answers short pages
 * before the last (about 940 of 1,000 keys on the second page here) with continuation tokens of
 * its own: a short page must not be taken for the end. (s3rver, run by Node as the fixture does,
 * pages 2,500 keys too, but always in full pages.)
 */
import { PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { assert, assertEquals } from "../_assert.ts";
import { rgwTest } from "../_drivers.ts";
import type { DriverServer } from "../_drivers.ts";
import { reconcile } from "../../src/catalog/reconcile.ts";

const COUNT = 2_500;
const CSV = "user_id,variant,date,m\nu1,A,2026-01-01,1\n";

/** Stores `count` datasets under the organization straight into the bucket, 16 at a time. */
async function putDatasets(server: DriverServer, orgId: string, count: number): Promise<string[]> {
  const s3 = server.s3!;
  const client = new S3Client({
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  });
  const ids = Array.from({ length: count }, (_, i) => `exp-${String(i).padStart(5, "0")}`);
  try {
    let next = 0;
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (next < ids.length) {
        const id = ids[next++];
        await client.send(
          new PutObjectCommand({
            Bucket: s3.bucket,
            Key: `org/${orgId}/experiments/${id}/latest.csv`,
            Body: CSV,
            ContentType: "text/csv",
          }),
        );
      }
    }));
  } finally {
    client.destroy();
  }
  return ids;
}

rgwTest(
  `${
    COUNT.toLocaleString("en")
  } datasets: the driver, reconciliation and the API list each once, page by page`,
  async (server) => {
    const ids = await putDatasets(server, server.orgId, COUNT);
    const other = await server.newOrg("other");
    const theirs = await putDatasets(server, other.orgId, 3);

    // The driver: pages of at most 1,000 keys, in key order, each key once.
    const store = server.service.store;
    const pages: number[] = [];
    const keys: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await store.list(`org/${server.orgId}/`, { limit: 1000, cursor });
      pages.push(page.objects.length);
      keys.push(...page.objects.map((object) => object.key));
      cursor = page.nextCursor;
    } while (cursor !== null && pages.length < 20);
    assertEquals(keys.length, COUNT, `pages ${pages}`);
    assertEquals(keys, ids.map((id) => `org/${server.orgId}/experiments/${id}/latest.csv`));
    assert(pages.length >= 3 && pages.every((n) => n <= 1000), `pages ${pages}`);

    // Reconciliation over every organization (written straight into the bucket, so only it can
    // tell the catalog), with the store's own cursor.
    const { db, deliveries } = server.service;
    const result = await reconcile({ store, db, deliveries });
    assertEquals(result.listed, COUNT + theirs.length);
    assertEquals(result.delivered, COUNT + theirs.length);
    assertEquals(result.removed, 0);
    const again = await reconcile({ store, db, deliveries });
    assertEquals([again.listed, again.delivered, again.removed], [COUNT + theirs.length, 0, 0]);

    // The API: the same datasets from the catalog through its signed cursors, nothing of the other organization.
    const listed: string[] = [];
    let next: string | null = null;
    let calls = 0;
    do {
      const query: string = next === null
        ? "limit=1000"
        : `limit=1000&cursor=${encodeURIComponent(next)}`;
      const res: Response = await fetch(`${server.api}/datasets/?${query}`, {
        headers: { authorization: `Bearer ${server.apiKey}` },
      });
      assertEquals(res.status, 200);
      const body: { datasets: { experiment_id: string }[]; next_cursor: string | null } = await res
        .json();
      listed.push(...body.datasets.map((d: { experiment_id: string }) => d.experiment_id));
      next = body.next_cursor;
      calls++;
    } while (next !== null && calls < 20);
    assertEquals(listed, ids);
    const res = await fetch(`${server.api}/datasets/`, {
      headers: { authorization: `Bearer ${other.apiKey}` },
    });
    const body = await res.json();
    assertEquals(body.datasets.map((d: { experiment_id: string }) => d.experiment_id), theirs);
    assertEquals(body.next_cursor, null);

    // No timer run while the datasets are put: each would race the explicit reconciliation.
  },
  { ABN_SCAN_INTERVAL_SECONDS: "3600" },
);
