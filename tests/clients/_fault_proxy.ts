/**
 * A loopback proxy in front of the service for the shared client cases: a named fault answers
 * some requests itself (after reading their body), the others are forwarded with their body and
 * its length. `seen` counts every request as `METHOD /path`.
 */

/** What a case's `server` field may name. */
export type Fault =
  | "service"
  | "503 first"
  | "429 first"
  | "always 503";

export interface FaultProxy {
  url: string;
  /** Requests seen, by `METHOD /path`. */
  seen: Map<string, number>;
  close(): Promise<void>;
}

function injected(status: number, code: string, headers: Record<string, string> = {}): Response {
  return Response.json(
    { error: { code, message: `injected ${code}`, request_id: "proxy" } },
    { status, headers },
  );
}

/** The first request of a delivery: the direct upload's POST or the two-step route's initiate. */
function firstStep(line: string): boolean {
  return line === "POST /api/v1/datasets/upload/" || line === "POST /api/v1/datasets/initiate/";
}

function answer(fault: Fault, line: string, n: number): Response | null {
  if (fault === "service" || !firstStep(line)) return null;
  if (fault === "always 503") return injected(503, "service_unavailable");
  if (n > 1) return null;
  return fault === "503 first"
    ? injected(503, "service_unavailable")
    : injected(429, "rate_limited", { "retry-after": "0" });
}

export function startFaultProxy(target: string, fault: Fault): FaultProxy {
  const seen = new Map<string, number>();
  const controller = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: controller.signal, onListen: () => {} },
    async (req) => {
      const url = new URL(req.url);
      const line = `${req.method} ${url.pathname}`;
      const n = (seen.get(line) ?? 0) + 1;
      seen.set(line, n);
      // The cases' files are small: read the body whole, so that it is forwarded with its length.
      const body = req.body ? new Uint8Array(await req.arrayBuffer()) : undefined;
      const own = answer(fault, line, n);
      if (own) return own;
      const headers = new Headers(req.headers);
      headers.delete("host");
      const res = await fetch(`${target}${url.pathname}${url.search}`, {
        method: req.method,
        headers,
        body,
      });
      return new Response(res.body, { status: res.status, headers: res.headers });
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    seen,
    async close() {
      controller.abort();
      await server.finished;
    },
  };
}
