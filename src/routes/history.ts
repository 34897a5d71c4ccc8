/**
 * `GET /datasets/{id}/history/`: the experiment's snapshots (one per delivered content, see
 * `analysis/history/snapshot.ts`), oldest first, a page at a time (`?limit=&cursor=`, cursors
 * sealed like the dataset list's and bound to the organization and the experiment), or with
 * `?format=csv` the whole history as one CSV download. The stored figures are joined as text,
 * never parsed, so a year of nightly snapshots answers in a few milliseconds.
 */
import { type AppCtx, type AppRoutes, route } from "./deps.ts";
import { ApiError } from "../http/errors.ts";
import { jsonResponse } from "../http/json.ts";
import { parseExperimentId } from "../http/experiment_id.ts";
import { datasetKey } from "../storage/object_store.ts";
import { historyCsvHeader, historyCsvRows } from "../analysis/csv_export.ts";
import { snapshotJson } from "../analysis/history/snapshot.ts";
import { notFound, openCursor, pageLimit, sealCursor } from "./datasets.ts";

const CURSOR_SCOPE = "HISTORY";

/** The answer's format: `?format=json` (the default) or `csv`; 400 `invalid_json` otherwise. */
export function responseFormat(url: URL): "json" | "csv" {
  const format = url.searchParams.get("format");
  if (format === null || format === "" || format === "json") return "json";
  if (format === "csv") return "csv";
  throw new ApiError("invalid_json", `format must be json or csv, got ${JSON.stringify(format)}`);
}

/** A CSV download named `filename`. */
export function csvResponse(
  ctx: AppCtx,
  body: string,
  filename: string,
  headers: Record<string, string> = {},
): Response {
  const response = new Response(body, {
    headers: { "content-type": "text/csv; charset=utf-8" },
  });
  response.headers.set("content-disposition", `attachment; filename="${filename}"`);
  response.headers.set("x-request-id", ctx.requestId);
  for (const name in headers) response.headers.set(name, headers[name]);
  return response;
}

/** 404 unless the organization has this dataset stored (for a history without snapshots). */
async function requireStored(ctx: AppCtx, orgId: string, experimentId: string): Promise<void> {
  if (!(await ctx.deps.store.head(datasetKey(orgId, experimentId)))) throw notFound(experimentId);
}

async function history(ctx: AppCtx): Promise<Response> {
  const principal = await ctx.auth();
  const experimentId = parseExperimentId(ctx.params.experiment_id);
  ctx.logFields.experiment_id = experimentId;
  const orgId = principal.orgId;
  const db = ctx.deps.db;
  if (responseFormat(ctx.url) === "csv") {
    let body = historyCsvHeader();
    let after = 0;
    let count = 0;
    for (;;) {
      const page = await db.history.list(orgId, experimentId, after, 1000);
      for (const row of page) body += historyCsvRows(JSON.parse(snapshotJson(row)));
      count += page.length;
      if (page.length < 1000) break;
      after = page[page.length - 1].seq;
    }
    if (count === 0) await requireStored(ctx, orgId, experimentId);
    return csvResponse(ctx, body, `${experimentId}-history.csv`);
  }
  const limit = pageLimit(ctx.url);
  const given = ctx.url.searchParams.get("cursor") || null;
  let after = 0;
  if (given !== null) {
    const cursor = openCursor(ctx.deps.signer, orgId, given, CURSOR_SCOPE);
    const m = /^(.*)\n(\d{1,15})$/.exec(cursor);
    if (!m || m[1] !== experimentId) {
      throw new ApiError(
        "invalid_json",
        "cursor is not valid: pass the next_cursor of the previous page unchanged",
      );
    }
    after = Number(m[2]);
  }
  const rows = await db.history.list(orgId, experimentId, after, limit + 1);
  if (rows.length === 0 && after === 0) await requireStored(ctx, orgId, experimentId);
  const page = rows.slice(0, limit);
  const next = rows.length > limit
    ? sealCursor(
      ctx.deps.signer,
      orgId,
      `${experimentId}\n${page[page.length - 1].seq}`,
      CURSOR_SCOPE,
    )
    : null;
  const body = `{"snapshots":[${page.map(snapshotJson).join(",")}],"next_cursor":${
    JSON.stringify(next)
  }}`;
  return jsonResponse(body, 200, ctx.requestId);
}

export const historyRoutes: AppRoutes = [
  route("GET", "/api/v1/datasets/:experiment_id/history/", ["read"], history),
];
