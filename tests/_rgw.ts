/**
 * A real S3 implementation for tests: Ceph's RADOS Gateway (Debian's 16.2 "Pacific" packages) on
 * a throw-away single-node cluster, beside s3rver (which checks no SigV4 signature nor
 * Content-MD5, cannot abort or list multipart uploads, and is the only peer of most tests).
 *
 * One cluster per test process, started by the first `startRgw()` (about 4 s) and shared: each
 * call answers a fresh bucket, and `stop()` empties and removes that bucket. The cluster is one
 * monitor, one object store daemon keeping everything in memory (memstore) and one `radosgw`, all
 * on 127.0.0.1, no manager and no systemd, in a temporary directory under /tmp (Unix socket paths
 * must stay short). The daemons run detached (pid files in that directory), so no test holds a
 * handle on them; they are killed and the directory removed when the test process ends (an
 * `unload` listener), and a watchdog shell does the same within a second if the process dies
 * without one (SIGINT, SIGKILL). Nothing survives a stop.
 *
 * Things to know: without a manager, `ceph df`-like commands hang (never call them); memstore
 * costs about 2 MiB of RAM per MiB stored and a full memstore makes writes hang rather than fail,
 * so buckets are emptied at `stop()` and the store is sized well above what the suite keeps at
 * once; buckets are created without a LocationConstraint (the gateway refuses one it does not
 * know). The S3 user is made with `radosgw-admin`, buckets through the S3 API (Pacific's
 * `radosgw-admin` cannot create one).
 */
import {
  AbortMultipartUploadCommand,
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectsCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
} from "@aws-sdk/client-s3";
import type { S3rverFixture } from "./_s3rver.ts";
import { freePort } from "./_server.ts";

/** What `startRgw()` answers: the same shape as s3rver's fixture. */
export type RgwFixture = S3rverFixture;

/** The Debian packages the gateway tests need. */
export const RGW_PACKAGES = "ceph-mon ceph-osd radosgw ceph-common";

/** What the fixture runs: from ceph-common, ceph-mon (and its ceph-base), ceph-osd and radosgw. */
const BINARIES = [
  "ceph",
  "ceph-mon",
  "ceph-osd",
  "monmaptool",
  "radosgw",
  "radosgw-admin",
];

const ACCESS_KEY_ID = "ABNTESTRGW";
const SECRET_ACCESS_KEY = "abn-test-rgw-secret";
const REGION = "us-east-1";
/** The memstore's capacity: far above what the suite keeps at once (buckets are emptied). */
const MEMSTORE_BYTES = 2 * 1024 * 1024 * 1024;
/** Longest any one step of the start-up may take. */
const STEP_TIMEOUT_MS = 60_000;

/** Whether the Ceph binaries the cluster needs are on PATH. */
function installed(): boolean {
  const dirs = (Deno.env.get("PATH") ?? "").split(":").filter((dir) => dir !== "");
  return BINARIES.every((name) =>
    dirs.some((dir) => {
      try {
        return Deno.statSync(`${dir}/${name}`).isFile;
      } catch {
        return false;
      }
    })
  );
}

const AVAILABLE = installed();
if (!AVAILABLE) {
  // The one line `deno task test` shows for the whole gateway suite on a machine without it.
  Deno.test({
    name:
      `S3 tests against Ceph's RADOS Gateway: skipped, install it with \`apt-get install --no-install-recommends ${RGW_PACKAGES}\``,
    ignore: true,
    fn() {},
  });
}

/** Whether Ceph's gateway can run here; without it the gateway tests are not registered. */
export function rgwAvailable(): boolean {
  return AVAILABLE;
}

interface Cluster {
  directory: string;
  endpoint: string;
}

let cluster: Promise<Cluster> | null = null;
let clusterDirectory: string | null = null;
let watchdogPid: number | null = null;

/** A fresh bucket on the shared gateway, starting the cluster on the first call. */
export async function startRgw(): Promise<RgwFixture> {
  const { directory, endpoint } = await (cluster ??= startCluster());
  const bucket = `abn-test-${crypto.randomUUID().slice(0, 8)}`;
  await withClient(endpoint, (client) => client.send(new CreateBucketCommand({ Bucket: bucket })));
  let stopping: Promise<void> | null = null;
  return {
    endpoint,
    bucket,
    region: REGION,
    accessKeyId: ACCESS_KEY_ID,
    secretAccessKey: SECRET_ACCESS_KEY,
    directory,
    stop() {
      stopping ??= withClient(endpoint, (client) => removeBucket(client, bucket));
      return stopping;
    },
  };
}

