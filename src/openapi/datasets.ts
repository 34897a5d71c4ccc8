/**
 * The organization's datasets: the list, one dataset, its file, its deletion (docs/api.md,
 * "GET /datasets/" and after).
 *
 * @module
 */
import { ref } from "./schemas.ts";
import { cursorQuery, experimentIdPath, limitQuery } from "./parameters.ts";
import type { OperationDocs } from "./types.ts";

export const DATASET_OPERATIONS: OperationDocs = {
  "GET /api/v1/datasets/": {
    operationId: "listDatasets",
    summary: "List the organization's datasets",
    description:
      "A page at a time, ordered by experiment_id in byte order, from the dataset catalog (a two-step delivery shows as soon as its PUT finished).",
    tags: ["Datasets"],
    parameters: [limitQuery, cursorQuery],
    responses: {
      200: { description: "One page", content: { "application/json": ref("DatasetList") } },
    },
    errors: ["invalid_json", "storage_error"],
  },
  "GET /api/v1/datasets/:experiment_id/": {
    operationId: "getDataset",
    summary: "One dataset",
    description:
      "The fields of a list entry plus its storage key. A stored file not analysed yet is 200 with analysis_status pending; a file above the limit answers 400 dataset_too_large.",
    tags: ["Datasets"],
    parameters: [experimentIdPath],
    responses: {
      200: { description: "The dataset", content: { "application/json": ref("Dataset") } },
    },
    errors: ["invalid_experiment_id", "not_found", "dataset_too_large", "storage_error"],
  },
  "DELETE /api/v1/datasets/:experiment_id/": {
    operationId: "deleteDataset",
    summary: "Delete a dataset, its analysis and its history",
    description:
      "The experiment's settings are kept and apply to the next delivery under that id. Oversize files can be deleted.",
    tags: ["Datasets"],
    parameters: [experimentIdPath],
    responses: {
      200: { description: "Deleted", content: { "application/json": ref("DatasetDeleted") } },
    },
    errors: ["invalid_experiment_id", "not_found", "storage_error"],
  },
  "GET /api/v1/datasets/:experiment_id/file/": {
    operationId: "downloadDataset",
    summary: "Download the stored file",
    description: "The stored bytes, an oversize file too (until the clean-up deletes it).",
    tags: ["Datasets"],
    parameters: [experimentIdPath],
    responses: {
      200: {
        description: "The CSV",
        content: { "text/csv": { type: "string", format: "binary" } },
        headers: {
          "Content-Disposition": {
            description: 'attachment; filename="{experiment_id}.csv"',
            required: true,
            schema: { type: "string", pattern: "^attachment; filename=" },
          },
          ETag: {
            description: "The stored object's ETag",
            required: true,
            schema: { type: "string" },
          },
        },
      },
    },
    errors: ["invalid_experiment_id", "not_found", "storage_error"],
  },
};
