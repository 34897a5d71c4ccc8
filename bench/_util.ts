/** Helpers shared by the benchmarks: child servers, peak memory, medians, tables. */

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** The fields of a `/proc/…/stat` line after the name, from its third (the state) on. */
function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/** Processor time (user + system) in a `/proc/…/stat` line, seconds (Linux's 100 ticks a second). */
function statSeconds(stat: string): number {
  const fields = statFields(stat);
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Minor page faults in a `/proc/…/stat` line: mostly first touches of fresh pages. */
function statFaults(stat: string): number {
  return Number(statFields(stat)[7]);
}

/** Processor seconds (user + system) the process used so far; NaN without /proc. */
export async function cpuSeconds(pid: number): Promise<number> {
  try {
    return statSeconds(await Deno.readTextFile(`/proc/${pid}/stat`));
  } catch {
    return NaN;
  }
}

/** Processor seconds by kind of thread (see `ThreadClock`). */
export interface ThreadSeconds {
  /** The process's own thread: the HTTP server, the reading of an analysis, its summary. */
  main: number;
  /** JavaScript workers (`worker-N`): the aggregation's tally, the uploads' checks. */
  workers: number;
  /** V8's helper threads: concurrent garbage collection and compilation. */
  v8: number;
  /** The rest (the runtime's I/O threads). */
  other: number;
  /** Minor page faults of all threads (not seconds): each a first touch of a page, mostly. */
  faults: number;
}

/** What `ThreadClock` reads of a thread: its name, processor seconds and minor page faults so far. */
interface ThreadSample {
  name: string;
  seconds: number;
  faults: number;
}

/**
 * The processor time of a process's threads from one moment on (`start`). `sample` reads every
 * thread's time (`/proc/PID/task`) and keeps the last figure of each, so that a thread that ends
 * between two samples (a worker of one analysis) still counts up to its last sample; `used` adds
 * up what each thread used since `start` (a thread new since then from 0), by kind.
 */
export class ThreadClock {
  readonly #pid: number;
  /** Each thread's last sample at `start`. */
  #start = new Map<string, ThreadSample>();
  readonly #seen = new Map<string, ThreadSample>();

  constructor(pid: number) {
    this.#pid = pid;
  }

  /** Starts over from now. */
  async start(): Promise<void> {
    this.#seen.clear();
    await this.sample();
    this.#start = new Map(this.#seen);
  }

  async sample(): Promise<void> {
    try {
      for await (const task of Deno.readDir(`/proc/${this.#pid}/task`)) {
        try {
          const stat = await Deno.readTextFile(`/proc/${this.#pid}/task/${task.name}/stat`);
          const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
          this.#seen.set(task.name, {
            name,
            seconds: statSeconds(stat),
            faults: statFaults(stat),
          });
        } catch {
          // ended between the listing and the read
        }
      }
    } catch {
      // no /proc: nothing to count
    }
  }

  /** Each thread's time from `start` to its last sample, by kind, and the faults of them all. */
  used(): ThreadSeconds {
    const total: ThreadSeconds = { main: 0, workers: 0, v8: 0, other: 0, faults: 0 };
    for (const [tid, { name, seconds, faults }] of this.#seen) {
      const start = this.#start.get(tid);
      total.faults += faults - (start?.faults ?? 0);
      const kind = tid === String(this.#pid)
        ? "main"
        : name.startsWith("worker-")
        ? "workers"
        : name.startsWith("V8 ")
        ? "v8"
        : "other";
      total[kind] += seconds - (start?.seconds ?? 0);
    }
    return total;
  }
}

