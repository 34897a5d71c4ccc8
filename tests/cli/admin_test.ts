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

    // A storage quota: 0 refuses every upload URL, `none` brings back the default (none here).
    const grant = async () => {
      const r = await fetch(`${server.url}/api/v1/datasets/initiate/`, {
        method: "POST",
        headers: { authorization: `Bearer ${api_key}`, "content-type": "application/json" },
        body: JSON.stringify({ experiment_id: "quota" }),
      });
      await r.body?.cancel();
      return r.status;
    };
    assertEquals(await grant(), 200);
    const zero = await runMain(["admin", "org", "set-quota", org_id, "0", "--json"], env);
    assertEquals(zero.code, 0, zero.stderr);
    assertEquals(JSON.parse(zero.stdout), { org_id, quota_bytes: 0 });
    assert((await eventually(grant, 403, 1500)) <= 1500);
    const none = await runMain(["admin", "org", "set-quota", org_id, "none"], env);
    assertEquals(none.stdout, `${org_id} quota none (ABN_ORG_QUOTA_BYTES applies)\n`);
    await eventually(grant, 200, 1500);
    const set = await runMain(["admin", "org", "set-quota", org_id, "5000000000"], env);
    assertEquals(set.stdout, `${org_id} quota 5000000000 bytes\n`);
    const listed = JSON.parse((await runMain(["admin", "org", "list", "--json"], env)).stdout);
    assertEquals(listed.find((o: { org_id: string }) => o.org_id === org_id)?.quota_bytes, 5e9);
    for (const bad of [["10GB"], ["-1"], ["1.5"], []]) {
      const refused = await runMain(["admin", "org", "set-quota", org_id, ...bad], env);
      assertEquals(refused.code, 2, bad.join(" "));
      assert(/expected a whole number of bytes or none/.test(refused.stderr), refused.stderr);
    }
    assertEquals((await runMain(["admin", "org", "set-quota", "org_missing", "1"], env)).code, 1);

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

Deno.test("admin CLI creates scoped, named, expiring keys, lists their scopes and status, and rotates them", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "abn-admin-keys-" });
  const env = { ABN_DATA_DIR: dataDir };
  const server = await spawnServer(env);
  try {
    const { org_id } = JSON.parse(
      (await runMain(["admin", "org", "create", "acme", "--json"], env)).stdout,
    );
    const created = await runMain([
      "admin",
      "key",
      "create",
      org_id,
      "--scopes",
      "read,upload",
      "--name=ci pipeline",
      "--expires-in-days",
      "30",
      "--json",
    ], env);
    assertEquals(created.code, 0, created.stderr);
    const key = JSON.parse(created.stdout);
    assert(/^abn_/.test(key.api_key));
    assertEquals(key.scopes, ["upload", "read"]);
    assertEquals(key.name, "ci pipeline");
    const days = (Date.parse(key.expires_at) - Date.now()) / 86_400_000;
    assert(days > 29.99 && days <= 30, key.expires_at);

    const call = (apiKey: string, path: string, init: RequestInit = {}) =>
      fetch(`${server.url}/api/v1${path}`, {
        ...init,
        headers: { authorization: `Bearer ${apiKey}` },
      });
    const read = await call(key.api_key, "/datasets/");
    assertEquals(read.status, 200);
    await read.body?.cancel();
    const denied = await call(key.api_key, "/keys/", { method: "POST", body: "{}" });
    assertEquals(denied.status, 403);
    assertEquals((await denied.json()).error.code, "insufficient_scope");

    const all = JSON.parse(
      (await runMain(["admin", "key", "create", org_id, "--json"], env)).stdout,
    );
    assertEquals(all.scopes, ["upload", "read", "write", "admin"]);
    assertEquals(all.expires_at, null);

    for (
      const bad of [
        ["--scopes", "read,delete"],
        ["--scopes", ""],
        ["--expires-in-days", "0"],
        ["--expires-in-days", "soon"],
        ["--color", "red"],
      ]
    ) {
      const refused = await runMain(["admin", "key", "create", org_id, ...bad], env);
      assertEquals(refused.code, 2, `${bad.join(" ")}: ${refused.stdout}`);
    }
    const unknownScope = await runMain(
      ["admin", "key", "create", org_id, "--scopes", "read,delete"],
      env,
    );
    assert(unknownScope.stderr.includes('"delete"'), unknownScope.stderr);

    const listed = (await runMain(["admin", "key", "list", org_id], env)).stdout.trim()
      .split("\n");
    assertEquals(listed.length, 2);
    const line = listed.find((l) => l.startsWith(key.key_id)) ?? "";
    assert(line.includes("\tactive\tupload,read\t"), line);
    assert(line.includes(`expires ${key.expires_at}`) && line.endsWith("ci pipeline"), line);

    const status = async (apiKey: string) => {
      const res = await call(apiKey, "/keys/");
      await res.body?.cancel();
      return res.status;
    };
    const rotated = await runMain(
      ["admin", "key", "rotate", key.key_id, "--overlap-hours", "0", "--json"],
      env,
    );
    assertEquals(rotated.code, 0, rotated.stderr);
    const next = JSON.parse(rotated.stdout);
    assertEquals(next.scopes, ["upload", "read"]);
    assertEquals(next.name, "ci pipeline");
    assert(next.key_id !== key.key_id && next.api_key !== key.api_key);
    // The old key stops within a second (the server's key cache); the new one works.
    await eventually(() => status(key.api_key), 401, 1000);
    assertEquals(await status(next.api_key), 200);
    const after = JSON.parse(
      (await runMain(["admin", "key", "list", org_id, "--json"], env)).stdout,
    );
    const byId = new Map(after.map((k: { key_id: string }) => [k.key_id, k]));
    assertEquals((byId.get(key.key_id) as { status: string }).status, "expired");
    assertEquals((byId.get(next.key_id) as { status: string }).status, "active");

    const again = await runMain(["admin", "key", "rotate", key.key_id], env);
    assertEquals(again.code, 1);
    assert(again.stderr.includes("expired"), again.stderr);
    const badOverlap = await runMain(
      ["admin", "key", "rotate", next.key_id, "--overlap-hours", "169"],
      env,
    );
    assertEquals(badOverlap.code, 2);
    assertEquals((await runMain(["admin", "key", "rotate", "key_missing"], env)).code, 1);

    // Key changes made here are in the organization's audit trail, made by no key.
    const audit = await (await call(all.api_key, "/audit/")).json();
    assertEquals(
      audit.events.map((e: { action: string; details: { target_key_id: string } }) => [
        e.action,
        e.details.target_key_id,
      ]),
      [["key.rotated", key.key_id], ["key.created", all.key_id], ["key.created", key.key_id]],
    );
    for (const e of audit.events) assertEquals([e.key_id, e.details.via], [null, "admin_cli"]);
    assertEquals(audit.events[0].details.new_key_id, next.key_id);

    // Revoking the organization's last admin key is allowed here, with a warning.
    const revoked = await runMain(["admin", "key", "revoke", all.key_id], env);
    assertEquals(revoked.code, 0, revoked.stderr);
    assert(revoked.stderr.includes("no active admin key left"), revoked.stderr);
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
