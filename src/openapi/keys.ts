/**
 * The organization's API keys (docs/api.md, "GET /keys/").
 *
 * @module
 */
import { ref } from "./schemas.ts";
import type { OperationDocs } from "./types.ts";

export const KEY_OPERATIONS: OperationDocs = {
  "GET /api/v1/keys/": {
    operationId: "listKeys",
    summary: "The organization and the status of its keys",
    description: "Never a key itself: its id, its first characters and its status.",
    tags: ["Keys"],
    responses: {
      200: {
        description: "The organization and its keys",
        content: { "application/json": ref("Keys") },
      },
    },
    errors: [],
  },
};
