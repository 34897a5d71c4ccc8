/**
 * A webhook receiver on 127.0.0.1 for tests: records every request and checks its signature with
 * the `standardwebhooks` package (a verifier written elsewhere), holding the receiver's one
 * secret as a real receiver would.
 */
import { Webhook } from "standardwebhooks";

export interface ReceivedRequest {
  path: string;
  headers: Record<string, string>;
  body: string;
  /** The `standardwebhooks` package accepted the signature (and its timestamp). */
  verified: boolean;
  verifyError?: string;
}

export type Route = (request: Request, body: string) => Response | Promise<Response>;

export interface Receiver {
  /** The URL of `path` on this receiver. */
  url(path: string): string;
  port: number;
  requests: ReceivedRequest[];
  close(): Promise<void>;
}

/** Resolves after `ms`, or as soon as `signal` aborts; leaves no timer behind. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** Starts a receiver answering `routes` by path (200 for any other path). */
export function startReceiver(secret: string, routes: Record<string, Route> = {}): Receiver {
  const requests: ReceivedRequest[] = [];
  const verifier = new Webhook(secret);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const body = await request.text();
    const headers = Object.fromEntries(request.headers);
    const path = new URL(request.url).pathname;
    const received: ReceivedRequest = { path, headers, body, verified: false };
    try {
      verifier.verify(body, headers);
      received.verified = true;
    } catch (error) {
      received.verifyError = String(error);
    }
    requests.push(received);
    const route = routes[path];
    return route ? await route(request, body) : new Response("ok");
  });
  const port = server.addr.port;
  return {
    port,
    url: (path) => `http://127.0.0.1:${port}${path}`,
    requests,
    close: () => server.shutdown(),
  };
}
