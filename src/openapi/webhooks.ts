/**
 * Webhook endpoints, their secrets, test events and deliveries (docs/api.md, "Webhooks").
 *
 * @module
 */
import { ref } from "./schemas.ts";
import { cursorQuery } from "./parameters.ts";
import type { OperationDocs, Parameter, RequestBody } from "./types.ts";

const webhookIdPath: Parameter = {
  name: "webhook_id",
  in: "path",
  required: true,
  description: "The endpoint's id; another organization's answers 404",
  schema: { type: "string", minLength: 1 },
};

const deliveryIdPath: Parameter = {
  name: "delivery_id",
  in: "path",
  required: true,
  description: "The delivery's id (of this endpoint)",
  schema: { type: "string", minLength: 1 },
};

function jsonBody(description: string, schema: string): RequestBody {
  return { description, required: true, content: { "application/json": ref(schema) } };
}

const endpoint = {
  description: "The endpoint (never its secret)",
  content: { "application/json": ref("WebhookEndpoint") },
};

const delivery = {
  description: "The delivery, pending and sent at once",
  content: { "application/json": ref("WebhookDelivery") },
};

const BODY = ["invalid_json", "payload_too_large", "body_timeout"] as const;

export const WEBHOOK_OPERATIONS: OperationDocs = {
  "POST /api/v1/webhooks/": {
    operationId: "createWebhook",
    summary: "Add a webhook endpoint",
    description:
      'An http or https URL whose host resolves to public addresses only (unless the service allows private targets), the events it receives ("*" for all). The signing secret is shown this once.',
    tags: ["Webhooks"],
    requestBody: jsonBody("The endpoint's URL, events and description", "WebhookRequest"),
    responses: {
      201: {
        description: "The endpoint and its secret",
        content: { "application/json": ref("NewWebhook") },
      },
    },
    errors: [...BODY, "invalid_webhook_url"],
  },
  "GET /api/v1/webhooks/": {
    operationId: "listWebhooks",
    summary: "The organization's webhook endpoints",
    description: "Oldest first; never a secret.",
    tags: ["Webhooks"],
    responses: {
      200: { description: "The endpoints", content: { "application/json": ref("WebhookList") } },
    },
    errors: [],
  },
  "GET /api/v1/webhooks/:webhook_id/": {
    operationId: "getWebhook",
    summary: "One webhook endpoint",
    description: "Its URL, events, state and failure count; never its secret.",
    tags: ["Webhooks"],
    parameters: [webhookIdPath],
    responses: { 200: endpoint },
    errors: ["not_found"],
  },
  "PATCH /api/v1/webhooks/:webhook_id/": {
    operationId: "updateWebhook",
    summary: "Change a webhook endpoint",
    description:
      "Any of url, events, enabled, description. Enabling clears disabled_reason and the failure count.",
    tags: ["Webhooks"],
    parameters: [webhookIdPath],
    requestBody: jsonBody("The fields to change", "WebhookPatch"),
    responses: { 200: endpoint },
    errors: ["not_found", ...BODY, "invalid_webhook_url"],
  },
  "DELETE /api/v1/webhooks/:webhook_id/": {
    operationId: "deleteWebhook",
    summary: "Remove a webhook endpoint",
    description: "Its pending deliveries are dropped.",
    tags: ["Webhooks"],
    parameters: [webhookIdPath],
    responses: { 204: { description: "Removed" } },
    errors: ["not_found"],
  },
  "POST /api/v1/webhooks/:webhook_id/rotate-secret/": {
    operationId: "rotateWebhookSecret",
    summary: "A new signing secret",
    description:
      "Shown this once; the previous secret signs too (a second signature) until previous_secret_until, 24 hours.",
    tags: ["Webhooks"],
    parameters: [webhookIdPath],
    responses: {
      200: {
        description: "The new secret",
        content: { "application/json": ref("WebhookSecret") },
      },
    },
    errors: ["not_found"],
  },
  "POST /api/v1/webhooks/:webhook_id/test/": {
    operationId: "testWebhook",
    summary: "Send a webhook.test event now",
    description: "Whatever events the endpoint receives; its delivery is answered at once.",
    tags: ["Webhooks"],
    parameters: [webhookIdPath],
    responses: { 202: delivery },
    errors: ["not_found"],
  },
  "GET /api/v1/webhooks/:webhook_id/deliveries/": {
    operationId: "listWebhookDeliveries",
    summary: "The endpoint's deliveries",
    description: "Newest first, a page at a time, with their state and attempts.",
    tags: ["Webhooks"],
    parameters: [
      webhookIdPath,
      {
        name: "limit",
        in: "query",
        description: "Deliveries per page, 1 to 1000 (at most 100 are answered; default 100)",
        schema: { type: "integer", minimum: 1, maximum: 1000 },
      },
      cursorQuery,
    ],
    responses: {
      200: {
        description: "One page",
        content: { "application/json": ref("WebhookDeliveries") },
      },
    },
    errors: ["not_found", "invalid_json"],
  },
  "POST /api/v1/webhooks/:webhook_id/deliveries/:delivery_id/retry/": {
    operationId: "retryWebhookDelivery",
    summary: "Send a delivery again",
    description: "Pending again from now, its attempts counted afresh.",
    tags: ["Webhooks"],
    parameters: [webhookIdPath, deliveryIdPath],
    responses: { 202: delivery },
    errors: ["not_found"],
  },
};