async function withClient<T>(endpoint: string, fn: (client: S3Client) => Promise<T>): Promise<T> {
  const client = new S3Client({
    endpoint,
    region: REGION,
    forcePathStyle: true,
    credentials: { accessKeyId: ACCESS_KEY_ID, secretAccessKey: SECRET_ACCESS_KEY },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  try {
    return await fn(client);
  } finally {
    client.destroy();
  }
}

/** Aborts the bucket's multipart uploads, deletes its objects, then the bucket itself. */
async function removeBucket(client: S3Client, bucket: string): Promise<void> {
  for (;;) {
    const uploads = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
    for (const upload of uploads.Uploads ?? []) {
      await client.send(
        new AbortMultipartUploadCommand({
          Bucket: bucket,
          Key: upload.Key,
          UploadId: upload.UploadId,
        }),
      ).catch(() => {/* completed or aborted meanwhile */});
    }
    if (!uploads.IsTruncated) break;
  }
  for (;;) {
    const page = await client.send(new ListObjectsV2Command({ Bucket: bucket }));
    const objects = (page.Contents ?? []).map((object) => ({ Key: object.Key! }));
    if (objects.length === 0) break;
    await client.send(
      new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: objects, Quiet: true } }),
    );
  }
  await client.send(new DeleteBucketCommand({ Bucket: bucket }));
}

// ---------------------------------------------------------------------------------------------
// The cluster

async function startCluster(): Promise<Cluster> {
  if (!AVAILABLE) {
    throw new Error(
      `Ceph's RADOS Gateway is not installed: apt-get install --no-install-recommends ${RGW_PACKAGES}`,
    );
  }
  // Under /tmp whatever TMPDIR says: the daemons' Unix sockets need a short path.
  const directory = await Deno.makeTempDir({ dir: "/tmp", prefix: "abn-rgw-" });
  clusterDirectory = directory;
  globalThis.addEventListener("unload", stopCluster);
  try {
    await startWatchdog(directory);
    const monPort = freePort();
    const rgwPort = freePort();
    const fsid = crypto.randomUUID();
    const osdUuid = crypto.randomUUID();
    const conf = `${directory}/ceph.conf`;
    await Deno.writeTextFile(conf, config(directory, fsid, monPort, rgwPort));
    await Deno.writeTextFile(`${directory}/keyring`, keyring());
    await run("monmaptool", [
      "--create",
      "--addv",
      "a",
      `[v2:127.0.0.1:${monPort}]`,
      "--fsid",
      fsid,
      `${directory}/monmap`,
    ]);
    // The monitor imports every key of the keyring into its database.
    await run("ceph-mon", [
      "-c",
      conf,
      "--mkfs",
      "-i",
      "a",
      "--monmap",
      `${directory}/monmap`,
      "--keyring",
      `${directory}/keyring`,
    ]);
    await run("ceph-mon", ["-c", conf, "-i", "a"]);
    await run("ceph", ["-c", conf, "--connect-timeout", "30", "osd", "new", osdUuid, "0"]);
    await Deno.mkdir(`${directory}/osd.0`);
    await run("ceph-osd", ["-c", conf, "-i", "0", "--mkfs", "--osd-uuid", osdUuid]);
    await run("ceph-osd", ["-c", conf, "-i", "0"]);
    // Makes the gateway's realm, zone and pools before the gateway starts, and the S3 user.
    await run("radosgw-admin", [
      "-c",
      conf,
      "user",
      "create",
      "--uid=abn-test",
      "--display-name=abn tests",
      `--access-key=${ACCESS_KEY_ID}`,
      `--secret=${SECRET_ACCESS_KEY}`,
    ]);
    await Deno.mkdir(`${directory}/rgw`);
    await run("radosgw", ["-c", conf, "-n", "client.rgw"]);
    const endpoint = `http://127.0.0.1:${rgwPort}`;
    await untilAnswering(endpoint, directory);
    return { directory, endpoint };
  } catch (error) {
    const logs = await logTails(directory);
    stopCluster();
    throw new Error(`Cannot start the Ceph test cluster: ${(error as Error).message}${logs}`, {
      cause: error,
    });
  }
}

function config(directory: string, fsid: string, monPort: number, rgwPort: number): string {
  return `[global]
fsid = ${fsid}
mon host = [v2:127.0.0.1:${monPort}]
public addr = 127.0.0.1
auth allow insecure global id reclaim = false
keyring = ${directory}/keyring
run dir = ${directory}
pid file = ${directory}/$name.pid
admin socket = ${directory}/$name.asok
log file = ${directory}/$name.log
crash dir = ${directory}/crash
mon cluster log to file = false
# One object store daemon holds every placement group's only copy.
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
# Commit monitor changes at once instead of once a second: start-up takes ~4 s instead of ~16 s.
paxos propose interval = 0.01
# Short placement group logs: they live in memory like everything else.
osd min pg log entries = 100
osd max pg log entries = 100
osd pg log dups tracked = 100

[mon]
mon data = ${directory}/mon.$id

[osd]
osd data = ${directory}/osd.$id
osd objectstore = memstore
memstore device bytes = ${MEMSTORE_BYTES}

[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:${rgwPort}
rgw data = ${directory}/rgw
rgw thread pool size = 64
# Free the tails of replaced and deleted objects within seconds, not hours.
rgw gc obj min wait = 5
rgw gc processor period = 10
rgw enable lc threads = false
rgw enable quota threads = false
rgw dynamic resharding = false
`;
}

