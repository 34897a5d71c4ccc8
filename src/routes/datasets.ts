/**
 * The organization's datasets: `GET /datasets/`, `GET|DELETE /datasets/{id}/`,
 * `GET /datasets/{id}/file/`. The list and the show read the dataset catalog, so their cost
 * follows what is asked for, not what is stored; a two-step delivery shows at once because the
 * keys of the organization's open upload grants are `head`ed first (S3 only: local upload URLs
 * are PUT through this process, which records them at commit). Until the first reconciliation
 * after start-up has finished, the list reads storage instead and the show confirms with a head.
 */
import { type AppCtx, type AppRoutes, route } from "./deps.ts";
import { json } from "../http/context.ts";
import { ApiError } from "../http/errors.ts";
import { megabytes } from "../errors.ts";
import { parseExperimentId } from "../http/experiment_id.ts";
import { queryParam } from "../http/query.ts";
import type { ObjectInfo } from "../storage/object_store.ts";
import { Buffer } from "node:buffer";
import { datasetKey, orgPrefix, parseDatasetKey } from "../storage/object_store.ts";
import type { UrlSigner } from "../crypto/url_signer.ts";
import type { AnalysisStatus, DatasetRow } from "../db/control_plane.ts";
import { nowIso } from "../db/control_plane.ts";
import { infoOfRow, openGrantsSince } from "../catalog/dataset_catalog.ts";
import { headGrants } from "../catalog/grant_scan.ts";
import type { AppDeps } from "./deps.ts";
import { auditTwoStep, storedGrant } from "../audit/two_step_audit.ts";

export function notFound(experimentId: string): ApiError {
  return new ApiError(
    "not_found",
    `No dataset for experiment_id ${experimentId} is in storage: check that the upload (or the PUT to the upload URL) finished with 200/201`,
  );
}

export function tooLarge(experimentId: string, size: number, limit: number): ApiError {
  return new ApiError(
    "dataset_too_large",
    `The dataset of ${experimentId} is ${megabytes(size, 1)} MB, above the ${
      megabytes(limit)
    } MB limit: shrink the dataset, drop unneeded columns, or split it over several experiment_ids. It will be deleted automatically.`,
  );
}

/** A stored dataset as the list and the show describe it. */
export interface StoredDataset {
  experimentId: string;
  key: string;
  info: ObjectInfo;
  /** The analysis status of this object (`pending` until its analysis is saved). */
  status: AnalysisStatus;
}

function fromRow(row: DatasetRow): StoredDataset {
  return {
    experimentId: row.experiment_id,
    key: row.key,
    info: infoOfRow(row),
    status: row.analysis_status,
  };
}

export function describe(dataset: StoredDataset, limit: number) {
  const { info } = dataset;
  return {
    experiment_id: dataset.experimentId,
    size_bytes: info.size,
    size_mb: info.size / 1048576,
    updated_at: info.lastModified.toISOString(),
    etag: info.etag,
    analysis_status: info.size > limit ? "too_large" : dataset.status,
  };
}

/**
 * The stored dataset of an experiment, or null. Reads the catalog and confirms with one `head`
 * only where the catalog may not know yet: no row, an open upload grant for the key, or no
 * reconciliation since start-up. What the head finds is delivered (recorded and analysed);
 * a row whose object is gone is removed.
 */
export async function findDataset(
  deps: AppDeps,
  orgId: string,
  experimentId: string,
): Promise<StoredDataset | null> {
  const { db, store, deliveries } = deps;
  const key = datasetKey(orgId, experimentId);
  const row = await db.datasets.get(orgId, experimentId);
  const confirm = row === null || !deps.catalog.ready || await hasOpenGrant(deps, key);
  if (!confirm) return fromRow(row);
  const observedAt = nowIso();
  const info = await store.head(key);
  if (info === null) {
    if (row !== null) await db.datasets.remove(orgId, experimentId, observedAt);
    return null;
  }
  if (row !== null && row.etag === info.etag && row.size_bytes === info.size) return fromRow(row);
  await deliveries.deliver(
    { orgId, experimentId, key, info, validated: false, source: "scan" },
    observedAt,
  );
  // Where grants are recorded, the object came by a PUT that bypassed this process.
  if (deps.grants !== undefined) {
    auditTwoStep(deps.audit, { orgId, experimentId, info }, await storedGrant(db, key, deps.log));
  }
  const recorded = await db.datasets.get(orgId, experimentId);
  return recorded?.etag === info.etag
    ? fromRow(recorded)
    : { experimentId, key, info, status: await db.analyses.status(orgId, experimentId, info.etag) };
}

