/**
 * Test fixtures: the real service on 127.0.0.1 (in-process, or as a child process), with a fresh
 * data directory, an organization and an API key.
 */
import { loadConfig } from "../src/config.ts";
import type { Service, ServiceOptions } from "../src/wiring.ts";
import { createService } from "../src/wiring.ts";
import { SqliteControlPlane } from "../src/db/sqlite/sqlite_control_plane.ts";
import type { DatabaseSync } from "node:sqlite";
import { responseContract } from "./contract/_contract.ts";

export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

export interface TestServer {
  url: string;
  api: string;
  dataDir: string;
  service: Service;
  orgId: string;
  apiKey: string;
  /** Creates another organization with a key. */
  newOrg(name?: string): Promise<{ orgId: string; apiKey: string }>;
  close(): Promise<void>;
}

export interface TestServerOptions extends ServiceOptions {
  /** A port chosen beforehand (e.g. for a store built with the public URL); default a free one. */
  port?: number;
  /** A data directory made beforehand; default a fresh temporary one. Removed at close. */
  dataDir?: string;
}

export async function startTestServer(
  env: Record<string, string> = {},
  { port = freePort(), dataDir, ...options }: TestServerOptions = {},
): Promise<TestServer> {
  dataDir ??= await Deno.makeTempDir({ prefix: "abn-test-" });
  // ABN_TEST_CONTROL_PLANE=postgres: in-process servers get a fresh PostgreSQL database each
  // (a run of the SQLite suites on the other driver; tests that break SQLite on purpose fail).
  let database: { url: string; drop(): Promise<void> } | undefined;
  if (Deno.env.get("ABN_TEST_CONTROL_PLANE") === "postgres" && !env.ABN_DATABASE_URL) {
    const { sharedCluster } = await import("./_postgres.ts");
    database = await (await sharedCluster()).database();
    env = { ...env, ABN_DATABASE_URL: database.url };
  }
  const config = loadConfig({
    ABN_DATA_DIR: dataDir,
    ABN_PORT: String(port),
    ABN_HOST: "127.0.0.1",
    ...env,
  });
  const service = await createService(config, { log: () => {}, ...options }).catch(
    async (error) => {
      await database?.drop();
      throw error;
    },
  );
  // Every answer is checked against the OpenAPI document; what breaks it fails the test at close.
  const contract = responseContract();
  const violations: string[] = [];
  const handler = async (req: Request, info: Deno.ServeHandlerInfo) => {
    const response = await service.handler(req, info);
    try {
      const checked = await contract.check(req.method, req.url, response);
      violations.push(...checked.problems);
      return checked.response;
    } catch (error) {
      violations.push(`${req.method} ${req.url}: the answer could not be checked: ${error}`);
      return response;
    }
  };
  const controller = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port, signal: controller.signal, onListen: () => {} },
    handler,
  );
  const newOrg = async (name = "test") => {
    const org = await service.db.orgs.create(name);
    return { orgId: org.id, apiKey: (await service.db.keys.create(org.id)).api_key };
  };
  const first = await newOrg("first");
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    api: `${url}/api/v1`,
    dataDir,
    service,
    orgId: first.orgId,
    apiKey: first.apiKey,
    newOrg,
    async close() {
      controller.abort();
      await server.finished;
      await service.close();
      await database?.drop();
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
      if (violations.length > 0) {
        throw new Error(
          `${violations.length} answers break the OpenAPI document (src/openapi/):\n${
            [...new Set(violations)].join("\n")
          }`,
        );
      }
    },
  };
}

/** The SQLite handle of a test server on the default control plane (to break it on purpose). */
export function sqliteOf(server: TestServer): DatabaseSync {
  const db = server.service.db;
  if (!(db instanceof SqliteControlPlane)) throw new TypeError("the server does not run on SQLite");
  return db.sqlite;
}

export interface ChildServer {
  url: string;
  process: Deno.ChildProcess;
  output(): string;
  stop(signal?: Deno.Signal): Promise<Deno.CommandStatus>;
}

/** Starts `main.ts serve` as a child process and waits for its "listening" line. */
export async function spawnServer(
  env: Record<string, string>,
  args: string[] = ["serve"],
): Promise<ChildServer> {
  const port = env.ABN_PORT ?? String(freePort());
  const command = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("../main.ts", import.meta.url).pathname, ...args],
    env: { ABN_HOST: "127.0.0.1", ABN_PORT: port, ...env },
    stdout: "piped",
    stderr: "piped",
  });
  const process = command.spawn();
  let text = "";
  const decoder = new TextDecoder();
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) text += decoder.decode(chunk, { stream: true });
  };
  const done = Promise.all([collect(process.stdout), collect(process.stderr)]);
  const deadline = Date.now() + 30_000;
  while (!text.includes('"msg":"listening"')) {
    if (Date.now() > deadline) {
      process.kill("SIGKILL");
      throw new Error(`server did not start:\n${text}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `http://127.0.0.1:${port}`,
    process,
    output: () => text,
    async stop(signal: Deno.Signal = "SIGTERM") {
      try {
        process.kill(signal);
      } catch { /* already exited */ }
      const status = await process.status;
      await done;
      return status;
    },
  };
}

/** Runs `main.ts` with arguments and answers its exit code and output. */
export async function runMain(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("../main.ts", import.meta.url).pathname, ...args],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const d = new TextDecoder();
  return { code: out.code, stdout: d.decode(out.stdout), stderr: d.decode(out.stderr) };
}
