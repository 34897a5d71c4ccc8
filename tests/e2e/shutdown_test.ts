import { assert, assertEquals } from "../_assert.ts";
import { runMain, spawnServer } from "../_server.ts";

Deno.test("SIGTERM lets an in-flight upload finish, refuses new connections, and exits 0", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "abn-shutdown-" });
  const env = { ABN_DATA_DIR: dataDir };
  const org = JSON.parse((await runMain(["admin", "org", "create", "acme", "--json"], env)).stdout);
  const { api_key } = JSON.parse(
    (await runMain(["admin", "key", "create", org.org_id, "--json"], env)).stdout,
  );
  const server = await spawnServer(env);
  try {
    const encoder = new TextEncoder();
    let release!: () => void;
    const gate = new Promise<void>((r) => release = r);
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(encoder.encode("user_id,variant,date,m\n"));
        await gate;
        controller.enqueue(encoder.encode("u1,A,2026-01-01,1\n"));
        controller.close();
      },
    });
    const pending = fetch(`${server.url}/api/v1/datasets/upload/?experiment_id=slow`, {
      method: "POST",
      headers: { authorization: `Bearer ${api_key}` },
      body,
    });
    await new Promise((r) => setTimeout(r, 300));
    server.process.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 300));
    release();
    const res = await pending;
    assertEquals(res.status, 201, await res.text());
    const status = await server.stop();
    assertEquals(status.code, 0);
    assert(server.output().includes("shutting down"));
    const stored = await Deno.readTextFile(
      `${dataDir}/storage/org/${org.org_id}/experiments/slow/latest.csv`,
    );
    assertEquals(stored, "user_id,variant,date,m\nu1,A,2026-01-01,1\n");
    let refused = false;
    try {
      await fetch(`${server.url}/healthz`);
    } catch {
      refused = true;
    }
    assert(refused);
  } finally {
    await server.stop().catch(() => {});
    await Deno.remove(dataDir, { recursive: true });
  }
});