/** True when an upload grant for `key` is open (S3; grants not yet written included). */
async function hasOpenGrant(deps: AppDeps, key: string): Promise<boolean> {
  if (deps.grants === undefined) return false;
  await deps.grants.flush();
  return await deps.db.grants.get(key, openGrantsSince()) !== null;
}

/** The stored dataset of the path's experiment: 404 when none, 400 when over the limit. */
export async function requireDataset(
  ctx: AppCtx,
  orgId: string,
  options: { allowTooLarge?: boolean } = {},
): Promise<StoredDataset> {
  const experimentId = parseExperimentId(ctx.params.experiment_id);
  ctx.logFields.experiment_id = experimentId;
  const dataset = await findDataset(ctx.deps, orgId, experimentId);
  if (!dataset) throw notFound(experimentId);
  const size = dataset.info.size;
  if (!options.allowTooLarge && size > ctx.deps.config.maxUploadBytes) {
    throw tooLarge(experimentId, size, ctx.deps.config.maxUploadBytes);
  }
  return dataset;
}

/**
 * A list cursor is the last item of the previous page (an experiment_id; a snapshot number for
 * the history), sealed with the service's HMAC and bound to the organization: a cursor the service
 * did not issue to this organization is refused with 400. The same cursor continues a page read
 * from the catalog or from storage. `scope` keeps the cursors of different lists apart (`LIST`
 * for this one; the history's are its own).
 */
export function sealCursor(
  signer: UrlSigner,
  orgId: string,
  cursor: string,
  scope = "LIST",
): string {
  const signature = new URLSearchParams(signer.sign(scope, `${orgId}\n${cursor}`, 0))
    .get("signature");
  return `${Buffer.from(cursor).toString("base64url")}.${signature}`;
}

export function openCursor(
  signer: UrlSigner,
  orgId: string,
  sealed: string,
  scope = "LIST",
): string {
  const m = /^([A-Za-z0-9_-]{1,2048})\.([A-Za-z0-9_-]{43})$/.exec(sealed);
  if (m) {
    const cursor = Buffer.from(m[1], "base64url").toString();
    const params = new URLSearchParams({ expires: "0", signature: m[2] });
    // The signature matched when the only complaint is the (deliberately past) expiry.
    if (signer.verify(scope, `${orgId}\n${cursor}`, params).result === "expired") {
      // A storage key (the local driver's cursor before the catalog): its experiment.
      return parseDatasetKey(cursor)?.experimentId ?? cursor;
    }
  }
  throw new ApiError(
    "invalid_json",
    "cursor is not valid: pass the next_cursor of the previous page unchanged",
  );
}

/** A page of the catalog, after the org's open grants were looked at. */
async function catalogPage(
  deps: AppDeps,
  orgId: string,
  after: string | null,
  limit: number,
): Promise<{ datasets: StoredDataset[]; last: string | null }> {
  if (deps.grants !== undefined) {
    await deps.grants.flush(); // grants handed out in the last 50 ms too
    const grants = await deps.db.grants.open(openGrantsSince(), orgId);
    if (grants.length > 0) {
      // The page is still right without them: a failing head is the timer's to retry.
      await headGrants(deps, grants).catch((error) => {
        deps.log.warn("open grants not looked at for the list", {
          org_id: orgId,
          error: error instanceof Error ? error.message : String(error),
        });
      });
    }
  }
  const rows = await deps.db.datasets.page(orgId, { after, limit: limit + 1 });
  const datasets = rows.slice(0, limit).map(fromRow);
  return { datasets, last: rows.length > limit ? datasets[limit - 1].experimentId : null };
}

/** A page of a storage listing (before the first reconciliation), after the same cursor. */
async function storagePage(
  deps: AppDeps,
  orgId: string,
  after: string | null,
  limit: number,
): Promise<{ datasets: StoredDataset[]; last: string | null }> {
  const page = await deps.store.list(orgPrefix(orgId), {
    limit,
    startAfter: after === null ? null : datasetKey(orgId, after),
  });
  const datasets: StoredDataset[] = [];
  for (const info of page.objects) {
    const parsed = parseDatasetKey(info.key);
    if (!parsed || parsed.orgId !== orgId) continue;
    const status = await deps.db.analyses.status(orgId, parsed.experimentId, info.etag);
    datasets.push({ experimentId: parsed.experimentId, key: info.key, info, status });
  }
  const lastKey = page.objects.at(-1)?.key;
  const last = page.nextCursor === null || lastKey === undefined
    ? null
    : parseDatasetKey(lastKey)?.experimentId ?? null;
  return { datasets, last };
}

