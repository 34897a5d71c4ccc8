/**
 * The audit trail over HTTP (docs/api.md, "Audit trail"), on both storage drivers: one event per
 * action with its facts (a direct upload, a two-step delivery naming the key that asked for its
 * URL, settings changes with before and after, a deletion, key changes), newest first, paged with
 * a cursor, filtered by action, the organization's own only; and the clean-up's deletions and
 * retention.
 */
import { assert, assertApiError, assertEquals } from "../_assert.ts";
import { type DriverServer, driverTest } from "../_drivers.ts";
import { startTestServer } from "../_server.ts";
import { writeBody } from "../../src/storage/object_store.ts";
import { byteSource } from "../../src/byte_source.ts";

const VALID = await Deno.readFile(new URL("../testdata/small.csv", import.meta.url));

interface Event {
  id: string;
  at: string;
  action: string;
  key_id: string | null;
  experiment_id: string | null;
  details: Record<string, unknown>;
}

function call(server: { api: string }, apiKey: string, path: string, init: RequestInit = {}) {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${apiKey}`);
  return fetch(`${server.api}${path}`, { ...init, headers });
}

async function ok(res: Response, status = 200) {
  const text = await res.text();
  assertEquals(res.status, status, text);
  return text === "" ? null : JSON.parse(text);
}

/** Every event of the organization, page after page of `limit`. */
async function allEvents(server: DriverServer, apiKey: string, query: string, limit: number) {
  const events: Event[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const next = cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`;
    const page = await ok(await call(server, apiKey, `/audit/?limit=${limit}${query}${next}`));
    assert(page.events.length <= limit);
    events.push(...page.events);
    cursor = page.next_cursor;
    pages++;
  } while (cursor !== null);
  return { events, pages };
}

