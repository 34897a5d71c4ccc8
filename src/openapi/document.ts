/**
 * Builds the OpenAPI 3.1 document from the route table and the descriptions of `operations.ts`.
 * The route table is the single source of each operation's method, path and access: the path
 * (`:name` and `*name` become `{name}`), the security requirement (one alternative per scope that
 * allows the call, and `x-scopes`), and the error answers its access implies. Each error status
 * an operation can answer gets the error shape with the `code` enum possible there, the status
 * of each code coming from the error-code table.
 *
 * @module
 */
import type { ErrorCode } from "../errors.ts";
import type { Access, Route } from "../http/context.ts";
import { ERROR_STATUS } from "../http/errors.ts";
import { ref, SCHEMAS } from "./schemas.ts";
import type { Header, OperationDoc, OperationDocs, Schema, SuccessResponse } from "./types.ts";

/** Options of `buildDocument`. */
export interface DocumentOptions {
  /** The deployment's upload limit, in bytes (initiate's `size_bytes` maximum); default 200 MiB. */
  maxUploadBytes?: number;
}

/** What a route needs to be documented. */
type RouteEntry = Pick<Route<unknown>, "method" | "path" | "access">;

/** Codes any route can answer: a bug, and a busy database or a shutdown. */
const ANY_ROUTE: readonly ErrorCode[] = ["internal_error", "service_unavailable"];
/** Codes a route that needs an API key can answer before its handler runs. */
const KEYED_ROUTE: readonly ErrorCode[] = [
  "unauthorized",
  "org_deactivated",
  "insufficient_scope",
  "rate_limited",
];

const REQUEST_ID: Header = {
  description: "The id of this request, repeated in an error's request_id",
  required: true,
  schema: { type: "string", minLength: 1 },
};

const RETRY_AFTER: Header = {
  description: "Seconds to wait before retrying",
  schema: { type: "string", pattern: "^[0-9]+$" },
};

const DESCRIPTION = `Delivers one CSV dataset per A/B experiment, and reads its analysis.

API paths start with \`/api/v1\`; \`/healthz\`, \`/metrics\`, the web UI (\`/\`, \`/ui/…\`) and the
local driver's upload URLs (\`/storage/…\`) sit at the root. A path without its trailing slash is
served the same, and every \`GET\` also answers \`HEAD\`.

Every call under \`/api/v1\` but \`/openapi.json\` and \`/storage-events/\` needs
\`Authorization: Bearer abn_…\`; each operation names the key scopes that allow it (any one of
them). Every error is JSON, \`{"error": {"code", "message", "request_id"}}\`, and every response
carries \`X-Request-Id\`. An unknown path answers 404 \`not_found\`, and a known path with another
method 405 \`method_not_allowed\` with an \`Allow\` header, both before authentication. Every error
code, its cause and its fix: docs/api.md, "Errors".`;

/** The OpenAPI path of a route pattern: `:name` and `*name` segments become `{name}`. */
export function openapiPath(pattern: string): string {
  return pattern.replace(/(^|\/)[:*]([A-Za-z_][A-Za-z0-9_]*)/g, "$1{$2}");
}

function pathParameterNames(pattern: string): string[] {
  return [...pattern.matchAll(/(?:^|\/)[:*]([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]);
}

/** Routes without a description, and descriptions of no route (both empty when in step). */
export function undescribed(
  routes: readonly RouteEntry[],
  docs: OperationDocs,
): { routes: string[]; descriptions: string[] } {
  const keys = new Set(routes.map((r) => `${r.method} ${r.path}`));
  return {
    routes: [...keys].filter((key) => !Object.hasOwn(docs, key)),
    descriptions: Object.keys(docs).filter((key) => !keys.has(key)),
  };
}

function security(access: Access, doc: OperationDoc): Record<string, unknown> {
  if (access === "public") return { security: doc.security ?? [] };
  return {
    security: access.map((scope) => ({ bearerAuth: [scope] })),
    "x-scopes": [...access],
  };
}

function withRequestId(headers: Record<string, Header> = {}): Record<string, Header> {
  return { "X-Request-Id": REQUEST_ID, ...headers };
}

function success(response: SuccessResponse): Record<string, unknown> {
  const content = response.content &&
    Object.fromEntries(
      Object.entries(response.content).map(([type, schema]) => [type, { schema }]),
    );
  return {
    description: response.description,
    headers: withRequestId(response.headers),
    ...(content ? { content } : {}),
  };
}

/** The error answers of `codes`, one per status, each with the codes possible there. */
function errorResponses(codes: readonly ErrorCode[]): Record<string, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Record<string, unknown> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    const schema: Schema = {
      allOf: [
        ref("Error"),
        {
          type: "object",
          properties: {
            error: { type: "object", properties: { code: { type: "string", enum: list } } },
          },
        },
      ],
    };
    const retry = status === 429 || status === 503;
    responses[String(status)] = {
      description: list.join(", "),
      headers: withRequestId(
        retry ? { "Retry-After": { ...RETRY_AFTER, required: status === 429 } } : {},
      ),
      content: { "application/json": { schema } },
    };
  }
  return responses;
}

