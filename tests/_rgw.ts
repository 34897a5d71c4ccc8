/**
 * A real S3 implementation for tests: Ceph's RADOS Gateway (Debian's 16.2 "Pacific" packages) on
 * a throw-away single-node cluster, beside s3rver (which checks no SigV4 signature nor
 * Content-MD5, cannot abort or list multipart uploads, and is the only peer of most tests).
 *
 * One cluster per test process, started by the first `startRgw()` (about 4 s) and shared by every
 * test file (each runs in a worker of the same process and finds it by the process's id): each
 * call answers a fresh bucket, and `stop()` empties and removes that bucket. The cluster is one
 * monitor, one object store daemon keeping everything in memory (memstore) and one `radosgw`, all
 * on 127.0.0.1 (ports below the kernel's ephemeral range), no manager and no systemd, in a
 * directory under /tmp (Unix socket paths must stay short). The daemons run detached with pid
 * files, so no test holds a handle on them; a watchdog (a Python process of its own session)
 * kills them and removes the directory the moment the test process ends, however it ends.
 * Nothing survives a stop.
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

/** What `startRgw()` answers: the same shape as s3rver's fixture. */
export type RgwFixture = S3rverFixture;

/** The Debian packages the gateway tests need. */
export const RGW_PACKAGES = "ceph-mon ceph-osd radosgw ceph-common";

/** What the fixture runs: from ceph-common (and its python3), ceph-mon (ceph-base), ceph-osd, radosgw. */
const BINARIES = [
  "python3",
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
/** Set in the process's environment once the skip line is registered (test files share it). */
const SKIP_SHOWN = "ABN_TEST_RGW_SKIP_SHOWN";
if (!AVAILABLE && Deno.env.get(SKIP_SHOWN) !== String(Deno.pid)) {
  // The one line `deno task test` shows for the whole gateway suite on a machine without it:
  // every test file runs this module in a worker of its own, so the first one registers it.
  Deno.env.set(SKIP_SHOWN, String(Deno.pid));
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
  /** The directory of the attempt that started (its ceph.conf, logs and daemon data). */
  directory: string;
  endpoint: string;
}

/** This test file's view of the process's cluster. */
let cluster: Promise<Cluster> | null = null;

/** A fresh bucket on the shared gateway, starting the cluster on the first call. */
export async function startRgw(): Promise<RgwFixture> {
  const { directory, endpoint } = await (cluster ??= sharedCluster());
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

/**
 * Where this process's cluster lives: `deno test` runs each test file in a worker of one process,
 * so the first file that needs the gateway starts it here and the others find it. Named after the
 * process (and its start time, against a reused pid), under /tmp whatever TMPDIR says: the
 * daemons' Unix sockets need a short path.
 */
function clusterHome(): string {
  let started = "0";
  try {
    // Field 22 of /proc/self/stat, after the parenthesised command name.
    const stat = Deno.readTextFileSync("/proc/self/stat");
    started = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]).toString(36);
  } catch { /* not Linux: the pid alone */ }
  return `/tmp/abn-rgw-${Deno.pid}-${started}`;
}

/** Starts the process's cluster, or waits for the test file that is starting it. */
async function sharedCluster(): Promise<Cluster> {
  if (!AVAILABLE) {
    throw new Error(
      `Ceph's RADOS Gateway is not installed: apt-get install --no-install-recommends ${RGW_PACKAGES}`,
    );
  }
  const home = clusterHome();
  try {
    await Deno.mkdir(home, { mode: 0o700 });
  } catch (error) {
    if (error instanceof Deno.errors.AlreadyExists) return await startedElsewhere(home);
    throw error;
  }
  try {
    // First, so that whatever follows is cleaned up when the process ends.
    await startWatchdog(home);
    const started = await startWithRetries(home);
    await writeAtomically(`${home}/ready.json`, JSON.stringify(started));
    return started;
  } catch (error) {
    await writeAtomically(`${home}/failed.txt`, (error as Error).message).catch(() => {});
    throw error;
  }
}

