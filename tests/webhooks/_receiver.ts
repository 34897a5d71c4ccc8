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
  /** When the request arrived and when its answer was made (`performance.now()`). */
  at: number;
  endedAt?: number;
  /** The status answered. */
  status?: number;
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

/**
 * Starts a receiver answering `routes` by path (200 for any other path). `secret` may be given
 * later (a function read at each request): the service makes it when the endpoint is created.
 */
export function startReceiver(
  secret: string | (() => string),
  routes: Record<string, Route> = {},
  options: { port?: number } = {},
): Receiver {
  const requests: ReceivedRequest[] = [];
  const secretOf = typeof secret === "string" ? () => secret : secret;
  const listen = { hostname: "127.0.0.1", port: options.port ?? 0, onListen() {} };
  const server = Deno.serve(listen, async (request) => {
    const body = await request.text();
    const headers = Object.fromEntries(request.headers);
    const path = new URL(request.url).pathname;
    const received: ReceivedRequest = {
      path,
      headers,
      body,
      verified: false,
      at: performance.now(),
    };
    try {
      new Webhook(secretOf()).verify(body, headers);
      received.verified = true;
    } catch (error) {
      received.verifyError = String(error);
    }
    requests.push(received);
    const route = routes[path];
    const response = route ? await route(request, body) : new Response("ok");
    received.endedAt = performance.now();
    received.status = response.status;
    return response;
  });
  const port = server.addr.port;
  return {
    port,
    url: (path) => `http://127.0.0.1:${port}${path}`,
    requests,
    close: () => server.shutdown(),
  };
}