driverTest(
  "each action is one audit event with its facts, newest first, paged, filtered and the organization's own",
  async (server) => {
    const db = server.service.db;
    const adminKeyId = (await db.keys.list(server.orgId))[0].key_id;
    const uploader = await db.keys.create(server.orgId, { name: "pipeline", scopes: ["upload"] });

    const direct = await ok(
      await call(server, server.apiKey, "/datasets/upload/?experiment_id=direct", {
        method: "POST",
        body: VALID,
      }),
      201,
    );
    const grant = await ok(
      await call(server, uploader.api_key, "/datasets/initiate/", {
        method: "POST",
        body: JSON.stringify({ experiment_id: "twostep" }),
      }),
    );
    const put = await fetch(grant.upload_url, { method: "PUT", body: VALID });
    assertEquals(put.status, 200, await put.text());
    // On S3 the PUT bypasses the service: the scan of open grants notices it.
    if (server.driver !== "local") await server.service.jobs.scan.runOnce();
    const twoStepEtag = (await server.service.store.head(grant.key))?.etag;

    const settings1 = await ok(
      await call(server, server.apiKey, "/datasets/direct/settings/", {
        method: "PUT",
        body: JSON.stringify({ mde: 0.1 }),
      }),
    );
    const settings2 = await ok(
      await call(server, server.apiKey, "/datasets/direct/settings/", {
        method: "PUT",
        body: JSON.stringify({ mde: 0.2, alpha: 0.01 }),
      }),
    );
    await ok(await call(server, server.apiKey, "/datasets/direct/", { method: "DELETE" }));
    const made = await ok(
      await call(server, server.apiKey, "/keys/", {
        method: "POST",
        body: JSON.stringify({ name: "analyst", scopes: ["read"] }),
      }),
      201,
    );
    const rotated = await ok(
      await call(server, server.apiKey, `/keys/${made.key_id}/rotate/`, {
        method: "POST",
        body: JSON.stringify({ overlap_hours: 1 }),
      }),
      201,
    );
    await ok(
      await call(server, server.apiKey, `/keys/${rotated.key_id}/`, { method: "DELETE" }),
      204,
    );

    const page = await ok(await call(server, server.apiKey, "/audit/"));
    assertEquals(page.next_cursor, null);
    const events: Event[] = page.events;
    assertEquals(events.map((e) => e.action), [
      "key.revoked",
      "key.rotated",
      "key.created",
      "dataset.deleted",
      "settings.changed",
      "settings.changed",
      "dataset.delivered",
      "dataset.delivered",
    ]);
    const [revoked, rotation, creation, deletion, second, first, twoStep, upload] = events;
    assertEquals(upload, {
      id: upload.id,
      at: upload.at,
      action: "dataset.delivered",
      key_id: adminKeyId,
      experiment_id: "direct",
      details: {
        route: "direct",
        size_bytes: VALID.length,
        etag: direct.etag,
        sha256: direct.sha256,
      },
    });
    assertEquals([twoStep.key_id, twoStep.experiment_id], [uploader.info.key_id, "twostep"]);
    assertEquals(twoStep.details, {
      route: server.driver === "local" ? "upload_url" : "two_step",
      size_bytes: VALID.length,
      etag: twoStepEtag,
    });
    assertEquals(first.details, { before: null, after: settings1 });
    assertEquals(second.details, { before: settings1, after: settings2 });
    assertEquals([second.key_id, second.experiment_id], [adminKeyId, "direct"]);
    assertEquals(deletion.details, { size_bytes: VALID.length, etag: direct.etag });
    assertEquals(deletion.experiment_id, "direct");
    assertEquals([creation.key_id, creation.experiment_id], [adminKeyId, null]);
    assertEquals(creation.details.target_key_id, made.key_id);
    assertEquals(creation.details.scopes, ["read"]);
    assertEquals(creation.details.name, "analyst");
    assertEquals(rotation.details.target_key_id, made.key_id);
    assertEquals(rotation.details.new_key_id, rotated.key_id);
    assertEquals(rotation.details.overlap_hours, 1);
    assertEquals(revoked.details.target_key_id, rotated.key_id);
    assert(!JSON.stringify(events).includes(made.api_key), "a secret in the audit trail");
    const times = events.map((e) => Date.parse(e.at));
    assertEquals([...times].sort((a, b) => b - a), times);

    // Pages of 3 give the same events in the same order; the filter keeps one action.
    const paged = await allEvents(server, server.apiKey, "", 3);
    assertEquals(paged.pages, 3);
    assertEquals(paged.events, events);
    const delivered = await allEvents(server, server.apiKey, "&action=dataset.delivered", 1);
    assertEquals(delivered.events, [twoStep, upload]);
    assertEquals(
      (await ok(await call(server, server.apiKey, "/audit/?action=webhook.created"))).events,
      [],
    );
    for (
      const query of ["limit=0", "limit=201", "limit=ten", "cursor=abc", "action=DROP%20TABLE"]
    ) {
      await assertApiError(
        await call(server, server.apiKey, `/audit/?${query}`),
        400,
        "invalid_json",
      );
    }

    // Another organization sees none of it, and its own actions only.
    const other = await server.newOrg("other");
    assertEquals((await ok(await call(server, other.apiKey, "/audit/"))).events, []);
    await ok(
      await call(server, other.apiKey, "/datasets/upload/?experiment_id=direct", {
        method: "POST",
        body: VALID,
      }),
      201,
    );
    const theirs: Event[] = (await ok(await call(server, other.apiKey, "/audit/"))).events;
    assertEquals(theirs.map((e) => e.action), ["dataset.delivered"]);
    assertEquals((await ok(await call(server, server.apiKey, "/audit/"))).events, events);
  },
  { ABN_SCAN_INTERVAL_SECONDS: "3600" },
);

Deno.test("the clean-up audits the datasets it deletes and forgets events past the retention", async () => {
  const server = await startTestServer({
    ABN_MAX_UPLOAD_BYTES: "64",
    ABN_AUDIT_RETENTION_DAYS: "2",
  });
  try {
    const { db, store, deliveries } = server.service;
    // A dataset over the limit in storage (as a lowered limit leaves behind), in the catalog.
    const key = `org/${server.orgId}/experiments/big/latest.csv`;
    const writer = await store.createWriter(key);
    await writeBody(byteSource(ReadableStream.from([VALID])), writer, 65536);
    const info = await writer.commit();
    await deliveries.deliver({
      orgId: server.orgId,
      experimentId: "big",
      key,
      info,
      validated: false,
      source: "scan",
    });
    const day = 86_400_000;
    const old = (days: number, id: string) => ({
      id,
      org_id: server.orgId,
      at: new Date(Date.now() - days * day).toISOString(),
      action: "key.created" as const,
      key_id: null,
      experiment_id: null,
      details: {},
    });
    await db.audit.record([old(3, "evt_old"), old(1, "evt_recent")]);
    await server.service.jobs.cleanup.runOnce();
    assertEquals(await store.head(key), null);
    const events: Event[] = (await ok(await call(server, server.apiKey, "/audit/"))).events;
    assertEquals(events.map((e) => [e.action, e.key_id, e.experiment_id]), [
      ["dataset.deleted", null, "big"],
      ["key.created", null, null],
    ]);
    assertEquals(events[0].details, {
      reason: "over_limit",
      size_bytes: info.size,
      etag: info.etag,
    });
    assertEquals(events[1].id, "evt_recent");
  } finally {
    await server.close();
  }
});
