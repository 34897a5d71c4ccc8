/**
 * Entry point: `serve [--dev]`, `admin …`, `upload …`. Only wires and starts.
 */
import { ConfigError, loadConfig } from "./src/config.ts";
import type { Config } from "./src/config.ts";
import { runAdmin } from "./src/cli/admin.ts";
import { runHealthcheck } from "./src/cli/healthcheck.ts";
import { runUpload } from "./src/cli/upload_client.ts";
import { serve } from "./src/server.ts";

const USAGE = `usage: main.ts <command>
  serve [--dev]          run the service (configuration from ABN_* variables)
  admin …                organizations and API keys (main.ts admin --help)
  upload FILE --experiment-id ID [--two-step] [--history] [--url URL] [--key KEY] [--json]
                         deliver a CSV (main.ts upload --help)
  healthcheck [--url URL]  exit 0 when the local service answers GET /healthz with 200`;

export async function main(args: string[]): Promise<number> {
  const [command, ...rest] = args;
  let config: Readonly<Config>;
  try {
    config = loadConfig(Deno.env.toObject());
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`Configuration error: ${error.message}`);
      return 1;
    }
    throw error;
  }
  switch (command) {
    case "serve":
      return await serve(config, { dev: rest.includes("--dev") });
    case "admin":
      return await runAdmin(rest, config);
    case "upload":
      return await runUpload(rest, config, Deno.env.toObject());
    case "healthcheck":
      return await runHealthcheck(rest, config);
    default:
      console.error(USAGE);
      return command === undefined || command === "--help" ? 0 : 2;
  }
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
