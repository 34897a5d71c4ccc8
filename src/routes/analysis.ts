/**
 * `GET /datasets/{id}/analysis/` (JSON, or with `?format=csv` one row per metric × variant) and
 * `GET|PUT /datasets/{id}/settings/`.
 */
import type { AppCtx, AppRoutes } from "./deps.ts";
import { json } from "../http/context.ts";
import { parseExperimentId } from "../http/experiment_id.ts";
import { checkSettingsAgainstData, namesData, validateSettings } from "../analysis/settings.ts";
import type { Aggregate } from "../analysis/aggregate/aggregate_types.ts";
import { datasetKey, type ObjectInfo } from "../storage/object_store.ts";
import { requireDataset } from "./datasets.ts";
import { readJson } from "./json_body.ts";
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

/**
 * Self-healing: makes sure the stored delivery `info` is on its way to an analysis (a two-step
 * delivery the scan has not noticed yet); joins its run if it already is.
 */
function onItsWay(
  ctx: AppCtx,
  orgId: string,
  experimentId: string,
  key: string,
  info: ObjectInfo,
): void {
  ctx.deps.deliveries.publish({ orgId, experimentId, key, info, validated: false, source: "scan" });
}

async function analysis(ctx: AppCtx): Promise<Response> {
  const principal = await ctx.auth();
  const format = responseFormat(ctx.url);
  const { experimentId, key, info } = await requireDataset(ctx, principal.orgId);
  const row = await ctx.deps.db.analyses.get(principal.orgId, experimentId);
  const current = row !== null && row.etag === info.etag;
  if (!current || row.status === "pending") onItsWay(ctx, principal.orgId, experimentId, key, info);
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

/**
 * How long a settings `PUT` waits for the stored delivery's analysis (queued then if it was not
 * yet), to check the settings against its data: an analysis of the largest file takes a few
 * seconds. Past it, the settings are saved unchecked, as before a first delivery.
 */
const SETTINGS_CHECK_WAIT_MS = 20_000;
const SETTINGS_CHECK_POLL_MS = 50;

/**
 * The data of the stored delivery `info`'s analysis once it has run (null when it failed). If it
 * does not end within `SETTINGS_CHECK_WAIT_MS`: the data of the experiment's analysis row if that
 * is still a ready one of an earlier delivery, else null. The analysis may run on another
 * instance: its row is what is read.
 */
async function analysedData(
  ctx: AppCtx,
  orgId: string,
  experimentId: string,
  key: string,
  info: ObjectInfo,
): Promise<Aggregate | null> {
  const deadline = Date.now() + SETTINGS_CHECK_WAIT_MS;
  for (let asked = false;; asked = true) {
    const row = await ctx.deps.db.analyses.get(orgId, experimentId);
    const settled = row !== null && row.etag === info.etag && row.status !== "pending";
    if (settled || Date.now() >= deadline) {
      return row?.status === "ready" && row.result ? JSON.parse(row.result)._data ?? null : null;
    }
    if (!asked) onItsWay(ctx, orgId, experimentId, key, info);
    await new Promise((resolve) => setTimeout(resolve, SETTINGS_CHECK_POLL_MS));
  }
}

async function writeSettings(ctx: AppCtx): Promise<Response> {
  const principal = await ctx.auth();
  const experimentId = parseExperimentId(ctx.params.experiment_id);
  const body = await readJson(ctx);
  const settings = validateSettings(body);
  const key = datasetKey(principal.orgId, experimentId);
  const info = await ctx.deps.store.head(key);
  // Settings that name variants or columns wait for the stored delivery's data; others need none
  // (and so a change made while an analysis runs still re-runs it once, afterwards).
  if (info && info.size <= ctx.deps.config.maxUploadBytes && namesData(settings)) {
    const data = await analysedData(ctx, principal.orgId, experimentId, key, info);
    if (data) checkSettingsAgainstData(settings, data);
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
