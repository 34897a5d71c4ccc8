import { assert, assertEquals, eventually } from "../_assert.ts";
import { runMain, spawnServer } from "../_server.ts";

Deno.test("admin CLI manages organizations and keys while the server runs; changes apply within a second", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "abn-admin-" });
  const env = { ABN_DATA_DIR: dataDir };
  const server = await spawnServer(env);
  try {
    const created = await runMain(["admin", "org", "create", "acme", "--json"], env);
    assertEquals(created.code, 0, created.stderr);
    const { org_id } = JSON.parse(created.stdout);
    assert(typeof org_id === "string" && org_id.length > 0);

    const key = await runMain(["admin", "key", "create", org_id, "--json"], env);
    assertEquals(key.code, 0, key.stderr);
    const { api_key, key_id } = JSON.parse(key.stdout);
    assert(/^abn_/.test(api_key));

    const plain = await runMain(["admin", "org", "create", "plain"], env);
    assert(/^org_\S+\n$/.test(plain.stdout), plain.stdout);

    const list = JSON.parse((await runMain(["admin", "org", "list", "--json"], env)).stdout);
    assert(Array.isArray(list));
    assertEquals(list.find((o: { org_id: string }) => o.org_id === org_id)?.name, "acme");
    assertEquals(list.find((o: { org_id: string }) => o.org_id === org_id)?.active, true);

    const call = () =>
      fetch(`${server.url}/api/v1/keys/`, { headers: { authorization: `Bearer ${api_key}` } });
    const res = await call();
    assertEquals(res.status, 200);
    await res.body?.cancel();

    const status = async () => {
      const r = await call();
      await r.body?.cancel();
      return r.status;
    };
    assertEquals((await runMain(["admin", "org", "deactivate", org_id], env)).code, 0);
    assert((await eventually(status, 403, 1000)) <= 1000);

    assertEquals((await runMain(["admin", "org", "activate", org_id], env)).code, 0);
    await eventually(status, 200, 1000);

    const keys = JSON.parse(
      (await runMain(["admin", "key", "list", org_id, "--json"], env)).stdout,
    );
    assertEquals(keys.length, 1);
    assertEquals(keys[0].key_id, key_id);
    assertEquals(JSON.stringify(keys).includes(api_key), false);

    assertEquals((await runMain(["admin", "key", "revoke", key_id], env)).code, 0);
    await eventually(status, 401, 1000);

    const missing = await runMain(["admin", "key", "create", "org_missing"], env);
    assertEquals(missing.code, 1);
    const bad = await runMain(["admin", "org", "fly"], env);
    assertEquals(bad.code, 2);
  } finally {
    await server.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("serve refuses a bad configuration with one line naming the variable", async () => {
  const result = await runMain(["serve"], { ABN_PORT: "eighty" });
  assertEquals(result.code, 1);
  assertEquals(result.stderr.trim().split("\n").length, 1);
  assert(result.stderr.includes("ABN_PORT"), result.stderr);
});

Deno.test("serve starts without allocator settings, and warns of none", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "abn-malloc-" });
  try {
    const server = await spawnServer({ ABN_DATA_DIR: dataDir, GLIBC_TUNABLES: "" });
    await server.stop();
    const lines = server.output().split("\n").filter((l) => l.startsWith("{"));
    const listening = lines.map((l) => JSON.parse(l)).find((l) => l.msg === "listening");
    assert(listening !== undefined, server.output());
    assertEquals(Object.hasOwn(listening, "huge_pages"), false);
    assertEquals(lines.filter((l) => JSON.parse(l).level === "warn"), [], server.output());
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("serve --dev creates the dev organization once and writes its key file", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "abn-dev-" });
  try {
    const server = await spawnServer({ ABN_DATA_DIR: dataDir }, ["serve", "--dev"]);
    const key = (await Deno.readTextFile(`${dataDir}/dev-api-key`)).trim();
    assert(server.output().includes(key));
    const res = await fetch(`${server.url}/api/v1/keys/`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assertEquals(res.status, 200);
    assertEquals((await res.json()).organization.name, "dev");
    await server.stop();
    const again = await spawnServer({ ABN_DATA_DIR: dataDir }, ["serve", "--dev"]);
    assertEquals(again.output().includes(key), false);
    await again.stop();
    const orgs = JSON.parse(
      (await runMain(["admin", "org", "list", "--json"], { ABN_DATA_DIR: dataDir })).stdout,
    );
    assertEquals(orgs.length, 1);
    // An organization `dev` made by hand, or a key file deleted: a new key is written and shown.
    await Deno.remove(`${dataDir}/dev-api-key`);
    const rekeyed = await spawnServer({ ABN_DATA_DIR: dataDir }, ["serve", "--dev"]);
    const newKey = (await Deno.readTextFile(`${dataDir}/dev-api-key`)).trim();
    assert(newKey !== key && rekeyed.output().includes(newKey), rekeyed.output());
    const works = await fetch(`${rekeyed.url}/api/v1/keys/`, {
      headers: { authorization: `Bearer ${newKey}` },
    });
    assertEquals((await works.json()).organization.name, "dev");
    await rekeyed.stop();
    const still = JSON.parse(
      (await runMain(["admin", "org", "list", "--json"], { ABN_DATA_DIR: dataDir })).stdout,
    );
    assertEquals(still.length, 1);
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});
