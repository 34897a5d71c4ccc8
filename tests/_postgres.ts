/**
 * Throwaway PostgreSQL for tests (Debian's `postgresql` package, installed by `.ci/run`): one
 * cluster per test process, shared by every test file of that process (its address is kept in
 * a state file named after the process id), and a fresh database per test (CREATE DATABASE).
 * Tests that stop the server get a cluster of their own.
 *
 * PostgreSQL refuses to run as root: as root, `initdb` and `pg_ctl` run as the `postgres` user
 * (`runuser`) in a temporary directory it owns. The server listens on a free port of 127.0.0.1
 * only, with TLS (a certificate made here, signed by a CA made here) and password
 * authentication over TCP. A watchdog started with each cluster stops it and removes its
 * directory as soon as the test process exits, whatever way it exits; `destroy()` does it at
 * once.
 *
 * Without PostgreSQL the suites that need it are skipped with one line naming the package.
 */
import { Client } from "../src/db/postgres/_pg.ts";
import { freePort } from "./_server.ts";

/** The folder of `initdb` and `pg_ctl`: Debian's newest `/usr/lib/postgresql/N/bin`, or PATH. */
function findBinDir(): string | null {
  const exists = (path: string) => {
    try {
      Deno.statSync(path);
      return true;
    } catch {
      return false;
    }
  };
  try {
    const versions = [...Deno.readDirSync("/usr/lib/postgresql")]
      .map((e) => e.name).filter((n) => /^\d+$/.test(n)).sort((a, b) => Number(b) - Number(a));
    for (const v of versions) {
      const dir = `/usr/lib/postgresql/${v}/bin`;
      if (exists(`${dir}/initdb`) && exists(`${dir}/pg_ctl`)) return dir;
    }
  } catch { /* not Debian's layout */ }
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    if (dir && exists(`${dir}/initdb`) && exists(`${dir}/pg_ctl`)) return dir;
  }
  return null;
}

const BIN = findBinDir();

/** True when PostgreSQL's server programs are installed. */
export const POSTGRES_AVAILABLE = BIN !== null;

const SKIP_NOTE =
  "PostgreSQL tests skipped: PostgreSQL is not installed (Debian: apt-get install postgresql)";

/** Registers a test that needs PostgreSQL; skipped, with one line per process, without it. */
export function postgresTest(name: string, fn: () => Promise<void>): void {
  if (!POSTGRES_AVAILABLE && !Deno.env.get("ABN_TEST_PG_SKIP_NOTED")) {
    Deno.env.set("ABN_TEST_PG_SKIP_NOTED", "1");
    console.log(SKIP_NOTE);
  }
  Deno.test({ name, ignore: !POSTGRES_AVAILABLE, fn });
}

const AS_ROOT = Deno.uid() === 0;

/** Runs a PostgreSQL program (as `postgres` when we are root); throws with its output. */
async function pgRun(program: string, args: string[]): Promise<void> {
  const out = await new Deno.Command(AS_ROOT ? "runuser" : `${BIN}/${program}`, {
    args: AS_ROOT ? ["-u", "postgres", "--", `${BIN}/${program}`, ...args] : args,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    const d = new TextDecoder();
    throw new Error(
      `${program} failed: ${d.decode(out.stderr).trim() || d.decode(out.stdout).trim()}`,
    );
  }
}

async function run(cmd: string, args: string[]): Promise<void> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`${cmd} failed: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
}

export interface ClusterInfo {
  /** The cluster's folder (data, socket, log, TLS files). */
  dir: string;
  port: number;
  /** The superuser and its password. */
  user: string;
  password: string;
  /** The CA that signed the server's certificate (for `sslrootcert=`). */
  caFile: string;
}

export interface Cluster extends ClusterInfo {
  /** `postgres://user:password@127.0.0.1:port/database` (default the superuser's). */
  url(database: string, user?: { name: string; password: string }): string;
  /** A fresh, empty database owned by the superuser; `drop()` removes it. */
  database(): Promise<TestDatabase>;
  /** Stops the server (fast shutdown: connections are cut). */
  stop(): Promise<void>;
  /** Starts it again on the same port. */
  start(): Promise<void>;
  /** Stops the server and removes its folder. */
  destroy(): Promise<void>;
}

export interface TestDatabase {
  name: string;
  /** The superuser's URL of this database. */
  url: string;
  /** Runs one query as the superuser on a short-lived connection; answers its rows. */
  query<T = Record<string, unknown>>(statement: string): Promise<T[]>;
  drop(): Promise<void>;
}

/** Makes the cluster's TLS files: a CA, and a server certificate for 127.0.0.1 it signed. */
async function makeTls(dir: string): Promise<void> {
  const conf = `${dir}/san.cnf`;
  await Deno.writeTextFile(conf, "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  await run("openssl", [
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-days",
    "2",
    "-subj",
    "/CN=abn test CA",
    "-keyout",
    `${dir}/ca.key`,
    "-out",
    `${dir}/ca.crt`,
  ]);
  await run("openssl", [
    "req",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-subj",
    "/CN=127.0.0.1",
    "-keyout",
    `${dir}/server.key`,
    "-out",
    `${dir}/server.csr`,
  ]);
  await run("openssl", [
    "x509",
    "-req",
    "-in",
    `${dir}/server.csr`,
    "-CA",
    `${dir}/ca.crt`,
    "-CAkey",
    `${dir}/ca.key`,
    "-CAcreateserial",
    "-days",
    "2",
    "-extfile",
    conf,
    "-out",
    `${dir}/server.crt`,
  ]);
  await Deno.chmod(`${dir}/server.key`, 0o600);
}

