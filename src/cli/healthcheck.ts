/**
 * `main.ts healthcheck [--url URL]`: asks the local service's `GET /healthz` and exits 0 when it
 * answers 200, 1 otherwise. For container health checks (the runtime image has no curl).
 *
 * The default target is this host's listener (`http://127.0.0.1:{ABN_PORT}`, or `ABN_HOST` when
 * it names one address), not `ABN_PUBLIC_URL`: behind a load balancer the public URL would check
 * some instance, not this one. With `ABN_TLS_CERT` set the public URL is used, since the
 * certificate names it.
 */
import type { Config } from "../config.ts";

export interface HealthcheckIo {
  out: (line: string) => void;
  err: (line: string) => void;
}

const defaultIo: HealthcheckIo = { out: (l) => console.log(l), err: (l) => console.error(l) };

/** The URL `healthcheck` asks by default. */
export function localHealthUrl(
  config: Pick<Config, "host" | "port" | "publicUrl" | "tlsCert">,
): string {
  if (config.tlsCert) return `${config.publicUrl}/healthz`;
  const wildcard = config.host === "0.0.0.0" || config.host === "::" || config.host === "";
  const host = wildcard ? "127.0.0.1" : config.host;
  return `http://${host.includes(":") ? `[${host}]` : host}:${config.port}/healthz`;
}

export async function runHealthcheck(
  args: string[],
  config: Pick<Config, "host" | "port" | "publicUrl" | "tlsCert">,
  io: HealthcheckIo = defaultIo,
): Promise<number> {
  let given: string | undefined;
  let quiet = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--quiet") quiet = true;
    else if (arg === "--url" && args[i + 1]) given = args[++i];
    else if (arg.startsWith("--url=") && arg.length > 6) given = arg.slice(6);
    else {
      io.err("usage: main.ts healthcheck [--url BASE_URL] [--quiet]");
      return 2;
    }
  }
  const url = given ? `${given.replace(/\/+$/, "")}/healthz` : localHealthUrl(config);
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
    const text = await res.text();
    if (res.status === 200) {
      if (!quiet) io.out(`healthy: ${url}`);
      return 0;
    }
    io.err(`unhealthy: ${url} answered ${res.status} ${text.slice(0, 200)}`);
    return 1;
  } catch (error) {
    io.err(`unhealthy: ${url}: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}
