/**
 * The shapes `src/openapi/` writes: what one operation's description holds, and the few
 * OpenAPI 3.1 objects it is built from. Schemas are plain JSON Schema 2020-12 objects.
 *
 * @module
 */
import type { ErrorCode } from "../errors.ts";

/** A JSON Schema (2020-12) object, as OpenAPI 3.1 embeds it. */
export type Schema = Record<string, unknown>;

/** An OpenAPI parameter object (`in` query, path or header). */
export interface Parameter {
  name: string;
  in: "query" | "path" | "header";
  description: string;
  required?: boolean;
  schema: Schema;
  /** Named examples; a path parameter's first example is one that exists in a test fixture. */
  examples?: Record<string, { summary?: string; value: unknown }>;
}

/** A response header. */
export interface Header {
  description: string;
  required?: boolean;
  schema: Schema;
}

/** A response that is not an error: its description, its bodies by media type, its headers. */
export interface SuccessResponse {
  description: string;
  /** Media type → schema; absent: no body. */
  content?: Record<string, Schema>;
  headers?: Record<string, Header>;
}

/** An OpenAPI request body. */
export interface RequestBody {
  description: string;
  required: boolean;
  /** Media type → schema. */
  content: Record<string, Schema>;
}

/**
 * What `src/openapi/` says of one route: everything but its method, path and access, which the
 * route table states. The error responses are built from `errors` (each code's status comes from
 * the error-code table), plus the codes the route's access implies.
 */
export interface OperationDoc {
  operationId: string;
  summary: string;
  description: string;
  tags: readonly string[];
  parameters?: readonly Parameter[];
  requestBody?: RequestBody;
  /** The answers that are not errors, by status. */
  responses: Readonly<Record<number, SuccessResponse>>;
  /** The error codes this route can answer besides those of authentication and any route's. */
  errors: readonly ErrorCode[];
  /**
   * Security other than the API key: a route whose access is `public` but which checks a proof of
   * its own names the scheme here (the storage events' token).
   */
  security?: readonly Record<string, readonly string[]>[];
}

/** Descriptions by route, keyed `"METHOD path"` exactly as the route table writes them. */
export type OperationDocs = Readonly<Record<string, OperationDoc>>;