/** The `limit` of a paged list: 1 to 1000, 1000 when absent (400 `invalid_json` otherwise). */
export function pageLimit(url: URL): number {
  const limitText = queryParam(url, "limit");
  const limit = limitText === null ? 1000 : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
    throw new ApiError("invalid_json", "limit must be a whole number from 1 to 1000");
  }
  return limit;
}

async function list(ctx: AppCtx): Promise<Response> {
  const principal = await ctx.auth();
  const limit = pageLimit(ctx.url);
  const signer = ctx.deps.signer;
  const given = queryParam(ctx.url, "cursor") || null;
  const after = given === null ? null : openCursor(signer, principal.orgId, given);
  const read = ctx.deps.catalog.ready ? catalogPage : storagePage;
  const { datasets, last } = await read(ctx.deps, principal.orgId, after, limit);
  const maxBytes = ctx.deps.config.maxUploadBytes;
  return json(ctx, {
    datasets: datasets.map((dataset) => describe(dataset, maxBytes)),
    next_cursor: last === null ? null : sealCursor(signer, principal.orgId, last),
  });
}

async function show(ctx: AppCtx): Promise<Response> {
  const principal = await ctx.auth();
  const dataset = await requireDataset(ctx, principal.orgId);
  return json(ctx, {
    ...describe(dataset, ctx.deps.config.maxUploadBytes),
    key: dataset.key,
  });
}

async function download(ctx: AppCtx): Promise<Response> {
  const principal = await ctx.auth();
  const experimentId = parseExperimentId(ctx.params.experiment_id);
  const object = await ctx.deps.store.get(datasetKey(principal.orgId, experimentId));
  if (!object) throw notFound(experimentId);
  // A HEAD sends no body: release the opened file (or storage connection) at once instead of
  // leaving it open until garbage collection.
  if (ctx.req.method === "HEAD") await object.body.cancel().catch(() => {});
  return new Response(ctx.req.method === "HEAD" ? null : object.body, {
    headers: {
      "content-type": "text/csv; charset=utf-8",
      "content-length": String(object.info.size),
      "content-disposition": `attachment; filename="${experimentId}.csv"`,
      etag: `"${object.info.etag}"`,
      "x-request-id": ctx.requestId,
    },
  });
}

async function remove(ctx: AppCtx): Promise<Response> {
  const principal = await ctx.auth();
  const { db, store } = ctx.deps;
  const experimentId = parseExperimentId(ctx.params.experiment_id);
  ctx.logFields.experiment_id = experimentId;
  const key = datasetKey(principal.orgId, experimentId);
  // Storage decides whether there is something to delete.
  const checkedAt = nowIso();
  const stored = await store.head(key);
  if (!stored) {
    await db.datasets.remove(principal.orgId, experimentId, checkedAt);
    throw notFound(experimentId);
  }
  // The analysis and the history first: when the database cannot be written, nothing is deleted (503, retry);
  // when storage then fails, the file stays and the timer analyses it again.
  await db.analyses.delete(principal.orgId, experimentId);
  await db.history.delete(principal.orgId, experimentId);
  await db.deliverySummaries.delete(principal.orgId, experimentId);
  await store.delete(key);
  // A delivery committed after this keeps its row (it is observed later).
  await db.datasets.remove(principal.orgId, experimentId, nowIso());
  await ctx.deps.audit.write({
    orgId: principal.orgId,
    action: "dataset.deleted",
    keyId: principal.keyId,
    experimentId,
    details: { size_bytes: stored.size, etag: stored.etag },
  });
  ctx.deps.quotas.forget(principal.orgId);
  return json(ctx, { deleted: true, experiment_id: experimentId });
}

export const datasetRoutes: AppRoutes = [
  route("GET", "/api/v1/datasets/", ["read"], list),
  route("GET", "/api/v1/datasets/:experiment_id/", ["read"], show),
  route("DELETE", "/api/v1/datasets/:experiment_id/", ["write"], remove),
  route("GET", "/api/v1/datasets/:experiment_id/file/", ["read"], download),
];
