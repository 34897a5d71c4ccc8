import type { AppRoutes } from "./deps.ts";
import { uploadRoutes } from "./upload.ts";
import { initiateRoutes } from "./initiate.ts";
import { datasetRoutes } from "./datasets.ts";
import { keyRoutes } from "./keys.ts";
import { auditRoutes } from "./audit.ts";
import { analysisRoutes } from "./analysis.ts";
import { historyRoutes } from "./history.ts";
import { storageEventRoutes } from "./storage_events.ts";
import { storagePutRoutes } from "./storage_put.ts";
import { uiRoutes } from "./ui.ts";
import { healthRoutes } from "./health.ts";
import { openapiRoutes } from "./openapi.ts";
import { webhookRoutes } from "./webhooks.ts";

/** Every route table, in the order they are matched. */
export const apiRoutes: AppRoutes[] = [
  healthRoutes,
  uploadRoutes,
  initiateRoutes,
  datasetRoutes,
  analysisRoutes,
  historyRoutes,
  keyRoutes,
  auditRoutes,
  webhookRoutes,
  storagePutRoutes,
  storageEventRoutes,
  // The document of every table here, this one included.
  openapiRoutes(() => apiRoutes),
  uiRoutes,
];
