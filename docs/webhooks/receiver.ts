/**
 * A receiver for abn's webhooks that checks every request's signature (Standard Webhooks 1.0)
 * before it trusts the event. It needs nothing but Deno:
 *
 *     WEBHOOK_SECRET=whsec_… deno run --allow-net --allow-env receiver.ts
 *
 * `WEBHOOK_SECRET` is the secret the service showed when the endpoint was created (or rotated);
 * `HOST` and `PORT` say where to listen (default 127.0.0.1:8000). Each verified event is printed
 * as one JSON line; replace `handle` with what your pipeline does.
 *
 * The checks, in order: the three `webhook-*` headers are present; `webhook-timestamp` is within
 * five minutes of this machine's clock (an old request replayed is refused); one of the
 * space-separated `v1,` signatures is the HMAC-SHA256 of `id.timestamp.body` with the secret's
 * decoded bytes, compared in constant time by `crypto.subtle.verify`. The raw body is verified
 * before it is parsed: JSON parsed and written again may differ by a byte. A `webhook-id` seen in
 * the last ten minutes is answered 204 and not handled twice (the service delivers at least once;
 * a real receiver keeps the ids it handled with what it did, in its own database).
 */

/** How far a request's timestamp may be from this machine's clock, in seconds. */
const TOLERANCE_SECONDS = 5 * 60;
/** The largest body accepted; the service sends under 20 kB. */
const MAX_BODY_BYTES = 1 << 20;

/** The HMAC key of a `whsec_…` secret. */
export function importSecret(secret: string): Promise<CryptoKey> {
  if (!secret.startsWith("whsec_")) throw new Error("WEBHOOK_SECRET must start with whsec_");
  const bytes = Uint8Array.from(atob(secret.slice("whsec_".length)), (c) => c.charCodeAt(0));
  return crypto.subtle.importKey("raw", bytes, { name: "HMAC", hash: "SHA-256" }, false, [
    "verify",
  ]);
}

/** Why a request was refused, or null when its signature holds. */
export async function checkSignature(
  key: CryptoKey,
  headers: Headers,
  body: Uint8Array,
  now = Date.now() / 1000,
): Promise<string | null> {
  const id = headers.get("webhook-id");
  const timestamp = headers.get("webhook-timestamp");
  const signatures = headers.get("webhook-signature");
  if (!id || !timestamp || !signatures) return "missing webhook-id, -timestamp or -signature";
  if (!/^\d+$/.test(timestamp) || Math.abs(now - Number(timestamp)) > TOLERANCE_SECONDS) {
    return "timestamp too old or too new";
  }
  const prefix = new TextEncoder().encode(`${id}.${timestamp}.`);
  const signed = new Uint8Array(prefix.length + body.length);
  signed.set(prefix);
  signed.set(body, prefix.length);
  for (const entry of signatures.split(" ")) {
    const [version, encoded] = entry.split(",");
    if (version !== "v1" || !encoded) continue;
    let mac: Uint8Array<ArrayBuffer>;
    try {
      mac = Uint8Array.from(atob(encoded), (c) => c.charCodeAt(0));
    } catch {
      continue;
    }
    if (await crypto.subtle.verify("HMAC", key, mac, signed)) return null;
  }
  return "no valid signature";
}

/** What to do with a verified event: here, print it. */
function handle(id: string, event: { type: string; data: unknown }): void {
  console.log(JSON.stringify({ verified: id, type: event.type, data: event.data }));
}

/** The receiver: 204 for a verified (or repeated) event, 400 or 401 otherwise. */
export function receiver(key: CryptoKey): (request: Request) => Promise<Response> {
  const seen = new Map<string, number>();
  return async (request) => {
    if (request.method !== "POST") return new Response(null, { status: 405 });
    const body = new Uint8Array(await request.arrayBuffer());
    if (body.length > MAX_BODY_BYTES) return new Response("too large", { status: 413 });
    const problem = await checkSignature(key, request.headers, body);
    if (problem !== null) {
      console.error(`refused: ${problem}`);
      const status = problem.startsWith("missing") ? 400 : 401;
      return new Response(problem, { status });
    }
    const id = request.headers.get("webhook-id")!;
    const now = Date.now();
    for (const [old, at] of seen) if (now - at > 2 * TOLERANCE_SECONDS * 1000) seen.delete(old);
    if (!seen.has(id)) {
      seen.set(id, now);
      handle(id, JSON.parse(new TextDecoder().decode(body)));
    }
    return new Response(null, { status: 204 });
  };
}

if (import.meta.main) {
  const secret = Deno.env.get("WEBHOOK_SECRET");
  if (!secret) throw new Error("Set WEBHOOK_SECRET to the endpoint's whsec_… secret");
  const key = await importSecret(secret);
  Deno.serve({
    hostname: Deno.env.get("HOST") ?? "127.0.0.1",
    port: Number(Deno.env.get("PORT") ?? 8000),
    onListen: ({ hostname, port }) => console.log(`Listening on http://${hostname}:${port}/`),
  }, receiver(key));
}
