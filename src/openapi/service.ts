/**
 * The routes at the root and this document: health, metrics, the web UI's files and
 * `GET /api/v1/openapi.json` (docs/api.md, "GET /healthz and GET /metrics").
 *
 * @module
 */
import { ref } from "./schemas.ts";
import type { Header, OperationDocs, Schema, SuccessResponse } from "./types.ts";

const ETAG: Header = { description: "The body's ETag", required: true, schema: { type: "string" } };
const CACHE_CONTROL: Header = {
  description: "How long a cache may keep the answer",
  required: true,
  schema: { type: "string" },
};

/** A static file's answers: the file, or 304 when If-None-Match names its ETag. */
function staticFile(
  description: string,
  content: Record<string, Schema>,
): Record<number, SuccessResponse> {
  return {
    200: { description, content, headers: { ETag: ETAG, "Cache-Control": CACHE_CONTROL } },
    304: {
      description: "Not modified: If-None-Match named the current ETag",
      headers: { ETag: ETAG },
    },
  };
}

const ifNoneMatch = {
  name: "If-None-Match",
  in: "header" as const,
  description: "An ETag of an earlier answer: 304 while it is still current",
  schema: { type: "string" },
};

export const SERVICE_OPERATIONS: OperationDocs = {
  "GET /healthz": {
    operationId: "health",
    summary: "Health",
    description:
      "200 when the service and its database answer; 503 service_unavailable otherwise, and while the service shuts down.",
    tags: ["Service"],
    responses: { 200: { description: "Healthy", content: { "application/json": ref("Health") } } },
    errors: [],
  },
  "GET /metrics": {
    operationId: "metrics",
    summary: "Prometheus metrics",
    description:
      "Requests, upload bytes, deliveries, analysis runs, timer runs, uploads in progress (docs/operations.md). Restrict it at the reverse proxy.",
    tags: ["Service"],
    responses: {
      200: {
        description: "The Prometheus text format, version 0.0.4",
        content: { "text/plain": { type: "string" } },
      },
    },
    errors: [],
  },
  "GET /api/v1/openapi.json": {
    operationId: "openapiDocument",
    summary: "This document",
    description:
      "The OpenAPI 3.1 description of every route of the service, without authentication. It changes only with a release of the service.",
    tags: ["Service"],
    parameters: [ifNoneMatch],
    responses: staticFile("The OpenAPI document", {
      "application/json": {
        type: "object",
        required: ["openapi", "info", "paths"],
        properties: {
          openapi: { const: "3.1.0" },
          info: { type: "object" },
          paths: { type: "object" },
        },
      },
    }),
    errors: [],
  },
  "GET /": {
    operationId: "uiPage",
    summary: "The web UI",
    description:
      "The page of the web UI, which calls the API with the key its user enters. Every file of the UI carries a strict Content-Security-Policy (same origin only).",
    tags: ["Web UI"],
    parameters: [ifNoneMatch],
    responses: staticFile("The page", { "text/html": { type: "string" } }),
    errors: ["not_found"],
  },
  "GET /ui/:file": {
    operationId: "uiAsset",
    summary: "A file of the web UI",
    description:
      "The UI's JavaScript modules, style sheet and icon, and `event_types.json` (the webhook event names, as the service lists them); 404 for any other name.",
    tags: ["Web UI"],
    parameters: [
      {
        name: "file",
        in: "path",
        required: true,
        description: "A flat file name",
        schema: { type: "string", pattern: "^[a-z0-9_]+\\.(html|js|css|svg|json)$" },
        examples: { script: { value: "main.js" } },
      },
      ifNoneMatch,
    ],
    responses: staticFile("The file", {
      "text/javascript": { type: "string" },
      "text/css": { type: "string" },
      "image/svg+xml": { type: "string" },
      "text/html": { type: "string" },
      "application/json": { type: "array", items: { type: "string" } },
    }),
    errors: ["not_found"],
  },
};
