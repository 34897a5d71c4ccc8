import { assertEquals, assertThrows } from "./_assert.ts";
import { ConfigError, loadConfig, redactDatabaseUrl } from "../src/config.ts";

Deno.test("loadConfig answers the documented defaults", () => {
  const c = loadConfig({});
  assertEquals(c.host, "127.0.0.1");
  assertEquals(c.port, 8080);
  assertEquals(c.publicUrl, "http://127.0.0.1:8080");
  assertEquals(c.dataDir, "./data");
  assertEquals(c.dbPath, "./data/abn.sqlite");
  assertEquals(c.storage, "local");
  assertEquals(c.maxUploadBytes, 209_715_200);
  assertEquals(c.presignTtlSeconds, 900);
  assertEquals(c.cleanupIntervalSeconds, 600);
  assertEquals(c.scanIntervalSeconds, 15);
  assertEquals(c.reconcileIntervalSeconds, 3600);
  assertEquals(c.bodyIdleTimeoutSeconds, 30);
  assertEquals(c.rateLimitPerMinute, 0);
  assertEquals(c.historyMaxSnapshots, 1000);
  assertEquals(loadConfig({ ABN_HISTORY_MAX_SNAPSHOTS: "365" }).historyMaxSnapshots, 365);
  assertThrows(() => loadConfig({ ABN_HISTORY_MAX_SNAPSHOTS: "0" }), ConfigError);
  assertEquals(Object.isFrozen(c), true);
});

Deno.test("loadConfig uses 127.0.0.1 in the public URL when listening on 0.0.0.0", () => {
  assertEquals(
    loadConfig({ ABN_HOST: "0.0.0.0", ABN_PORT: "9000" }).publicUrl,
    "http://127.0.0.1:9000",
  );
});

Deno.test("loadConfig strips a trailing slash from ABN_PUBLIC_URL", () => {
  assertEquals(
    loadConfig({ ABN_PUBLIC_URL: "https://abn.example/" }).publicUrl,
    "https://abn.example",
  );
});

for (
  const [env, name] of [
    [{ ABN_PORT: "eighty" }, "ABN_PORT"],
    [{ ABN_PORT: "70000" }, "ABN_PORT"],
    [{ ABN_STORAGE: "ftp" }, "ABN_STORAGE"],
    [{ ABN_RECONCILE_INTERVAL_SECONDS: "0" }, "ABN_RECONCILE_INTERVAL_SECONDS"],
    [{ ABN_STORAGE: "s3" }, "ABN_S3_BUCKET"],
    [{ ABN_STORAGE: "s3", ABN_S3_BUCKET: "Bad_Bucket" }, "ABN_S3_BUCKET"],
    [{ ABN_MAX_UPLOAD_BYTES: "-1" }, "ABN_MAX_UPLOAD_BYTES"],
    [{ ABN_PRESIGN_TTL_SECONDS: "1.5" }, "ABN_PRESIGN_TTL_SECONDS"],
    [{ ABN_CLEANUP_INTERVAL_SECONDS: "21600" }, "ABN_CLEANUP_INTERVAL_SECONDS"],
    [{ ABN_PUBLIC_URL: "not a url" }, "ABN_PUBLIC_URL"],
    [{ ABN_PUBLIC_URL: "http://h/api/v1" }, "ABN_PUBLIC_URL"],
    [{ ABN_PUBLIC_URL: "http://h/API/V1/datasets" }, "ABN_PUBLIC_URL"],
    [{ ABN_PUBLIC_URL: "http://h/?a=1" }, "ABN_PUBLIC_URL"],
    [{ ABN_PUBLIC_URL: "http://h/base#f" }, "ABN_PUBLIC_URL"],
    [{ ABN_PORT: "0" }, "ABN_PORT"],
    [{ ABN_S3_FORCE_PATH_STYLE: "maybe" }, "ABN_S3_FORCE_PATH_STYLE"],
    [{ ABN_TLS_CERT: "/c.pem" }, "ABN_TLS_CERT"],
    [{ ABN_S3_ACCESS_KEY_ID: "id" }, "ABN_S3_ACCESS_KEY_ID"],
    [{ ABN_DATABASE_URL: "mysql://u:p@h/db" }, "ABN_DATABASE_URL"],
    [{ ABN_DATABASE_URL: "postgres://u:p@h" }, "ABN_DATABASE_URL"],
    [{ ABN_ANALYSIS_LEASE_SECONDS: "0" }, "ABN_ANALYSIS_LEASE_SECONDS"],
  ] as [Record<string, string>, string][]
) {
  Deno.test(`loadConfig refuses ${JSON.stringify(env)} naming ${name}`, () => {
    const error = assertThrows(() => loadConfig(env), ConfigError);
    assertEquals(error.message.includes(name), true, error.message);
    assertEquals(error.message.includes("\n"), false);
  });
}