/** Stops the cluster and removes `dir` once process `pid` is gone (a detached shell loop). */
async function startWatchdog(info: ClusterInfo, extra: string[] = []): Promise<void> {
  const stop = AS_ROOT
    ? `runuser -u postgres -- ${BIN}/pg_ctl -D ${info.dir}/data -m immediate stop`
    : `${BIN}/pg_ctl -D ${info.dir}/data -m immediate stop`;
  const loop = `while kill -0 ${Deno.pid} 2>/dev/null; do sleep 0.3; done; ${stop}; ` +
    `rm -rf ${info.dir} ${extra.join(" ")}`;
  // In a session of its own (setsid): stopping the test's process group leaves it running.
  await run("sh", ["-c", `setsid sh -c '${loop}' </dev/null >/dev/null 2>&1 &`]);
}

async function pgCtlStart(info: ClusterInfo): Promise<void> {
  const options = [
    `-p ${info.port}`,
    `-k ${info.dir}/sock`,
    "-c listen_addresses=127.0.0.1",
    "-c fsync=off",
    "-c synchronous_commit=off",
    "-c full_page_writes=off",
    "-c max_connections=200",
    "-c ssl=on",
    `-c ssl_cert_file=${info.dir}/tls/server.crt`,
    `-c ssl_key_file=${info.dir}/tls/server.key`,
  ].join(" ");
  await pgRun("pg_ctl", [
    "-D",
    `${info.dir}/data`,
    "-l",
    `${info.dir}/log`,
    "-w",
    "-o",
    options,
    "start",
  ]);
}

/** Creates and starts a new cluster, stopped when this process exits (or by `destroy`). */
export async function startCluster(stateFile?: string): Promise<Cluster> {
  if (!BIN) throw new Error(SKIP_NOTE);
  const dir = await Deno.makeTempDir({ prefix: "abn-pg-" });
  const info: ClusterInfo = {
    dir,
    port: freePort(),
    user: "abn_admin",
    password: `pw-${crypto.randomUUID()}`,
    caFile: `${dir}/tls/ca.crt`,
  };
  await startWatchdog(info, stateFile ? [stateFile] : []);
  await Deno.mkdir(`${dir}/sock`);
  await Deno.mkdir(`${dir}/tls`);
  await makeTls(`${dir}/tls`);
  await Deno.writeTextFile(`${dir}/pwfile`, info.password + "\n");
  await Deno.chmod(dir, 0o755);
  if (AS_ROOT) await run("chown", ["-R", "postgres:postgres", dir]);
  await pgRun("initdb", [
    "-D",
    `${dir}/data`,
    "-N",
    "-U",
    info.user,
    `--pwfile=${dir}/pwfile`,
    "--auth-local=trust",
    "--auth-host=scram-sha-256",
    "-E",
    "UTF8",
    "--locale=C.UTF-8",
  ]);
  await pgCtlStart(info);
  if (stateFile) await Deno.writeTextFile(stateFile, JSON.stringify(info));
  return clusterOf(info);
}

function clusterOf(info: ClusterInfo): Cluster {
  const url = (database: string, user = { name: info.user, password: info.password }) =>
    `postgres://${encodeURIComponent(user.name)}:${
      encodeURIComponent(user.password)
    }@127.0.0.1:${info.port}/${database}`;
  return {
    ...info,
    url,
    async database() {
      const name = `abn_test_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
      await admin(url("postgres"), `CREATE DATABASE ${name}`);
      return {
        name,
        url: url(name),
        query: async <T>(statement: string) => {
          const client = new Client({ connectionString: url(name) });
          await client.connect();
          try {
            return (await client.query(statement)).rows as T[];
          } finally {
            await client.end();
          }
        },
        drop: () => admin(url("postgres"), `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
      };
    },
    stop: () => pgRun("pg_ctl", ["-D", `${info.dir}/data`, "-m", "fast", "-w", "stop"]),
    start: () => pgCtlStart(info),
    async destroy() {
      await pgRun("pg_ctl", ["-D", `${info.dir}/data`, "-m", "immediate", "-w", "stop"])
        .catch(() => {});
      await Deno.remove(info.dir, { recursive: true }).catch(() => {});
    },
  };
}

/** Runs statements as the superuser on one short-lived connection. */
export async function admin(url: string, ...statements: string[]): Promise<void> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    for (const statement of statements) await client.query(statement);
  } finally {
    await client.end();
  }
}

let shared: Promise<Cluster> | null = null;

/**
 * The cluster of this test process: started by the first test file that asks, reused by the
 * following ones (found through the state file), stopped by its watchdog when the process exits.
 */
export function sharedCluster(): Promise<Cluster> {
  shared ??= (async () => {
    const stateFile = `${Deno.env.get("TMPDIR") ?? "/tmp"}/abn-pg-${Deno.pid}.json`;
    try {
      const info = JSON.parse(await Deno.readTextFile(stateFile)) as ClusterInfo;
      await Deno.stat(`${info.dir}/data/postmaster.pid`);
      return clusterOf(info);
    } catch {
      return await startCluster(stateFile);
    }
  })();
  shared.catch(() => shared = null);
  return shared;
}

/** A fresh database in the shared cluster for the duration of `fn`. */
export async function withDatabase<T>(fn: (db: TestDatabase, cluster: Cluster) => Promise<T>) {
  const cluster = await sharedCluster();
  const db = await cluster.database();
  try {
    return await fn(db, cluster);
  } finally {
    await db.drop();
  }
}
