/**
 * `GET /datasets/{id}/analysis/` (JSON, or with `?format=csv` one row per metric × variant) and
 * `GET|PUT /datasets/{id}/settings/`.
 */
import { type AppCtx, type AppRoutes, route } from "./deps.ts";
import { json } from "../http/context.ts";
import { parseExperimentId } from "../http/experiment_id.ts";
import { checkSettingsAgainstData, namesData, validateSettings } from "../analysis/settings.ts";
import { datasetKey } from "../storage/object_store.ts";
import { requireDataset } from "./datasets.ts";
import { readJson } from "./json_body.ts";
import { csvResponse, responseFormat } from "./history.ts";
import { analysisCsv } from "../analysis/csv_export.ts";

/** The analysis fields before it is ready (`dataset.columns` among them). */
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
  const { experimentId, info } = await requireDataset(ctx, principal.orgId);
  const view = await ctx.deps.analysis.ensure(principal.orgId, experimentId, info);
  const { dataset: read, ...result } = view.result ?? { ...EMPTY, dataset: { columns: null } };
  if (format === "csv") {
    // Until the analysis is ready: the header alone, and the status in a header.
    return csvResponse(ctx, analysisCsv(view.result ?? EMPTY), `${experimentId}-analysis.csv`, {
      "x-analysis-status": view.status,
    });
  }
  return json(ctx, {
    experiment_id: experimentId,
    status: view.status,
    error: view.error,
    dataset: {
      size_bytes: info.size,
      size_mb: info.size / 1048576,
      rows: view.rows,
      etag: info.etag,
      delivered_at: info.lastModified.toISOString(),
      columns: read.columns,
    },
    ...result,
    analysed_at: view.analysedAt,
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
  const body = await readJson(ctx);
  const settings = validateSettings(body);
  const key = datasetKey(principal.orgId, experimentId);
  const info = await ctx.deps.store.head(key);
  const analysed = info !== null && info.size <= ctx.deps.config.maxUploadBytes;
  // Settings that name variants or columns wait for the stored delivery's data (its analysis,
  // bounded); others need none (and so a change made while an analysis runs still re-runs it
  // once, afterwards).
  if (analysed && namesData(settings)) {
    const data = await ctx.deps.analysis.dataOf(principal.orgId, experimentId, info);
    if (data) checkSettingsAgainstData(settings, data);
  }
  await ctx.deps.db.settings.save(
    principal.orgId,
    experimentId,
    settings as Record<string, unknown>,
  );
  if (analysed) ctx.deps.analysis.rerun(principal.orgId, experimentId, info);
  return json(ctx, settings);
}

export const analysisRoutes: AppRoutes = [
  route("GET", "/api/v1/datasets/:experiment_id/analysis/", ["read"], analysis),
  route("GET", "/api/v1/datasets/:experiment_id/settings/", ["read"], readSettings),
  route("PUT", "/api/v1/datasets/:experiment_id/settings/", ["write"], writeSettings),
];
