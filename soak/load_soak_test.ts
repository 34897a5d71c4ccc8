/**
 * Load at soak scale: the 20 concurrent 20 MB uploads with every analysis awaited (the peak RSS
 * then includes them), 10 s of initiate at 50 concurrent workers in Deno, and the same with wrk
 * when it is installed.
 */
import { assert, assertEquals } from "../tests/_assert.ts";
import { runMain, spawnServer } from "../tests/_server.ts";
import { loadLine, MB, runLoad } from "../tests/reliability/_load.ts";

Deno.test("soak: 16 + 4 concurrent 20 MB uploads and their analyses stay under 400 MB; initiate 10 s at 50 workers", async () => {
  const report = await runLoad({
    distinct: 16,
    same: 4,
    bytes: 20 * MB,
    workers: 50,
    seconds: 10,
    maxRss: 400 * MB,
    waitForAnalyses: true,
  });
  console.log(loadLine("soak load", report));
});

function which(command: string): string | null {
  for (const dir of (Deno.env.get("PATH") ?? "/usr/bin").split(":")) {
    try {
      if (Deno.statSync(`${dir}/${command}`).isFile) return `${dir}/${command}`;
    } catch { /* not here */ }
  }
  return null;
}

const WRK = which("wrk");

Deno.test({
  name: "soak: wrk, 10 s of initiate at 50 connections, no errors",
  ignore: WRK === null,
  async fn() {
    const dataDir = await Deno.makeTempDir({ prefix: "abn-wrk-" });
    const env = { ABN_DATA_DIR: dataDir };
    let server = null;
    try {
      const org = JSON.parse(
        (await runMain(["admin", "org", "create", "wrk", "--json"], env)).stdout,
      );
      const { api_key } = JSON.parse(
        (await runMain(["admin", "key", "create", org.org_id, "--json"], env)).stdout,
      );
      server = await spawnServer(env);
      const script = `${dataDir}/initiate.lua`;
      await Deno.writeTextFile(
        script,
        `wrk.method = "POST"\n` +
          `wrk.body = '{"experiment_id": "wrk-load"}'\n` +
          `wrk.headers["Content-Type"] = "application/json"\n` +
          `wrk.headers["Authorization"] = "Bearer ${api_key}"\n`,
      );
      const out = await new Deno.Command(WRK!, {
        args: [
          "-t2",
          "-c50",
          "-d10s",
          "--timeout",
          "5s",
          "-s",
          script,
          `${server.url}/api/v1/datasets/initiate/`,
        ],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
      console.log(text.trim());
      assertEquals(out.code, 0, text);
      const requests = Number(/(\d+) requests in/.exec(text)?.[1] ?? 0);
      assert(requests > 1000, `only ${requests} requests`);
      assert(!/Non-2xx or 3xx responses/.test(text), text);
      assert(!/Socket errors/.test(text), text);
      const health = await fetch(`${server.url}/healthz`);
      assertEquals(health.status, 200);
      await health.body?.cancel();
    } finally {
      await server?.stop().catch(() => {});
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});
