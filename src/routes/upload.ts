/**
 * `POST /api/v1/datasets/upload/?experiment_id=…` (docs/api.md): validates the CSV while it streams
 * to storage and commits only after the last byte passed every check (see `upload/upload.ts`).
 */
import { type AppCtx, type AppRoutes, route } from "./deps.ts";
import { json } from "../http/context.ts";
import { ApiError } from "../http/errors.ts";
import { parseExperimentId } from "../http/experiment_id.ts";

/** The one `experiment_id` of the query string (400 when missing, repeated or invalid). */
export function queryExperimentId(url: URL): string {
  const values = url.searchParams.getAll("experiment_id");
  if (values.length > 1) {
    throw new ApiError("invalid_experiment_id", "Give experiment_id once in the query string");
  }
  return parseExperimentId(values[0]);
}

async function upload(ctx: AppCtx): Promise<Response> {
  const principal = await ctx.auth();
  const experimentId = queryExperimentId(ctx.url);
  ctx.logFields.experiment_id = experimentId;
  const stored = await ctx.deps.uploads.upload(ctx, { orgId: principal.orgId, experimentId });
  const { bytes, summary, sha256, info } = stored;
  return json(ctx, {
    success: true,
    size_mb: bytes / 1048576,
    experiment_id: experimentId,
    message: `Dataset stored for experiment ${experimentId}: ${summary.rows} rows, ${bytes} bytes`,
    size_bytes: bytes,
    rows: summary.rows,
    sha256,
    etag: info.etag,
  }, 201);
}

export const uploadRoutes: AppRoutes = [
  route("POST", "/api/v1/datasets/upload/", ["upload"], upload),
];