/** A cephx keyring for the monitor, the admin tools, the object store daemon and the gateway. */
function keyring(): string {
  const entity = (name: string, caps: Record<string, string>) =>
    `[${name}]\n\tkey = ${cephxKey()}\n` +
    Object.entries(caps).map(([what, cap]) => `\tcaps ${what} = "${cap}"\n`).join("");
  return entity("mon.", { mon: "allow *" }) +
    entity("client.admin", { mon: "allow *", osd: "allow *", mgr: "allow *" }) +
    entity("osd.0", { mon: "allow profile osd", osd: "allow *" }) +
    entity("client.rgw", { mon: "allow rw", osd: "allow rwx" });
}

/** A new secret as Ceph encodes it: type (AES), creation time, length, 16 random bytes. */
function cephxKey(): string {
  const bytes = new Uint8Array(28);
  const view = new DataView(bytes.buffer);
  view.setUint16(0, 1, true);
  view.setUint32(2, Math.floor(Date.now() / 1000), true);
  view.setUint32(6, 0, true);
  view.setUint16(10, 16, true);
  crypto.getRandomValues(bytes.subarray(12));
  return btoa(String.fromCharCode(...bytes));
}

/** Runs one Ceph command to its end (the daemons fork and detach, so this returns). */
async function run(command: string, args: string[]): Promise<void> {
  const result = await new Deno.Command(command, {
    args,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(STEP_TIMEOUT_MS),
  }).output();
  if (!result.success) {
    const output = new TextDecoder().decode(result.stderr).trim() ||
      new TextDecoder().decode(result.stdout).trim();
    throw new Error(
      `\`${command} ${args.join(" ")}\` failed (${
        result.signal ?? `exit ${result.code}`
      }): ${output}`,
    );
  }
}

async function untilAnswering(endpoint: string, directory: string): Promise<void> {
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  for (;;) {
    try {
      const response = await fetch(`${endpoint}/`, { signal: AbortSignal.timeout(2_000) });
      await response.body?.cancel();
      return;
    } catch (error) {
      if (Date.now() > deadline) {
        throw new Error(`the gateway did not answer at ${endpoint} (logs in ${directory})`, {
          cause: error,
        });
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** The last lines of each daemon's log, for a start-up that failed. */
async function logTails(directory: string): Promise<string> {
  let text = "";
  for (const name of ["mon.a", "osd.0", "client.rgw"]) {
    const log = await Deno.readTextFile(`${directory}/${name}.log`).catch(() => null);
    if (log === null) continue;
    text += `\n--- ${name}.log (last lines)\n${log.trimEnd().split("\n").slice(-15).join("\n")}`;
  }
  return text;
}

/**
 * A shell that waits for this process to end, then kills the daemons and removes the directory:
 * the cluster goes even when the test process is killed before its `unload` listener can run.
 * It leads its own process group, so that `stopCluster()` can end it with its `tail`.
 */
async function startWatchdog(directory: string): Promise<void> {
  const script = `tail --pid=${Deno.pid} -f /dev/null
for f in "$0"/*.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")"; done
rm -rf "$0"`;
  const result = await new Deno.Command("sh", {
    args: ["-c", 'setsid sh -c "$1" "$0" </dev/null >/dev/null 2>&1 & echo $!', directory, script],
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).output();
  const pid = Number(new TextDecoder().decode(result.stdout).trim());
  if (Number.isInteger(pid) && pid > 0) watchdogPid = pid;
}

/**
 * Kills the daemons and removes the directory, synchronously (it runs in the `unload` listener):
 * nothing is kept, so SIGKILL is as good as an orderly stop, and immediate.
 */
function stopCluster(): void {
  const directory = clusterDirectory;
  if (directory === null) return;
  clusterDirectory = null;
  globalThis.removeEventListener("unload", stopCluster);
  for (const pid of daemonPids(directory)) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch { /* already gone */ }
  }
  if (watchdogPid !== null) {
    try {
      Deno.kill(-watchdogPid, "SIGKILL");
    } catch { /* already gone */ }
    watchdogPid = null;
  }
  try {
    Deno.removeSync(directory, { recursive: true });
  } catch { /* already gone */ }
}

/**
 * The cluster's daemons: those of the pid files, and any process whose command line names this
 * cluster's configuration (a daemon that died before or while writing its pid file).
 */
function daemonPids(directory: string): Set<number> {
  const pids = new Set<number>();
  for (const name of ["mon.a", "osd.0", "client.rgw"]) {
    try {
      const pid = Number(Deno.readTextFileSync(`${directory}/${name}.pid`).trim());
      if (Number.isInteger(pid) && pid > 0) pids.add(pid);
    } catch { /* not started */ }
  }
  const conf = `${directory}/ceph.conf`;
  try {
    for (const entry of Deno.readDirSync("/proc")) {
      if (!/^\d+$/.test(entry.name)) continue;
      try {
        const cmdline = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`);
        if (cmdline.split("\0").includes(conf)) pids.add(Number(entry.name));
      } catch { /* exited meanwhile */ }
    }
  } catch { /* no /proc */ }
  return pids;
}
