/**
 * Schemathesis (PyPI, pinned in tests/contract/requirements.txt) against the real service on each
 * storage driver: every operation of `GET /api/v1/openapi.json`, generated from the document with
 * a fixed seed and a bounded number of cases, under all of its default checks (server errors,
 * status code, content type, header and schema conformance, negative data rejected, positive data
 * accepted, authentication enforced, undeclared methods answered 405). The organization holds a
 * dataset under the document's example id, so the examples read a real analysis. Any failure
 * fails the test with Schemathesis' report. Without the virtual environment `.ci/run` makes, the
 * test is skipped with one line saying how to make it.
 */
import { assert, assertEquals } from "../_assert.ts";
import { DRIVERS, type DriverServer, startDriverServer } from "../_drivers.ts";
import { waitFor } from "../_faults.ts";
import { clientPython } from "../clients/_python.ts";
import { EXAMPLE_EXPERIMENT_ID } from "../../src/openapi/parameters.ts";

const TOKEN = "storage-events-token-for-the-contract-test";
// Fixed for CI; a deeper run by hand: ABN_SCHEMATHESIS_EXAMPLES=200 ABN_SCHEMATHESIS_SEED=7.
const SEED = Number(Deno.env.get("ABN_SCHEMATHESIS_SEED") ?? 20261201);
const MAX_EXAMPLES = Number(Deno.env.get("ABN_SCHEMATHESIS_EXAMPLES") ?? 8);
/** The whole Schemathesis run, per driver (a deeper run gets more). */
const TIME_LIMIT_MS = Math.max(60_000, MAX_EXAMPLES * 2_000);

function schemathesis(): string | null {
  const python = clientPython();
  if (python === null) return null;
  const path = `${python.slice(0, python.lastIndexOf("/") + 1)}schemathesis`;
  try {
    return Deno.statSync(path).isFile ? path : null;
  } catch {
    return null;
  }
}

const ST = schemathesis();
if (ST === null) {
  console.log(
    "Schemathesis tests skipped: no .venv-ci/bin/schemathesis (run .ci/run, or .venv-ci/bin/pip install -r tests/contract/requirements.txt)",
  );
}

const enc = new TextEncoder();
const CSV = "user_id,variant,date,converted,revenue\n" +
  Array.from(
    { length: 40 },
    (_, i) =>
      `u${i},${i % 2 ? "B" : "A"},2026-11-${String(1 + (i % 28)).padStart(2, "0")},${
        i % 3 ? 1 : 0
      },${i * 1.5}`,
  ).join("\n") + "\n";

async function call(server: DriverServer, path: string, init: RequestInit = {}) {
  const res = await fetch(`${server.api}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${server.apiKey}`, ...init.headers },
  });
  const text = await res.text();
  assert(res.status < 300, `${path} answered ${res.status}: ${text}`);
  return JSON.parse(text);
}

/** Delivers `body` to `id` and waits for its analysis to be ready. */
async function deliver(server: DriverServer, id: string, body: string): Promise<void> {
  const stored = await call(server, `/datasets/upload/?experiment_id=${id}`, {
    method: "POST",
    body: enc.encode(body),
  });
  await waitFor(
    async () => {
      const analysis = await call(server, `/datasets/${id}/analysis/`);
      return analysis.dataset.etag === stored.etag && analysis.status === "ready";
    },
    `the analysis of ${id}`,
    30_000,
  );
}

function toml(value: string): string {
  return JSON.stringify(value);
}

/**
 * The fixture organization (a dataset with two snapshots under the example id, a second dataset
 * so the list has a next page, a grant for the local upload URL) and the configuration that hands
 * Schemathesis what it cannot make itself.
 */
