/**
 * The organization's API keys and its audit trail (docs/api.md, "GET /keys/" to "GET /audit/").
 *
 * @module
 */
import { ref } from "./schemas.ts";
import { cursorQuery } from "./parameters.ts";
import type { OperationDocs, Parameter, RequestBody } from "./types.ts";

const keyIdPath: Parameter = {
  name: "key_id",
  in: "path",
  required: true,
  description: "The key's id (key_ and 16 letters or digits); another organization's answers 404",
  schema: { type: "string", minLength: 1 },
};

const newKey = {
  description: "The new key: the secret is shown this once",
  content: { "application/json": ref("NewKey") },
};

function jsonBody(description: string, schema: string, required: boolean): RequestBody {
  return { description, required, content: { "application/json": ref(schema) } };
}

export const KEY_OPERATIONS: OperationDocs = {
  "GET /api/v1/keys/": {
    operationId: "listKeys",
    summary: "The organization and its keys",
    description:
      "Never a key itself: its id, name, first characters, scopes, status and expiry, and which of them signed this request.",
    tags: ["Keys"],
    responses: {
      200: {
        description: "The organization and its keys",
        content: { "application/json": ref("Keys") },
      },
    },
    errors: [],
  },
  "POST /api/v1/keys/": {
    operationId: "createKey",
    summary: "Create a key",
    description:
      "A key with the given scopes (at least one), an optional name and an optional expiry in the future.",
    tags: ["Keys"],
    requestBody: jsonBody("The new key's name, scopes and expiry", "KeyRequest", true),
    responses: { 201: newKey },
    errors: ["invalid_json", "invalid_key_request", "payload_too_large", "body_timeout"],
  },
  "DELETE /api/v1/keys/:key_id/": {
    operationId: "revokeKey",
    summary: "Revoke a key",
    description:
      "The key answers 401 from now on. The organization's last active admin key is kept (409 last_admin_key).",
    tags: ["Keys"],
    parameters: [keyIdPath],
    responses: { 204: { description: "Revoked (or revoked before)" } },
    errors: ["not_found", "last_admin_key"],
  },
  "POST /api/v1/keys/:key_id/rotate/": {
    operationId: "rotateKey",
    summary: "Rotate a key",
    description:
      "A new key with the same name and scopes; the old one keeps working for overlap_hours (0 to 168, default 24), then expires.",
    tags: ["Keys"],
    parameters: [keyIdPath],
    requestBody: jsonBody("The overlap; no body: 24 hours", "RotateRequest", false),
    responses: { 201: newKey },
    errors: [
      "not_found",
      "invalid_json",
      "invalid_key_request",
      "payload_too_large",
      "body_timeout",
    ],
  },
  "GET /api/v1/audit/": {
    operationId: "listAuditEvents",
    summary: "The organization's audit trail",
    description:
      "What the organization's keys did (deliveries, deletions, settings changes, key and webhook changes), newest first, a page at a time.",
    tags: ["Keys"],
    parameters: [
      {
        name: "limit",
        in: "query",
        description: "Events per page, 1 to 200 (default 50)",
        schema: { type: "integer", minimum: 1, maximum: 200 },
      },
      cursorQuery,
      {
        name: "action",
        in: "query",
        description: "Only events of this action, e.g. dataset.delivered or key.revoked",
        schema: { type: "string", pattern: "^([a-z][a-z_]{0,31}\\.[a-z][a-z_]{0,31})?$" },
      },
    ],
    responses: {
      200: { description: "One page", content: { "application/json": ref("AuditPage") } },
    },
    errors: ["invalid_json"],
  },
};