/** Peak resident set (VmHWM) of a process, in MB; null where /proc is missing. */
export async function peakRssMB(pid: number): Promise<number | null> {
  try {
    const status = await Deno.readTextFile(`/proc/${pid}/status`);
    const m = /VmHWM:\s+(\d+) kB/.exec(status);
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/**
 * Starts the process's peak resident set (VmHWM) over from its present size (Linux, writing 5 to
 * `clear_refs`, which needs the rights to the process); false where that is refused.
 */
export async function resetPeak(pid: number): Promise<boolean> {
  try {
    await Deno.writeTextFile(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

/**
 * How `deno task start` runs the service, for the benchmarks to run it the same way: the variables
 * it sets first (its leading `NAME=value` words: glibc's fixed mmap threshold, docs/operations.md)
 * and its runtime flags other than permissions (`--v8-flags=…`); `ABN_HUGE_PAGES=false`, which a
 * baseline service from before 2026-12-01 (`ABN_BENCH_MAIN`) read: it ran as the shipped task did,
 * without the C library, though the benchmarks give it all permissions. This service ignores it.
 * `ABN_BENCH_SERVICE_ENV=none` leaves all of them out, to measure without them.
 */
export function serviceStart(): { env: Record<string, string>; flags: string[] } {
  return startTask ??= readStartTask();
}

let startTask: { env: Record<string, string>; flags: string[] } | undefined;

function readStartTask(): { env: Record<string, string>; flags: string[] } {
  if (Deno.env.get("ABN_BENCH_SERVICE_ENV") === "none") return { env: {}, flags: [] };
  const denoJson = JSON.parse(
    Deno.readTextFileSync(new URL("../deno.json", import.meta.url)),
  );
  const words: string[] = String(denoJson.tasks.start).trim().split(/\s+/);
  const env: Record<string, string> = {};
  let at = 0;
  for (; at < words.length; at++) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(words[at]);
    if (!m) break;
    env[m[1]] = m[2];
  }
  const flags = words.slice(at + 2).filter((w) => w.startsWith("--") && !w.startsWith("--allow-"));
  // A baseline from before 2026-12-01 as its shipped task ran it: no huge pages.
  env.ABN_HUGE_PAGES ??= "false";
  return { env, flags };
}

/** The variables of `serviceStart()`. */
export function serviceEnv(): Record<string, string> {
  return serviceStart().env;
}

/** `deno run` arguments that start the service as `deno task start` does, with all permissions. */
export function serveArgs(main: string): string[] {
  return ["run", "-A", ...serviceStart().flags, main, "serve"];
}

/**
 * The `main.ts` the benchmarks run: this checkout's, or `ABN_BENCH_MAIN` (another checkout's,
 * so that one harness times two versions of the service in turns).
 */
export const SERVICE_MAIN = Deno.env.get("ABN_BENCH_MAIN") ??
  new URL("../main.ts", import.meta.url).pathname;

/**
 * The service (`main.ts serve`) as a child process on a free port, started as `deno task start`
 * starts it (`serveArgs`, `serviceEnv`) with `env` besides; ready as `startChild` waits for
 * `readyText`.
 */
export async function spawnService(
  env: Record<string, string>,
  readyText = "/healthz",
  onLine?: (line: string) => void,
): Promise<Child> {
  const port = freePort();
  const main = SERVICE_MAIN;
  const childEnv = { ...env, ...serviceEnv(), ABN_PORT: String(port) };
  return await startChild(serveArgs(main), childEnv, readyText, port, onLine);
}

export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

export interface Child {
  pid: number;
  url: string;
  stop(): Promise<void>;
}

/**
 * Starts a Deno script as a child process and waits until `readyText` appears on stdout, or,
 * when `readyText` is a URL path (`/healthz`), until that path answers 200 — its output then
 * goes to /dev/null, so that logging costs the child what it costs in production.
 */
export async function startChild(
  args: string[],
  env: Record<string, string>,
  readyText: string,
  port: number,
  onLine?: (line: string) => void,
): Promise<Child> {
  if (readyText.startsWith("/")) {
    const quiet = new Deno.Command(Deno.execPath(), {
      args,
      env,
      stdout: "null",
      stderr: "inherit",
    }).spawn();
    const url = `http://127.0.0.1:${port}`;
    for (let i = 0; i < 300; i++) {
      try {
        const res = await fetch(url + readyText);
        await res.body?.cancel();
        if (res.ok) break;
      } catch { /* not listening yet */ }
      await new Promise((r) => setTimeout(r, 100));
    }
    return {
      pid: quiet.pid,
      url,
      async stop() {
        try {
          quiet.kill("SIGKILL");
        } catch { /* gone */ }
        await quiet.status;
      },
    };
  }
  const child = new Deno.Command(Deno.execPath(), {
    args,
    env,
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (!text.includes(readyText)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`child exited before it was ready:\n${text}`);
    text += decoder.decode(value, { stream: true });
  }
  // Keep draining stdout so the child never blocks on a full pipe; `onLine` hears each line.
  (async () => {
    try {
      if (!onLine) {
        while (!(await reader.read()).done) { /* discard */ }
        return;
      }
      let rest = text;
      for (;;) {
        const lines = rest.split("\n");
        rest = lines.pop()!;
        for (const line of lines) onLine(line);
        const { value, done } = await reader.read();
        if (done) return;
        rest += decoder.decode(value, { stream: true });
      }
    } catch { /* closed */ }
  })();
  return {
    pid: child.pid,
    url: `http://127.0.0.1:${port}`,
    async stop() {
      try {
        child.kill("SIGKILL");
      } catch { /* gone */ }
      await child.status;
    },
  };
}

/** Runs curl and answers its stdout (`-w` output). */
export async function curl(args: string[]): Promise<string> {
  const out = await new Deno.Command("curl", { args, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) throw new Error(`curl failed: ${new TextDecoder().decode(out.stderr)}`);
  return new TextDecoder().decode(out.stdout);
}

export function printTable(title: string, rows: Record<string, string | number>[]): void {
  console.log(`\n## ${title}`);
  if (rows.length === 0) return;
  const cols = Object.keys(rows[0]);
  const width = cols.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c]).length)));
  const line = (cells: string[]) =>
    "| " + cells.map((c, i) => c.padEnd(width[i])).join(" | ") + " |";
  console.log(line(cols));
  console.log("|" + width.map((w) => "-".repeat(w + 2)).join("|") + "|");
  for (const r of rows) console.log(line(cols.map((c) => String(r[c]))));
}

/**
 * The file's bytes in 1 MiB chunks, reading the next chunk (into the other of two reused
 * buffers) while the current one is aggregated; `aggregateCsv` copies what it keeps of a chunk.
 */
export async function* readChunks(path: string): AsyncGenerator<Uint8Array> {
  using file = await Deno.open(path);
  const buffers = [new Uint8Array(1 << 20), new Uint8Array(1 << 20)];
  let next = file.read(buffers[0]);
  for (let i = 0;; i++) {
    const length = await next;
    if (length === null) return;
    const buffer = buffers[i & 1];
    next = file.read(buffers[(i + 1) & 1]);
    yield buffer.subarray(0, length);
  }
}

const MAIN = SERVICE_MAIN;

/** Runs `main.ts admin ARGS --json` (at most a minute) with `env` and answers its JSON. */
export async function adminJson(
  env: Record<string, string>,
  args: string[],
): Promise<Record<string, string>> {
  const out = await new Deno.Command("timeout", {
    args: ["60", Deno.execPath(), "run", "-A", MAIN, "admin", ...args, "--json"],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

/** An organization "bench" and an API key of it, in the data directory or database `env` names. */
export async function benchKey(
  env: Record<string, string>,
): Promise<{ orgId: string; apiKey: string }> {
  const { org_id } = await adminJson(env, ["org", "create", "bench"]);
  const { api_key } = await adminJson(env, ["key", "create", org_id]);
  return { orgId: org_id, apiKey: api_key };
}