Deno.test("loadConfig keeps ABN_DATABASE_URL and never repeats its password when refusing it", () => {
  const url = "postgres://abn:s3cr3t-pw@db.internal:5432/abn?sslmode=verify-full";
  const c = loadConfig({ ABN_DATABASE_URL: url });
  assertEquals(c.databaseUrl, url);
  assertEquals(c.analysisLeaseSeconds, 60);
  assertEquals(loadConfig({}).databaseUrl, undefined);
  for (const bad of ["postgres://abn:s3cr3t-pw@db.internal", "s3cr3t-pw not a url"]) {
    const error = assertThrows(() => loadConfig({ ABN_DATABASE_URL: bad }), ConfigError);
    assertEquals(error.message.includes("s3cr3t-pw"), false, error.message);
  }
  assertEquals(
    redactDatabaseUrl(url),
    "postgres://abn:***@db.internal:5432/abn?sslmode=verify-full",
  );
});

Deno.test("redactDatabaseUrl hides a password holding @ or / whole, and a password= parameter", () => {
  const cases: [string, string][] = [
    ["postgres://abn:p@ss@db:5432/abn", "postgres://abn:***@db:5432/abn"],
    ["postgres://abn:a/b@c@db/abn?x=1", "postgres://abn:***@db/abn?x=1"],
    [
      "postgres://abn@db/abn?password=t0p@secret&sslmode=require",
      "postgres://abn@db/abn?password=***&sslmode=require",
    ],
    ["postgres://abn:pw@db/abn?PASSWORD=x", "postgres://abn:***@db/abn?PASSWORD=***"],
    ["postgres://db/abn", "postgres://db/abn"],
  ];
  for (const [url, expected] of cases) assertEquals(redactDatabaseUrl(url), expected);
  for (const secret of ["p@ss", "t0p@secret"]) {
    const bad = secret === "p@ss"
      ? `postgres://abn:${secret}@host`
      : `postgres://abn@host?password=${secret}`;
    const error = assertThrows(() => loadConfig({ ABN_DATABASE_URL: bad }), ConfigError);
    assertEquals(error.message.includes(secret), false, error.message);
    assertEquals(error.message.includes("ss@host"), false, error.message);
  }
});

Deno.test("serve refuses a port in use and unreadable TLS files in one line naming the setting", async () => {
  const { freePort, runMain } = await import("./_server.ts");
  const dataDir = await Deno.makeTempDir({ prefix: "abn-listen-" });
  const port = freePort();
  const taken = Deno.listen({ hostname: "127.0.0.1", port });
  try {
    const env = { ABN_DATA_DIR: dataDir };
    const inUse = await runMain(["serve"], { ...env, ABN_PORT: String(port) });
    assertEquals(inUse.code, 1);
    assertEquals(inUse.stderr.trim().split("\n").length, 1, inUse.stderr);
    assertEquals(
      inUse.stderr.startsWith(`Cannot start: ABN_PORT: 127.0.0.1:${port} is already in use`),
      true,
      inUse.stderr,
    );
    const tls = await runMain(["serve"], {
      ...env,
      ABN_PORT: String(freePort()),
      ABN_TLS_CERT: `${dataDir}/no-such.pem`,
      ABN_TLS_KEY: `${dataDir}/no-such-key.pem`,
    });
    assertEquals(tls.code, 1);
    assertEquals(tls.stderr.trim().split("\n").length, 1, tls.stderr);
    assertEquals(
      tls.stderr.startsWith(`Cannot start: ABN_TLS_CERT: cannot read ${dataDir}/no-such.pem`),
      true,
      tls.stderr,
    );
  } finally {
    taken.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});
