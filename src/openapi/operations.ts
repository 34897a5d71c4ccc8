/**
 * Every route's description, keyed `"METHOD path"` as the route table writes it. A new route adds
 * its description to the file of its area (or a new file listed here); a test fails while a route
 * has none or a description names no route.
 *
 * @module
 */
import { ANALYSIS_OPERATIONS } from "./analysis.ts";
import { DATASET_OPERATIONS } from "./datasets.ts";
import { KEY_OPERATIONS } from "./keys.ts";
import { SERVICE_OPERATIONS } from "./service.ts";
import type { OperationDocs } from "./types.ts";
import { UPLOAD_OPERATIONS } from "./uploads.ts";
import { WEBHOOK_OPERATIONS } from "./webhooks.ts";

export const OPERATIONS: OperationDocs = {
  ...UPLOAD_OPERATIONS,
  ...DATASET_OPERATIONS,
  ...ANALYSIS_OPERATIONS,
  ...KEY_OPERATIONS,
  ...WEBHOOK_OPERATIONS,
  ...SERVICE_OPERATIONS,
};
