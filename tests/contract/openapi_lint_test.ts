/**
 * Lints the OpenAPI document with Redocly's CLI (npm, pinned), under the repository's
 * redocly.yaml. Skipped with one line where `npx` is not installed.
 */
import { assertEquals } from "../_assert.ts";
import { apiRoutes } from "../../src/routes/mod.ts";
import { buildDocument, OPERATIONS } from "../../src/openapi/mod.ts";

export const REDOCLY_CLI = "@redocly/cli@2.77.0";
const ROOT = new URL("../../", import.meta.url).pathname;

function npxAvailable(): boolean {
  try {
    new Deno.Command("npx", { args: ["--version"], stdout: "null", stderr: "null" }).outputSync();
    return true;
  } catch {
    return false;
  }
}

const available = npxAvailable();
if (!available) {
  console.log(`OpenAPI lint skipped: npx is not installed (Debian: apt-get install npm)`);
}

Deno.test({
  name: "the OpenAPI document passes redocly lint with the recommended rules",
  ignore: !available,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "abn-openapi-" });
    try {
      const file = `${dir}/openapi.json`;
      await Deno.writeTextFile(file, JSON.stringify(buildDocument(apiRoutes.flat(), OPERATIONS)));
      const out = await new Deno.Command("npx", {
        args: ["-y", REDOCLY_CLI, "lint", "--config", `${ROOT}redocly.yaml`, file],
        cwd: dir,
        env: { REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
      assertEquals(out.code, 0, text);
      // Printed only when there is neither an error nor a warning.
      assertEquals(text.includes("Your API description is valid"), true, text);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
