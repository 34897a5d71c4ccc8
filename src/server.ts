/**
 * `main.ts serve`: the HTTP server around the application, dev-mode bootstrap, and graceful
 * shutdown on SIGTERM/SIGINT (stop accepting, let in-flight requests finish, bounded wait).
 */
import type { Config } from "./config.ts";
import { createService, type Service } from "./wiring.ts";
import type { ControlPlane } from "./db/control_plane.ts";
import { errorResponse } from "./http/errors.ts";

export interface ServeOptions {
  /** First start creates an organization `dev` and prints its key once. */
  dev?: boolean;
  /** Longest wait for in-flight requests at shutdown, in ms; default 10 000. */
  shutdownGraceMs?: number;
}

/** Creates the `dev` organization and its key on first start; answers the key file's path. */
export async function bootstrapDev(db: ControlPlane, dataDir: string): Promise<void> {
  const keyFile = `${dataDir}/dev-api-key`;
  const existing = await db.orgs.findByName("dev");
  const hasKeyFile = await Deno.stat(keyFile).then((s) => s.isFile, () => false);
  if (existing && hasKeyFile) {
    console.log(`Development organization 'dev' exists; its API key is in ${keyFile}`);
    return;
  }
  // Made by `admin org create dev`, or its key file deleted: a new key, so that one is at hand.
  const org = existing ?? await db.orgs.create("dev");
  const { api_key } = await db.keys.create(org.id);
  await Deno.writeTextFile(keyFile, api_key + "\n", { mode: 0o600 });
  const intro = existing
    ? "Organization 'dev' had no key file; a new API key"
    : `Created organization 'dev' (${org.id}). Its API key`;
  console.log(`${intro}, shown once and saved to ${keyFile}:\n\n  ${api_key}\n`);
}

export async function serve(config: Readonly<Config>, options: ServeOptions = {}): Promise<number> {
  let service: Service;
  try {
    service = await createService(config);
  } catch (error) {
    console.error(`Cannot start: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
  if (options.dev) await bootstrapDev(service.db, config.dataDir);
  const log = service.log;

  // Deno's server.shutdown() cuts request bodies still being read, so draining is ours: on a
  // signal, new requests get 503 while in-flight ones finish, then the server shuts down.
  let inFlight = 0;
  let draining = false;
  let drained: (() => void) | null = null;
  const handler = async (req: Request, info: Deno.ServeHandlerInfo) => {
    if (draining) {
      req.body?.cancel().catch(() => {});
      return errorResponse(
        "service_unavailable",
        "The service is shutting down; retry in a few seconds",
        crypto.randomUUID(),
        { connection: "close", "retry-after": "5" },
      );
    }
    inFlight++;
    try {
      return await service.handler(req, info);
    } finally {
      inFlight--;
      if (draining && inFlight === 0) drained?.();
    }
  };

  const controller = new AbortController();
  let tls: { cert?: string; key?: string } = {};
  let server: Deno.HttpServer;
  try {
    if (config.tlsCert && config.tlsKey) {
      tls = {
        cert: await readSetting("ABN_TLS_CERT", config.tlsCert),
        key: await readSetting("ABN_TLS_KEY", config.tlsKey),
      };
    }
    server = listen(config, service, { signal: controller.signal, ...tls }, handler);
  } catch (error) {
    console.error(`Cannot start: ${listenError(error, config)}`);
    await service.close();
    return 1;
  }

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info("shutting down", { signal });
    draining = true;
    const idle = inFlight === 0
      ? Promise.resolve()
      : new Promise<void>((resolve) => drained = resolve);
    let grace: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<void>((resolve) => {
      grace = setTimeout(() => {
        log.info("grace period over; closing remaining connections", { in_flight: inFlight });
        resolve();
      }, options.shutdownGraceMs ?? 10_000);
    });
    Promise.race([idle, timeout]).then(async () => {
      clearTimeout(grace);
      // Responses already returned are still being written: shutdown() waits for them, briefly.
      const hard = setTimeout(() => controller.abort(), 2_000);
      await server.shutdown().catch(() => {});
      clearTimeout(hard);
    });
  };
  const signals: Deno.Signal[] = Deno.build.os === "windows" ? ["SIGINT"] : ["SIGINT", "SIGTERM"];
  for (const s of signals) Deno.addSignalListener(s, () => stop(s));

  await server.finished;
  await service.close();
  log.info("stopped");
  log.flush();
  return 0;
}

/** Serves `handler` on the configured address, logging `listening` once it is up. */
function listen(
  config: Readonly<Config>,
  service: Service,
  options: { signal: AbortSignal; cert?: string; key?: string },
  handler: Deno.ServeHandler,
): Deno.HttpServer {
  return Deno.serve({
    hostname: config.host,
    port: config.port,
    ...options,
    onListen({ hostname, port }) {
      const scheme = config.tlsCert ? "https" : "http";
      const host = hostname.includes(":") ? `[${hostname}]` : hostname;
      service.log.info("listening", {
        url: `${scheme}://${host}:${port}`,
        public_url: config.publicUrl,
        storage: config.storage,
        database: service.db.driver,
      });
    },
  }, handler);
}

/** A file named by a setting, or an error naming the setting. */
async function readSetting(variable: string, path: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch (error) {
    throw new Error(`${variable}: cannot read ${path}: ${(error as Error).message}`);
  }
}

/** Why the server could not listen, in one line naming the setting to look at. */
function listenError(error: unknown, config: Readonly<Config>): string {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof Deno.errors.AddrInUse) {
    return `ABN_PORT: ${config.host}:${config.port} is already in use (${message})`;
  }
  if (error instanceof Deno.errors.AddrNotAvailable || /lookup address/i.test(message)) {
    return `ABN_HOST: cannot listen on ${config.host} (${message})`;
  }
  if (error instanceof Deno.errors.PermissionDenied) {
    return `ABN_PORT: no permission to listen on ${config.host}:${config.port} (${message})`;
  }
  if (error instanceof Deno.errors.InvalidData || /certificate|private key/i.test(message)) {
    return `ABN_TLS_CERT / ABN_TLS_KEY: not a usable PEM certificate and key (${message})`;
  }
  return message;
}