function operation(route: RouteEntry, doc: OperationDoc): Record<string, unknown> {
  const declared = new Set(
    (doc.parameters ?? []).filter((p) => p.in === "path").map((p) => p.name),
  );
  for (const name of pathParameterNames(route.path)) {
    if (!declared.has(name)) {
      throw new TypeError(
        `Cannot describe ${route.method} ${route.path}: path parameter "${name}" is not declared`,
      );
    }
  }
  const responses: Record<string, unknown> = {};
  for (const [status, response] of Object.entries(doc.responses)) {
    responses[status] = success(response);
  }
  const keyed = route.access === "public" ? [] : KEYED_ROUTE;
  Object.assign(responses, errorResponses([...doc.errors, ...keyed, ...ANY_ROUTE]));
  return {
    operationId: doc.operationId,
    summary: doc.summary,
    description: doc.description,
    tags: [...doc.tags],
    ...(doc.parameters ? { parameters: doc.parameters } : {}),
    ...(doc.requestBody
      ? {
        requestBody: {
          description: doc.requestBody.description,
          required: doc.requestBody.required,
          content: Object.fromEntries(
            Object.entries(doc.requestBody.content).map(([type, schema]) => [type, { schema }]),
          ),
        },
      }
      : {}),
    responses,
    ...security(route.access, doc),
  };
}

const TAGS = [
  { name: "Delivery", description: "Delivering a dataset: direct upload and two-step upload" },
  { name: "Datasets", description: "The organization's stored datasets" },
  { name: "Analysis", description: "The analysis of each delivery, its settings and history" },
  { name: "Keys", description: "The organization's API keys" },
  { name: "Webhooks", description: "Signed events sent to the organization's endpoints" },
  { name: "Service", description: "Health, metrics and this document" },
  { name: "Web UI", description: "The web UI's files" },
];

/**
 * The OpenAPI 3.1 document of `routes`, every one described in `docs`.
 *
 * @throws {TypeError} when a route has no description, a description names no route, or a path
 * parameter is not declared.
 */
export function buildDocument(
  routes: readonly RouteEntry[],
  docs: OperationDocs,
  options: DocumentOptions = {},
): Record<string, unknown> {
  const missing = undescribed(routes, docs);
  if (missing.routes.length > 0 || missing.descriptions.length > 0) {
    throw new TypeError(
      `Cannot build the OpenAPI document: routes without a description: ${
        missing.routes.join(", ") || "none"
      }; descriptions of no route: ${missing.descriptions.join(", ") || "none"}`,
    );
  }
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const path = openapiPath(route.path);
    paths[path] ??= {};
    paths[path][route.method.toLowerCase()] = operation(
      route,
      docs[`${route.method} ${route.path}`],
    );
  }
  const maxUploadBytes = options.maxUploadBytes ?? 200 * 1024 * 1024;
  const initiate = SCHEMAS.InitiateRequest as { properties: Record<string, Schema> };
  const schemas = {
    ...SCHEMAS,
    InitiateRequest: {
      ...initiate,
      properties: {
        ...initiate.properties,
        size_bytes: { ...initiate.properties.size_bytes, maximum: maxUploadBytes },
      },
    },
  };
  return {
    openapi: "3.1.0",
    info: { title: "abn dataset upload API", version: "1.0.0", description: DESCRIPTION },
    servers: [{ url: "/", description: "The service's base URL (ABN_PUBLIC_URL)" }],
    tags: TAGS,
    paths,
    components: {
      schemas,
      securitySchemes: {
        bearerAuth: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "abn_ followed by 38 letters and digits",
          description:
            "An API key of the organization (admin key create, docs/operations.md). A key holds scopes (upload, read, write, admin); an operation lists the scopes that allow it, any one of them, and a key without one answers 403 insufficient_scope.",
        },
        storageEventsToken: {
          type: "http",
          scheme: "bearer",
          description: "The service's ABN_STORAGE_EVENTS_TOKEN (not an API key)",
        },
      },
    },
  };
}
