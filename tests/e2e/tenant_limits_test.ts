/**
 * Limits that keep one organization from starving the others, on the real server and both
 * drivers: each organization's share of the upload slots (429 `too_many_uploads`) and its storage
 * quota (403 `quota_exceeded`, nothing stored).
 */
import { assert, assertApiError, assertEquals, assertMatch } from "../_assert.ts";
import { driverTest } from "../_drivers.ts";
import type { DriverServer } from "../_drivers.ts";
import { waitFor } from "../_faults.ts";

const encoder = new TextEncoder();
const VALID = await Deno.readFile(new URL("../testdata/small.csv", import.meta.url));
/** VALID and one more row: a few bytes larger. */
const LARGER = encoder.encode(new TextDecoder().decode(VALID) + "u5,A,2026-01-03,1,2\n");

function upload(
  server: DriverServer,
  experimentId: string,
  body: BodyInit,
  apiKey = server.apiKey,
): Promise<Response> {
  return fetch(`${server.api}/datasets/upload/?experiment_id=${encodeURIComponent(experimentId)}`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "text/csv" },
    body,
    signal: AbortSignal.timeout(60_000),
  });
}

function call(server: DriverServer, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${server.api}${path}`, {
    ...init,
    headers: {
      authorization: `Bearer ${server.apiKey}`,
      "content-type": "application/json",
      ...init.headers,
    },
  });
}

function initiate(server: DriverServer, experimentId: string, sizeBytes?: number) {
  return call(server, "/datasets/initiate/", {
    method: "POST",
    body: JSON.stringify({ experiment_id: experimentId, size_bytes: sizeBytes }),
  });
}

/** `bytes` as a chunked body (no Content-Length), in pieces of 16 bytes. */
function chunked(bytes: Uint8Array): ReadableStream<Uint8Array> {
  const pieces: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += 16) pieces.push(bytes.slice(at, at + 16));
  return ReadableStream.from(pieces);
}

/**
 * A valid dataset sent one row every 100 ms, without a declared length, until `finish()` (or
 * 30 s at most): an upload from a slow network that holds its slot meanwhile.
 */
function trickle(): { body: ReadableStream<Uint8Array>; finish: () => void } {
  let finished = false;
  const until = Date.now() + 30_000;
  let row = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (row === 0) {
        row++;
        return controller.enqueue(encoder.encode("user_id,variant,date,m\n"));
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
      controller.enqueue(encoder.encode(`u${row},${"AB"[row % 2]},2026-01-01,${row++}\n`));
      if (finished || Date.now() > until) controller.close();
    },
  });
  return { body, finish: () => finished = true };
}

async function inProgress(server: DriverServer): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  return Number(/^abn_uploads_in_progress (\d+)$/m.exec(text)?.[1]);
}

driverTest(
  "a trickling organization holds its 8 upload slots: its 9th gets 429 with Retry-After, another organization's upload 201",
  async (server) => {
    const other = await server.newOrg("other");
    const started = performance.now();
    const trickles = Array.from({ length: 8 }, () => trickle());
    const pending = trickles.map((t, i) => upload(server, `slow-${i}`, t.body));
    await waitFor(async () => (await inProgress(server)) === 8, "8 uploads in progress");

    const refused = await upload(server, "ninth", VALID);
    const error = await assertApiError(refused, 429, "too_many_uploads");
    assertMatch(error.message, /already sends 8 uploads at once/);
    const retryAfter = Number(refused.headers.get("retry-after"));
    assert(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `${retryAfter}`);
    if (server.driver === "local") {
      // The organization's upload URL takes from the same share.
      const grant = await (await initiate(server, "ninth")).json();
      const put = await fetch(grant.upload_url, { method: "PUT", body: VALID });
      await assertApiError(put, 429, "too_many_uploads");
    }
    // The others are not held up by this organization's uploads.
    const theirs = await upload(server, "fast", VALID, other.apiKey);
    assertEquals(theirs.status, 201, await theirs.text());
    assertEquals(await server.stored(server.orgId, "ninth"), null);

    trickles.forEach((t) => t.finish());
    for (const res of await Promise.all(pending)) assertEquals(res.status, 201, await res.text());
    assert(performance.now() - started < 30_000);
    assertEquals(await inProgress(server), 0);
    const after = await upload(server, "ninth", VALID);
    assertEquals(after.status, 201, await after.text());
  },
);

driverTest(
  "the storage quota: uploads up to it pass, a replacement counts its growth, nothing past it is stored",
  async (server) => {
    const quota = 2 * VALID.length;
    await server.service.db.orgs.setQuota(server.orgId, quota);
    assertEquals((await upload(server, "a", VALID)).status, 201);

    // A fresh upload over the quota: refused before its body, nothing stored.
    const over = await upload(server, "b", LARGER);
    const error = await assertApiError(over, 403, "quota_exceeded");
    assertMatch(error.message, new RegExp(`take ${VALID.length} bytes of its storage quota`));
    assertMatch(error.message, new RegExp(`of ${quota} bytes`));
    assertMatch(error.message, /delete datasets it no longer needs/);
    assertEquals(await server.stored(server.orgId, "b"), null);
    await assertApiError(await call(server, "/datasets/b/"), 404, "not_found");

    // Exactly up to the quota; then a replacement of equal size still passes.
    assertEquals((await upload(server, "b", VALID)).status, 201);
    assertEquals((await upload(server, "a", VALID)).status, 201);
    // Growth past the quota: refused declared, and chunked at the byte that crosses it; the
    // stored dataset stays as it was.
    await assertApiError(await upload(server, "a", LARGER), 403, "quota_exceeded");
    const crossing = await assertApiError(
      await upload(server, "a", chunked(LARGER)),
      403,
      "quota_exceeded",
    );
    assertMatch(crossing.message, new RegExp(`at byte ${VALID.length + 1} of this upload`));
    assertEquals(await server.stored(server.orgId, "a"), VALID);
    await assertApiError(await upload(server, "c", chunked(VALID)), 403, "quota_exceeded");
    assertEquals(await server.stored(server.orgId, "c"), null);
    // No upload URL while at the quota.
    const grant = await assertApiError(await initiate(server, "c"), 403, "quota_exceeded");
    assertMatch(grant.message, /Storage quota reached/);

    // Deleting a dataset makes room at once.
    assertEquals((await call(server, "/datasets/b/", { method: "DELETE" })).status, 200);
    await assertApiError(
      await initiate(server, "b", VALID.length + 1),
      403,
      "quota_exceeded",
    );
    const open = await initiate(server, "b");
    assertEquals(open.status, 200);
    const { upload_url } = await open.json();
    if (server.driver === "local") {
      // The local upload URL is held to the quota as a direct upload is.
      const put = await fetch(upload_url, { method: "PUT", body: LARGER });
      await assertApiError(put, 403, "quota_exceeded");
      assertEquals(await server.stored(server.orgId, "b"), null);
      assertEquals((await fetch(upload_url, { method: "PUT", body: VALID })).status, 200);
      assertEquals(await server.stored(server.orgId, "b"), VALID);
    }

    // Another organization has no quota (none by default).
    const other = await server.newOrg("other");
    assertEquals((await upload(server, "big", LARGER, other.apiKey)).status, 201);
    // Without its own quota again, the organization has none either.
    await server.service.db.orgs.setQuota(server.orgId, null);
    await new Promise((resolve) => setTimeout(resolve, 1100)); // the quota is read once a second
    assertEquals((await upload(server, "c", LARGER)).status, 201);
  },
);

driverTest(
  "ABN_ORG_QUOTA_BYTES holds organizations without a quota of their own",
  async (server) => {
    const other = await server.newOrg("other");
    await server.service.db.orgs.setQuota(other.orgId, 10 * VALID.length);
    assertEquals((await upload(server, "a", VALID)).status, 201);
    await assertApiError(await upload(server, "b", VALID), 403, "quota_exceeded");
    assertEquals((await upload(server, "a", VALID, other.apiKey)).status, 201);
    assertEquals((await upload(server, "b", VALID, other.apiKey)).status, 201);
  },
  { ABN_ORG_QUOTA_BYTES: String(VALID.length + 10) },
);
