/**
 * An experiment's analysis, its settings and its history (docs/api.md, "The analysis",
 * "Settings", "GET /datasets/ID/history/").
 *
 * @module
 */
import { ref } from "./schemas.ts";
import { cursorQuery, experimentIdPath, formatQuery, limitQuery } from "./parameters.ts";
import type { Header, OperationDocs } from "./types.ts";

const CSV_TEXT = { type: "string", contentMediaType: "text/csv" };
const BODY_CODES = ["payload_too_large", "body_timeout", "request_aborted"] as const;

function attachment(suffix: string): Header {
  return {
    description: `With format=csv: attachment; filename="{experiment_id}-${suffix}.csv"`,
    schema: { type: "string", pattern: "^attachment; filename=" },
  };
}

export const ANALYSIS_OPERATIONS: OperationDocs = {
  "GET /api/v1/datasets/:experiment_id/analysis/": {
    operationId: "getAnalysis",
    summary: "The analysis of the stored dataset",
    description:
      "pending until the analysis of the stored delivery is saved, then ready or failed (with the reason in error). Asking for the analysis of a delivery not noticed yet starts it. With format=csv: one row per metric × variant (only the header until ready; X-Analysis-Status says why).",
    tags: ["Analysis"],
    parameters: [experimentIdPath, formatQuery],
    responses: {
      200: {
        description: "The analysis",
        content: { "application/json": ref("Analysis"), "text/csv": CSV_TEXT },
        headers: {
          "Content-Disposition": attachment("analysis"),
          "X-Analysis-Status": {
            description: "With format=csv: the analysis status",
            schema: { enum: ["pending", "ready", "failed"] },
          },
        },
      },
    },
    errors: [
      "invalid_experiment_id",
      "invalid_json",
      "not_found",
      "dataset_too_large",
      "storage_error",
    ],
  },
  "GET /api/v1/datasets/:experiment_id/settings/": {
    operationId: "getSettings",
    summary: "The experiment's analysis settings",
    description: "What was saved, {} when none (settings may be saved before the first delivery).",
    tags: ["Analysis"],
    parameters: [experimentIdPath],
    responses: {
      200: { description: "The saved settings", content: { "application/json": ref("Settings") } },
    },
    errors: ["invalid_experiment_id"],
  },
  "PUT /api/v1/datasets/:experiment_id/settings/": {
    operationId: "putSettings",
    summary: "Replace the experiment's analysis settings",
    description:
      "Saves the body (fields left out take their defaults) and re-runs the analysis of a stored dataset within the limit. What only the data can tell (a metric, variant or column that does not exist) is checked against the stored dataset when there is one (400 invalid_settings, nothing saved), else at the next analysis.",
    tags: ["Analysis"],
    parameters: [experimentIdPath],
    requestBody: {
      description: "The settings, a JSON object of at most 16 KiB",
      required: true,
      content: { "application/json": ref("SettingsInput") },
    },
    responses: {
      200: { description: "What was saved", content: { "application/json": ref("Settings") } },
    },
    errors: [
      "invalid_experiment_id",
      "invalid_json",
      "invalid_settings",
      ...BODY_CODES,
      "storage_error",
    ],
  },
  "GET /api/v1/datasets/:experiment_id/history/": {
    operationId: "getHistory",
    summary: "The experiment's snapshots, oldest first",
    description:
      "One snapshot per delivered content whose analysis became ready, a page at a time; with format=csv the whole history as one download. 404 when there are neither snapshots nor a stored dataset.",
    tags: ["Analysis"],
    parameters: [experimentIdPath, limitQuery, cursorQuery, formatQuery],
    responses: {
      200: {
        description: "One page of snapshots",
        content: { "application/json": ref("HistoryPage"), "text/csv": CSV_TEXT },
        headers: { "Content-Disposition": attachment("history") },
      },
    },
    errors: ["invalid_experiment_id", "invalid_json", "not_found", "storage_error"],
  },
};
