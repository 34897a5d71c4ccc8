/**
 * Parameters several operations share. Path parameters carry an example that exists in the
 * contract tests' fixture organization (`checkout`), so a fuzzer starting from the examples reads
 * a real dataset.
 *
 * @module
 */
import { EXPERIMENT_ID } from "./schemas.ts";
import type { Parameter } from "./types.ts";

/** The experiment id the examples name (the contract tests deliver a dataset under it). */
export const EXAMPLE_EXPERIMENT_ID = "checkout";

export const experimentIdPath: Parameter = {
  name: "experiment_id",
  in: "path",
  required: true,
  description: "The experiment's id (percent-decoded first)",
  schema: EXPERIMENT_ID,
  examples: { stored: { summary: "a stored dataset", value: EXAMPLE_EXPERIMENT_ID } },
};

export const limitQuery: Parameter = {
  name: "limit",
  in: "query",
  description: "Items per page, 1 to 1000 (default 1000); a parameter given twice answers 400",
  schema: { type: "integer", minimum: 1, maximum: 1000 },
};

export const cursorQuery: Parameter = {
  name: "cursor",
  in: "query",
  description:
    "The next_cursor of the previous page, unchanged (sealed by the service: another value answers 400 invalid_json); empty: the first page",
  schema: { type: "string", pattern: "^([A-Za-z0-9_-]{1,2048}\\.[A-Za-z0-9_-]{43})?$" },
};

export const formatQuery: Parameter = {
  name: "format",
  in: "query",
  description: "json (the default) or csv",
  schema: { enum: ["json", "csv"] },
};
