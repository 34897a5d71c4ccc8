/**
 * `GET /datasets/{id}/analysis/` (JSON, or with `?format=csv` one row per metric × variant) and
 * `GET|PUT /datasets/{id}/settings/`.
 */
import type { AppCtx, AppRoutes } from "./deps.ts";
import { json } from "../http/context.ts";
import { parseExperimentId } from "../http/experiment_id.ts";
import { checkSettingsAgainstData, validateSettings } from "../analysis/settings.ts";
import type { Aggregate } from "../analysis/aggregate/aggregate_types.ts";
import { datasetKey } from "../storage/object_store.ts";
import { requireDataset } from "./datasets.ts";
import { readJsonObject } from "./initiate.ts";
import { csvResponse, responseFormat } from "./history.ts";
import { analysisCsv } from "../analysis/csv_export.ts";

const EMPTY = {
  control: null,
  key_metric: null,
  variants: null,
  srm: null,
  sample: null,
  metrics: null,
  win_probability: null,
  daily: null,
  dimensions: null,
  changes: null,
  warnings: [],
};

async function analysis(ctx: AppCtx): Promise<Response> {
  const principal = await ctx.auth();
  const format = responseFormat(ctx.url);
  const { experimentId, key, info } = await requireDataset(ctx, principal.orgId);
  const row = await ctx.deps.db.analyses.get(principal.orgId, experimentId);
  const current = row !== null && row.etag === info.etag;
  if (!current || row.status === "pending") {
    // Self-healing: make sure this delivery is on its way (two-step deliveries not yet scanned).
    ctx.deps.deliveries.publish({
      orgId: principal.orgId,
      experimentId,
      key,
      info,
      validated: false,
      source: "scan",
    });
  }
  const dataset = {
    size_bytes: info.size,
    size_mb: info.size / 1048576,
    rows: current ? row.rows : null,
    etag: info.etag,
    delivered_at: info.lastModified.toISOString(),
  };
  const status = current ? row.status : "pending";
  const { _data: _, ...result } = current && row.status === "ready" && row.result
    ? JSON.parse(row.result)
    : EMPTY;
  if (format === "csv") {
    // Until the analysis is ready: the header alone, and the status in a header.
    return csvResponse(ctx, analysisCsv(result), `${experimentId}-analysis.csv`, {
      "x-analysis-status": status,
    });
  }
  return json(ctx, {
    experiment_id: experimentId,
    status,
    error: current && row.status === "failed" ? row.error : null,
    dataset,
    ...result,
    analysed_at: current ? row.finished_at : null,
  });
}

async function readSettings(ctx: AppCtx): Promise<Response> {
  const principal = await ctx.auth();
  const experimentId = parseExperimentId(ctx.params.experiment_id);
  return json(ctx, (await ctx.deps.db.settings.get(principal.orgId, experimentId)) ?? {});
}

async function writeSettings(ctx: AppCtx): Promise<Response> {
  const principal = await ctx.auth();
  const experimentId = parseExperimentId(ctx.params.experiment_id);
  const body = await readJsonObject(ctx.req);
  const settings = validateSettings(body);
  const key = datasetKey(principal.orgId, experimentId);
  const info = await ctx.deps.store.head(key);
  if (info) {
    const row = await ctx.deps.db.analyses.get(principal.orgId, experimentId);
    const data = row?.status === "ready" && row.result ? JSON.parse(row.result)._data : null;
    if (data) checkSettingsAgainstData(settings, data as Aggregate);
  }
  await ctx.deps.db.settings.save(
    principal.orgId,
    experimentId,
    settings as Record<string, unknown>,
  );
  if (info && info.size <= ctx.deps.config.maxUploadBytes) {
    ctx.deps.deliveries.publish({
      orgId: principal.orgId,
      experimentId,
      key,
      info,
      validated: false,
      source: "settings",
    });
  }
  return json(ctx, settings);
}

export const analysisRoutes: AppRoutes = [
  ["GET", "/api/v1/datasets/:experiment_id/analysis/", analysis],
  ["GET", "/api/v1/datasets/:experiment_id/settings/", readSettings],
  ["PUT", "/api/v1/datasets/:experiment_id/settings/", writeSettings],
];
