/**
 * Webhook test helpers over the real API: endpoints created through it, their deliveries read
 * through it, and CSV files of an experiment with a chosen split and conversion rates.
 */
import { assertEquals } from "../_assert.ts";
import { REQUEST_TIMEOUT_MS } from "../reliability/_helpers.ts";

export interface Api {
  api: string;
  apiKey: string;
}

/** A request to the API with the key; the body as JSON when it is an object. */
export async function call(
  server: Api,
  method: string,
  path: string,
  body?: unknown,
  apiKey = server.apiKey,
  // deno-lint-ignore no-explicit-any
): Promise<{ status: number; json: any }> {
  const res = await fetch(`${server.api}${path}`, {
    method,
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await res.text();
  return { status: res.status, json: text === "" ? {} : JSON.parse(text) };
}

/** Creates an endpoint (201 expected); answers its id and secret. */
export async function createEndpoint(
  server: Api,
  url: string,
  events: string[] = ["*"],
): Promise<{ id: string; secret: string }> {
  const { status, json } = await call(server, "POST", "/webhooks/", { url, events });
  assertEquals(status, 201, JSON.stringify(json));
  return { id: json.webhook_id, secret: json.secret };
}

export interface DeliveryJson {
  delivery_id: string;
  event_id: string;
  type: string;
  state: "pending" | "delivered" | "failed";
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
}

/** The endpoint's deliveries (newest first, the first 100). */
export async function deliveriesOf(server: Api, webhookId: string): Promise<DeliveryJson[]> {
  const { status, json } = await call(
    server,
    "GET",
    `/webhooks/${webhookId}/deliveries/?limit=100`,
  );
  assertEquals(status, 200, JSON.stringify(json));
  return json.deliveries;
}

/** Uploads `csv` directly (201 expected); answers the stored object's ETag. */
export async function uploadCsv(server: Api, experimentId: string, csv: string): Promise<string> {
  const res = await fetch(`${server.api}/datasets/upload/?experiment_id=${experimentId}`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.apiKey}` },
    body: csv,
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await res.text();
  assertEquals(res.status, 201, text);
  return JSON.parse(text).etag;
}

/**
 * An experiment's CSV: `users` per variant (`A`, `B`), each converting at its rate (evenly
 * spread: user i of a variant converts when i mod 100 < rate × 100), over 10 dates.
 */
export function experimentCsv(users: { A: number; B: number }, rates: { A: number; B: number }) {
  let csv = "user_id,variant,date,converted\n";
  for (const variant of ["A", "B"] as const) {
    for (let i = 0; i < users[variant]; i++) {
      const converted = i % 100 < rates[variant] * 100 ? 1 : 0;
      csv += `${variant}${i},${variant},2026-11-${String(10 + (i % 10))},${converted}\n`;
    }
  }
  return csv;
}