async function prepare(server: DriverServer): Promise<string> {
  await deliver(server, EXAMPLE_EXPERIMENT_ID, CSV);
  await deliver(server, EXAMPLE_EXPERIMENT_ID, CSV + "u99,A,2026-11-30,1,3\n");
  await deliver(server, `${EXAMPLE_EXPERIMENT_ID}_2`, CSV);
  const list = await call(server, "/datasets/?limit=1");
  const history = await call(server, `/datasets/${EXAMPLE_EXPERIMENT_ID}/history/?limit=1`);
  const audit = await call(server, "/audit/?limit=1");
  assert(
    list.next_cursor && history.next_cursor && audit.next_cursor,
    "the fixture has second pages",
  );
  const grant = await call(server, "/datasets/initiate/", {
    method: "POST",
    body: JSON.stringify({ experiment_id: `${EXAMPLE_EXPERIMENT_ID}_put` }),
  });
  const url = new URL(grant.upload_url);
  const local = server.driver === "local";
  const key = local ? decodeURIComponent(url.pathname.slice("/storage/".length)) : grant.key;
  return `# Written by tests/contract/schemathesis_test.ts for one run.
headers = { Authorization = ${toml(`Bearer ${server.apiKey}`)} }
request-timeout = 10

# A cursor is sealed by the service: a string it did not issue is refused (400). Real ones, so
# the cases page through real lists; a history cursor belongs to one experiment.
[[operations]]
include-operation-id = "listDatasets"
parameters = { "query.cursor" = ${toml(list.next_cursor)} }

[[operations]]
include-operation-id = "listAuditEvents"
parameters = { "query.cursor" = ${toml(audit.next_cursor)} }

[[operations]]
include-operation-id = "getHistory"
parameters = { "path.experiment_id" = ${toml(EXAMPLE_EXPERIMENT_ID)}, "query.cursor" = ${
    toml(history.next_cursor)
  } }

# An upload URL signed by the service (local storage; S3 storage answers this route 404).
[[operations]]
include-operation-id = "putUploadUrl"
parameters = { "path.key" = ${toml(key)}, "query.expires" = ${
    local ? Number(url.searchParams.get("expires")) : 0
  }, "query.key_id" = ${toml(url.searchParams.get("key_id") ?? "")}, "query.signature" = ${
    toml(local ? url.searchParams.get("signature")! : "none")
  } }

# The storage events take the service's token, not an API key.
[[operations]]
include-operation-id = "postStorageEvents"
headers = { Authorization = ${toml(`Bearer ${TOKEN}`)} }

# A size_bytes above the upload limit (the schema's maximum) is refused 413 payload_too_large, as
# a declared Content-Length above it is: the size is the problem, not the request's shape.
[[operations]]
include-operation-id = "initiateUpload"
checks.negative_data_rejection.expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"]

# What JSON Schema cannot state: a CSV's rules (required columns, calendar dates, the same field
# count on every row) and settings that must fit the stored data (a split summing to 1, names of
# its variants and metric columns). Bytes or settings the schema allows but these rules refuse are
# answered 400 with the rule's code, which the operation declares.
#
# The same for keys: an expiry must lie in the future, and only an active key can be rotated (a
# key the run revoked or rotated before is refused 400 invalid_key_request). And for webhooks: a
# URL's host must resolve to public addresses, which a schema cannot say (400 invalid_webhook_url).
[[operations]]
include-operation-id = ["uploadDataset", "putSettings", "createKey", "rotateKey", "createWebhook", "updateWebhook"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
`;
}

async function run(server: DriverServer, st: string): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "abn-schemathesis-" });
  try {
    const config = `${dir}/schemathesis.toml`;
    await Deno.writeTextFile(config, await prepare(server));
    const out = await new Deno.Command(st, {
      args: [
        "--config-file",
        config,
        "run",
        `${server.api}/openapi.json`,
        "--seed",
        String(SEED),
        "--max-examples",
        String(MAX_EXAMPLES),
        "--workers",
        "1",
        "--generation-database",
        "none",
        "--no-color",
      ],
      cwd: dir,
      env: { SCHEMATHESIS_TELEMETRY: "false", NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(TIME_LIMIT_MS),
    }).output();
    const report = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assertEquals(out.code, 0, `Schemathesis failed (exit ${out.code}):\n${report}`);
    assert(/Test cases:\s+\d+ generated/.test(report), report);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

for (const driver of DRIVERS) {
  Deno.test({
    name: `Schemathesis finds no failure against the OpenAPI document (${driver})`,
    ignore: ST === null,
    async fn() {
      const server = await startDriverServer(driver, { ABN_STORAGE_EVENTS_TOKEN: TOKEN });
      try {
        await run(server, ST!);
      } finally {
        await server.close();
      }
    },
  });
}
