/**
 * The delivery routes: the direct upload, the upload grant, the local driver's upload URL and the
 * storage events that announce two-step deliveries (docs/api.md, "Delivering a dataset").
 *
 * @module
 */
import { ref } from "./schemas.ts";
import { EXAMPLE_EXPERIMENT_ID } from "./parameters.ts";
import { EXPERIMENT_ID } from "./schemas.ts";
import type { OperationDocs, Schema } from "./types.ts";

/** The raw bytes of a CSV file. */
const CSV_BYTES: Schema = {
  type: "string",
  format: "binary",
  contentMediaType: "text/csv",
  description: "the raw CSV bytes (never multipart/form-data)",
  examples: ["user_id,variant,date,converted\nu1,A,2026-12-01,1\nu2,B,2026-12-01,0\n"],
};

/** The codes of a body read through the byte limits (size, idle time, the client going away). */
const BODY_CODES = ["payload_too_large", "body_timeout", "request_aborted"] as const;

/** The CSV checks of a direct upload (docs/api.md, "What a direct upload checks"). */
const CSV_CODES = [
  "archive_detected",
  "binary_content",
  "invalid_utf8",
  "invalid_csv",
  "missing_columns",
  "no_metric_column",
  "invalid_date",
  "no_data_rows",
] as const;

export const UPLOAD_OPERATIONS: OperationDocs = {
  "POST /api/v1/datasets/upload/": {
    operationId: "uploadDataset",
    summary: "Deliver a dataset in one request",
    description:
      "The body is the raw CSV; it is checked while it streams to storage and stored (replacing the experiment's latest.csv) only after its last byte passed every check. A refused or failed upload never changes the stored file. Any Content-Type but multipart/* is accepted; a declared Content-Length above the limit is refused with 413 before the body is read.",
    tags: ["Delivery"],
    parameters: [{
      name: "experiment_id",
      in: "query",
      required: true,
      description: "The experiment's id, exactly once",
      schema: EXPERIMENT_ID,
      examples: { stored: { value: EXAMPLE_EXPERIMENT_ID } },
    }],
    requestBody: {
      description: "The CSV file",
      required: true,
      content: { "text/csv": CSV_BYTES },
    },
    responses: {
      201: {
        description: "Stored; the analysis starts at once",
        content: { "application/json": ref("UploadResult") },
      },
    },
    errors: [
      "invalid_experiment_id",
      "multipart_not_supported",
      ...CSV_CODES,
      ...BODY_CODES,
      "too_many_uploads",
      "quota_exceeded",
      "storage_error",
    ],
  },
  "POST /api/v1/datasets/initiate/": {
    operationId: "initiateUpload",
    summary: "Ask for an upload URL (two-step delivery)",
    description:
      "Answers a time-limited URL for one PUT of the file straight to storage. With size_bytes the URL accepts only a body of exactly that length. The body is a JSON object of at most 16 KiB (its Content-Type is not checked).",
    tags: ["Delivery"],
    requestBody: {
      description: "The experiment and, optionally, the file's length",
      required: true,
      content: { "application/json": ref("InitiateRequest") },
    },
    responses: {
      200: { description: "The upload grant", content: { "application/json": ref("UploadGrant") } },
    },
    errors: [
      "invalid_json",
      "invalid_experiment_id",
      ...BODY_CODES,
      "quota_exceeded",
      "storage_error",
    ],
  },
  "PUT /storage/*key": {
    operationId: "putUploadUrl",
    summary: "Send the file to a local upload URL",
    description:
      "With local storage, the upload_url of initiate is served by the service itself. The URL's HMAC signature (over the method, the key, the expiry and the declared length) is the permission: no Authorization header. The bytes are stored as sent and analysed at once. With S3 storage the URL is the storage's own and this route answers 404.",
    tags: ["Delivery"],
    parameters: [
      {
        name: "key",
        in: "path",
        required: true,
        description: "The storage key, org/{org_id}/experiments/{experiment_id}/latest.csv",
        schema: { type: "string", minLength: 1 },
        examples: {
          key: { value: `org/o/experiments/${EXAMPLE_EXPERIMENT_ID}/latest.csv` },
        },
      },
      {
        name: "expires",
        in: "query",
        required: true,
        description: "Unix seconds after which the URL answers 403 url_expired",
        schema: { type: "integer" },
      },
      {
        name: "size",
        in: "query",
        description: "The length the URL was issued for (initiate's size_bytes)",
        schema: { type: "integer", minimum: 0 },
      },
      {
        name: "key_id",
        in: "query",
        description: "The API key that asked for the URL (for the audit trail; signed with it)",
        schema: { type: "string" },
      },
      {
        name: "signature",
        in: "query",
        required: true,
        description: "The service's signature of the URL",
        schema: { type: "string" },
      },
    ],
    requestBody: {
      description: "The CSV file",
      required: true,
      content: { "text/csv": CSV_BYTES },
    },
    responses: {
      200: {
        description: "Stored (empty body)",
        headers: {
          ETag: {
            description: "The stored object's ETag",
            required: true,
            schema: { type: "string" },
          },
        },
      },
    },
    errors: [
      "invalid_signature",
      "url_expired",
      "org_deactivated",
      "not_found",
      ...BODY_CODES,
      "too_many_uploads",
      "quota_exceeded",
      "storage_error",
    ],
    security: [],
  },
  "POST /api/v1/storage-events/": {
    operationId: "postStorageEvents",
    summary: "Bucket notifications: analyse two-step deliveries at once",
    description:
      "S3 event notification JSON (as MinIO's webhook target sends it). Enabled by ABN_STORAGE_EVENTS_TOKEN, given as Authorization: Bearer <token> (not an API key); otherwise 404. Each record whose key is a dataset key of an existing object within the limit is treated as a delivery; the others are ignored.",
    tags: ["Delivery"],
    requestBody: {
      description: "The notification, a JSON object of at most 16 KiB",
      required: true,
      content: { "application/json": ref("StorageEvents") },
    },
    responses: {
      200: {
        description: "The number of records taken",
        content: { "application/json": ref("StorageEventsResult") },
      },
    },
    errors: ["not_found", "unauthorized", "invalid_json", ...BODY_CODES, "storage_error"],
    security: [{ storageEventsToken: [] }],
  },
};
