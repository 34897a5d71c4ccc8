/**
 * A throwaway S3 service for tests: s3rver 3.7.1 on 127.0.0.1 with a fresh directory and a fresh
 * bucket, run by Node in a child process.
 *
 * Why Node: s3rver encrypts ListObjectsV2 continuation tokens with DES, which Deno's `node:crypto`
 * lacks (ERR_CRYPTO_UNKNOWN_CIPHER), so any truncated listing failed with a 500 when s3rver ran
 * inside Deno; Node has it behind `--openssl-legacy-provider`. A separate process also keeps the
 * server off the event loop of the code under test. The package comes from Deno's own npm cache:
 * `deno install` lays it out once under the system temp directory (offline when cached), outside
 * the repository.
 *
 * s3rver checks presigned expiry but not SigV4 signatures, and answers 501 NotImplemented to
 * ListMultipartUploads and AbortMultipartUpload: test those paths with an injected client.
 */
import { tmpdir } from "node:os";

export interface S3rverFixture {
  /** `http://127.0.0.1:{port}`; use path-style addressing. */
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Where s3rver keeps the bucket's files. */
  directory: string;
  /** Stops the server and removes the directory. */
  stop(): Promise<void>;
}

/** The service's configuration for the bucket of `s3` (`ABN_STORAGE=s3` and its `ABN_S3_*`). */
export function s3Env(s3: S3rverFixture): Record<string, string> {
  return {
    ABN_STORAGE: "s3",
    ABN_S3_ENDPOINT: s3.endpoint,
    ABN_S3_REGION: s3.region,
    ABN_S3_BUCKET: s3.bucket,
    ABN_S3_ACCESS_KEY_ID: s3.accessKeyId,
    ABN_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
  };
}

const S3RVER_VERSION = "3.7.1";

/**
 * Runs in Node: starts s3rver, prints its port, stops when stdin closes. An exception s3rver does
 * not catch (a client gone mid-request) is written to stderr, which the fixture prints at the end,
 * instead of ending the process under the test.
 */
const SERVER_SCRIPT = `
process.on("uncaughtException", (error) => console.error("uncaught:", error));
const S3rver = require("s3rver");
const [directory, bucket] = process.argv.slice(1);
const server = new S3rver({
  address: "127.0.0.1", port: 0, silent: true, directory, vhostBuckets: false,
  configureBuckets: [{ name: bucket, configs: [] }],
});
let stopping = false;
function stop() {
  if (stopping) return;
  stopping = true;
  server.httpServer.closeAllConnections();
  server.close().then(() => process.exit(0), () => process.exit(1));
}
server.run().then(({ port }) => {
  process.stdout.write(JSON.stringify({ port }) + "\\n");
  process.stdin.on("end", stop).on("error", stop).resume();
  process.on("SIGTERM", stop);
}, (error) => {
  console.error(error);
  process.exit(1);
});
`;

let installing: Promise<string> | null = null;

/** The directory whose `node_modules` holds s3rver, laid out once from Deno's npm cache. */
function installS3rver(): Promise<string> {
  installing ??= (async () => {
    const home = `${tmpdir()}/abn-s3rver-${S3RVER_VERSION}`;
    if (await exists(`${home}/node_modules/s3rver/package.json`)) return home;
    const staging = await Deno.makeTempDir({ prefix: `abn-s3rver-${S3RVER_VERSION}-` });
    await Deno.writeTextFile(
      `${staging}/package.json`,
      JSON.stringify({ private: true, dependencies: { s3rver: S3RVER_VERSION } }),
    );
    const install = async (...flags: string[]) =>
      await new Deno.Command(Deno.execPath(), {
        args: ["install", "--node-modules-dir=auto", ...flags],
        cwd: staging,
        stdout: "null",
        stderr: "piped",
      }).output();
    let result = await install("--cached-only");
    if (!result.success) result = await install();
    if (!result.success) {
      await Deno.remove(staging, { recursive: true }).catch(() => {});
      throw new Error(
        `Cannot install s3rver ${S3RVER_VERSION} for the test fixture: ${
          new TextDecoder().decode(result.stderr).trim()
        }`,
      );
    }
    try {
      await Deno.rename(staging, home);
    } catch {
      // Another test process got there first; use its copy.
      await Deno.remove(staging, { recursive: true }).catch(() => {});
    }
    return home;
  })();
  installing.catch(() => installing = null);
  return installing;
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

/** Reads the first line of `stream`, then keeps draining it in the background. */
async function firstLine(
  stream: ReadableStream<Uint8Array>,
): Promise<{ line: string | null; drained: Promise<void> }> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { done, value } = await reader.read();
    if (done) {
      return { line: null, drained: Promise.resolve() };
    }
    text += value;
  }
  const drained = (async () => {
    while (!(await reader.read()).done) { /* discard */ }
  })();
  return { line: text.slice(0, text.indexOf("\n")), drained };
}

/** Starts s3rver on a free port with a new, empty bucket. */
export async function startS3rver(): Promise<S3rverFixture> {
  const home = await installS3rver();
  const directory = await Deno.makeTempDir({ prefix: "abn-s3rver-data-" });
  const bucket = `abn-test-${crypto.randomUUID().slice(0, 8)}`;
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command("node", {
      args: ["--openssl-legacy-provider", "-e", SERVER_SCRIPT, directory, bucket],
      cwd: home,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  } catch (error) {
    await Deno.remove(directory, { recursive: true }).catch(() => {});
    throw new Error("Cannot start s3rver: the test fixture runs it with Node (`node` on PATH)", {
      cause: error,
    });
  }
  const stderr = new Response(child.stderr).text();
  const { line, drained } = await firstLine(child.stdout);
  const port = line === null ? NaN : Number(JSON.parse(line).port);
  if (!Number.isInteger(port)) {
    await child.stdin.close().catch(() => {});
    await child.status;
    await Deno.remove(directory, { recursive: true }).catch(() => {});
    throw new Error(`Cannot start s3rver: ${(await stderr).trim() || "no port reported"}`);
  }

  let stopping: Promise<void> | null = null;
  child.status.then(async (status) => {
    if (stopping !== null) return;
    console.error(
      `s3rver on port ${port} exited before the test stopped it (${JSON.stringify(status)}): ${
        (await stderr).trim()
      }`,
    );
  });
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    region: "us-east-1",
    // s3rver's built-in account.
    accessKeyId: "S3RVER",
    secretAccessKey: "S3RVER",
    directory,
    stop() {
      stopping ??= (async () => {
        await child.stdin.close().catch(() => {});
        const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
        await child.status;
        clearTimeout(timer);
        await drained;
        const errors = (await stderr).trim();
        if (errors !== "") console.error(`s3rver on port ${port} wrote:\n${errors}`);
        await Deno.remove(directory, { recursive: true });
      })();
      return stopping;
    },
  };
}
