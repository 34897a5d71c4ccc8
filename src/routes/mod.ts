import type { RouteTable } from "../app.ts";
import { uploadRoutes } from "./upload.ts";
import { initiateRoutes } from "./initiate.ts";
import { datasetRoutes } from "./datasets.ts";
import { keyRoutes } from "./keys.ts";
import { analysisRoutes } from "./analysis.ts";
import { storageEventRoutes } from "./storage_events.ts";
import { storagePutRoutes } from "./storage_put.ts";
import { uiRoutes } from "./ui.ts";

/** Every API route table, in the order they are matched. */
export const apiRoutes: RouteTable[] = [
  uploadRoutes,
  initiateRoutes,
  datasetRoutes,
  analysisRoutes,
  keyRoutes,
  storagePutRoutes,
  storageEventRoutes,
  uiRoutes,
];