/** The cluster another test file of this process started (or failed to start). */
async function startedElsewhere(home: string): Promise<Cluster> {
  const deadline = Date.now() + 3 * STEP_TIMEOUT_MS;
  for (;;) {
    const ready = await Deno.readTextFile(`${home}/ready.json`).catch(() => null);
    if (ready !== null) return JSON.parse(ready) as Cluster;
    const failed = await Deno.readTextFile(`${home}/failed.txt`).catch(() => null);
    if (failed !== null) throw new Error(failed);
    if (Date.now() > deadline) {
      throw new Error(`Cannot start the Ceph test cluster: no cluster in ${home} in time`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function writeAtomically(path: string, text: string): Promise<void> {
  await Deno.writeTextFile(`${path}.tmp`, text);
  await Deno.rename(`${path}.tmp`, path);
}

/**
 * Up to three attempts, each in a fresh directory with fresh ports: on a busy machine another
 * program may take a port between the check that it is free and the daemon's bind.
 */
async function startWithRetries(home: string): Promise<Cluster> {
  const failures: string[] = [];
  for (let attempt = 1; attempt <= 3; attempt++) {
    const directory = `${home}/${attempt}`;
    try {
      await Deno.mkdir(directory);
      return await startAttempt(directory);
    } catch (error) {
      failures.push(`attempt ${attempt}: ${(error as Error).message}${await logTails(directory)}`);
      killDaemons(directory);
    }
  }
  throw new Error(`Cannot start the Ceph test cluster:\n${failures.join("\n")}`);
}

async function startAttempt(directory: string): Promise<Cluster> {
  const monPort = await pickPort();
  let rgwPort = await pickPort();
  while (rgwPort === monPort) rgwPort = await pickPort();
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
  await untilListening(monPort, directory, "ceph-mon");
  await run("ceph", ["-c", conf, "--connect-timeout", "20", "osd", "new", osdUuid, "0"]);
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
}

/**
 * A free port below Linux's ephemeral range (32768 and up), which the kernel hands to other
 * programs' port-0 listeners: so the port is not taken again before the daemon binds it.
 */
async function pickPort(): Promise<number> {
  for (let tries = 0; tries < 100; tries++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    try {
      const listener = Deno.listen({ hostname: "127.0.0.1", port });
      listener.close();
      return port;
    } catch { /* taken: another */ }
    await Promise.resolve();
  }
  throw new Error("no free port between 20000 and 32000");
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

/** Waits for the gateway's HTTP answer; fails at once if the gateway died (a port taken). */
async function untilAnswering(endpoint: string, directory: string): Promise<void> {
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  for (;;) {
    try {
      const response = await fetch(`${endpoint}/`, { signal: AbortSignal.timeout(2_000) });
      await response.body?.cancel();
      return;
    } catch (error) {
      if (!(await alive(directory, "radosgw"))) {
        throw new Error(`the gateway exited before answering at ${endpoint}`, { cause: error });
      }
      if (Date.now() > deadline) {
        throw new Error(`the gateway did not answer at ${endpoint}`, { cause: error });
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** Waits for a daemon to accept connections on `port`; fails at once if it died. */
async function untilListening(port: number, directory: string, binary: string): Promise<void> {
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  for (;;) {
    try {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      conn.close();
      return;
    } catch (error) {
      if (!(await alive(directory, binary))) {
        throw new Error(`${binary} exited before listening on ${port}`, { cause: error });
      }
      if (Date.now() > deadline) throw new Error(`${binary} did not listen on ${port}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/**
 * Whether a daemon of this start attempt runs: a process of `binary` started with the attempt's
 * configuration, not exited nor a zombie awaiting its reaper. (Not its pid file: the gateway
 * writes one only once it serves, and removes it when it fails.)
 */
async function alive(directory: string, binary: string): Promise<boolean> {
  const conf = `${directory}/ceph.conf`;
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const args = (await Deno.readTextFile(`/proc/${entry.name}/cmdline`)).split("\0");
      if (!args.includes(conf) || args[0].split("/").pop() !== binary) continue;
      const stat = await Deno.readTextFile(`/proc/${entry.name}/stat`);
      if (stat[stat.lastIndexOf(")") + 2] !== "Z") return true;
    } catch { /* exited meanwhile */ }
  }
  return false;
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
 * A Python watchdog (Python comes with ceph-common) in a session of its own: it waits for this
 * test process to end (a pidfd), then kills every process started with a configuration under
 * `home` and removes it. That is how the cluster stops, whichever way the process ends.
 */
async function startWatchdog(home: string): Promise<void> {
  const script = `
import os, select, shutil, signal, sys
pid, home = int(sys.argv[1]), sys.argv[2]
try:
    select.select([os.pidfd_open(pid)], [], [])
except OSError:
    pass
prefix = (home + "/").encode()
for entry in os.listdir("/proc"):
    try:
        with open("/proc/" + entry + "/cmdline", "rb") as f:
            args = f.read().split(b"\\0")
        if any(arg.startswith(prefix) for arg in args):
            os.kill(int(entry), signal.SIGKILL)
    except (OSError, ValueError):
        pass
shutil.rmtree(home, ignore_errors=True)
`;
  const result = await new Deno.Command("sh", {
    args: [
      "-c",
      'setsid python3 -c "$0" "$1" "$2" </dev/null >/dev/null 2>&1 &',
      script,
      String(Deno.pid),
      home,
    ],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!result.success) {
    throw new Error(
      `Cannot start the cluster's watchdog: ${new TextDecoder().decode(result.stderr)}`,
    );
  }
}

/** Kills the daemons of one start attempt (SIGKILL: nothing they hold is kept). */
function killDaemons(directory: string): void {
  const conf = `${directory}/ceph.conf`;
  try {
    for (const entry of Deno.readDirSync("/proc")) {
      if (!/^\d+$/.test(entry.name)) continue;
      try {
        const cmdline = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`);
        if (cmdline.split("\0").includes(conf)) Deno.kill(Number(entry.name), "SIGKILL");
      } catch { /* exited meanwhile */ }
    }
  } catch { /* no /proc */ }
}
