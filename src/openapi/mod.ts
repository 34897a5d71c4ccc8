/**
 * The published contract: `buildDocument` turns the route table and `OPERATIONS` (each route's
 * description) into the OpenAPI 3.1 document that `GET /api/v1/openapi.json` serves.
 *
 * @module
 */
export { buildDocument, type DocumentOptions, openapiPath, undescribed } from "./document.ts";
export { OPERATIONS } from "./operations.ts";
export type { OperationDoc, OperationDocs } from "./types.ts";
