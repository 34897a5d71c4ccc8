/**
 * `deno task compile` as far as a machine without Deno's release host allows: the task's flags,
 * the UI assets it must embed, and a module graph with nothing remote. The real compile runs only
 * when its runtime (`denort`) is at hand: `DENORT_BIN`, or Deno's cache.
 */
import { assert, assertEquals } from "./_assert.ts";
import { freePort, startTestServer } from "./_server.ts";
import { localHealthUrl, runHealthcheck } from "../src/cli/healthcheck.ts";

const ROOT = new URL("../", import.meta.url);
const denoJson = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT)));

/** Splits a task line into words (no quoting is used in our tasks). */
function words(task: string): string[] {
  assert(!/["'`$;&|]/.test(task), `the task needs a shell: ${task}`);
  return task.trim().split(/\s+/);
}

function flagValue(args: string[], flag: string): string | undefined {
  const at = args.findIndex((a) => a === flag || a.startsWith(`${flag}=`));
  if (at === -1) return undefined;
  return args[at].startsWith(`${flag}=`) ? args[at].slice(flag.length + 1) : args[at + 1];
}

function permissions(args: string[]): Set<string> {
  return new Set(args.filter((a) => a.startsWith("--allow-")).map((a) => a.split("=")[0]));
}

const compile = words(denoJson.tasks?.compile ?? "");

Deno.test("the compile task lists explicit permissions, embeds src/ui and names its output", () => {
  assertEquals(compile.slice(0, 2), ["deno", "compile"]);
  for (const broad of ["-A", "--allow-all"]) {
    assert(!compile.includes(broad), `${broad} in compile`);
  }
  const allowed = permissions(compile);
  for (const needed of ["--allow-net", "--allow-read", "--allow-write", "--allow-env"]) {
    assert(allowed.has(needed), `compile lacks ${needed}`);
  }
  // The binary can do what `deno task start` does, and no more is asked of it.
  const start = words(denoJson.tasks.start);
  assert(!start.includes("-A"), "start uses -A");
  for (const p of permissions(start)) assert(allowed.has(p), `compile lacks ${p} that start has`);
  // No task loads native code.
  for (const [task, line] of Object.entries(denoJson.tasks as Record<string, string>)) {
    assert(!line.split(/\s+/).some((a) => a.startsWith("--allow-ffi")), `${task} allows FFI`);
  }
  assertEquals(flagValue(compile, "--include"), "src/ui");
  assert(flagValue(compile, "--output"), "compile has no --output");
  assertEquals(compile[compile.length - 1], "main.ts");
});

Deno.test("every UI asset the routes read exists under src/ui, found beside the module", async () => {
  const uiDir = new URL("src/ui/", ROOT);
  let uiFiles: string[] = [];
  try {
    for await (const entry of Deno.readDir(uiDir)) if (entry.isFile) uiFiles.push(entry.name);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    uiFiles = [];
  }
  const routes = new URL("src/routes/", ROOT);
  const sources: [string, string][] = [];
  for await (const entry of Deno.readDir(routes)) {
    if (entry.isFile && entry.name.endsWith(".ts")) {
      sources.push([entry.name, await Deno.readTextFile(new URL(entry.name, routes))]);
    }
  }
  for (const [name, source] of sources) {
    // A path relative to the working directory breaks in a binary started from elsewhere.
    const text = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
    assert(
      !/["'`](\.\/)?src\/ui/.test(text),
      `${name} reads src/ui relative to the working directory`,
    );
  }
  const ui = sources.find(([name]) => name === "ui.ts");
  if (!ui) return;
  assert(uiFiles.length > 0, "src/routes/ui.ts exists but src/ui has no files");
  const text = ui[1];
  assert(
    text.includes("import.meta.url") && text.includes("../ui/"),
    'ui.ts reads its assets beside the module (new URL("../ui/…", import.meta.url))',
  );
  // The names the routes serve by literal (the page itself) exist.
  for (const [, asset] of text.matchAll(/serve\(ctx, "([^"]+)"\)/g)) {
    assert(uiFiles.includes(asset), `src/ui/${asset} is missing`);
  }
  // Every asset the page references is a file of src/ui whose name the route accepts.
  const index = await Deno.readTextFile(new URL("index.html", uiDir));
  const referenced = [...index.matchAll(/(?:src|href)="\/ui\/([^"?#]+)"/g)].map((m) => m[1]);
  assert(referenced.length > 0, "index.html references no /ui/ asset");
  const accepted = /const ASSET_NAME = \/(.+)\/;/.exec(text);
  for (const asset of referenced) {
    assert(uiFiles.includes(asset), `index.html references /ui/${asset}, not in src/ui`);
    if (accepted) assert(new RegExp(accepted[1]).test(asset), `ui.ts refuses the name ${asset}`);
  }
  // Modules import each other by relative name: those exist too.
  for (const file of uiFiles.filter((f) => f.endsWith(".js"))) {
    const js = await Deno.readTextFile(new URL(file, uiDir));
    for (const [, target] of js.matchAll(/(?:import|from)\s*\(?\s*["']\.\/([^"']+)["']/g)) {
      assert(uiFiles.includes(target), `src/ui/${file} imports ./${target}, not in src/ui`);
    }
  }
});

async function deno(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT.pathname,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const d = new TextDecoder();
  return { code: out.code, stdout: d.decode(out.stdout), stderr: d.decode(out.stderr) };
}

Deno.test("main.ts type-checks and its module graph is local files, npm: and node: only", async () => {
  const check = await deno(["check", "main.ts"]);
  assertEquals(check.code, 0, check.stderr);
  const info = await deno(["info", "--json", "main.ts"]);
  assertEquals(info.code, 0, info.stderr);
  const graph = JSON.parse(info.stdout);
  const schemes = new Set<string>();
  for (const module of graph.modules as { specifier: string }[]) {
    schemes.add(module.specifier.slice(0, module.specifier.indexOf(":")));
  }
  for (const [from, to] of Object.entries(graph.redirects ?? {}) as [string, string][]) {
    schemes.add(from.slice(0, from.indexOf(":")));
    schemes.add(to.slice(0, to.indexOf(":")));
  }
  const remote = [...schemes].filter((s) => !["file", "npm", "node"].includes(s));
  assertEquals(remote, [], `remote modules in the graph: ${remote.join(", ")}`);
  for (const [name, target] of Object.entries(denoJson.imports ?? {}) as [string, string][]) {
    assert(/^(npm|node):|^\.\.?\//.test(target), `import map entry ${name} → ${target}`);
  }
});

/** The runtime `deno compile` embeds, if this machine has it without downloading. */
async function denortAtHand(): Promise<boolean> {
  if (Deno.env.get("DENORT_BIN")) return true;
  const info = await deno(["info", "--json"]);
  if (info.code !== 0) return false;
  const { denoDir } = JSON.parse(info.stdout);
  const zip = `${denoDir}/dl/release/v${Deno.version.deno}/denort-${Deno.build.target}.zip`;
  try {
    await Deno.stat(zip);
    return true;
  } catch {
    return false;
  }
}

const canCompile = await denortAtHand();

Deno.test({
  name: "deno task compile builds a binary that answers --help (needs denort offline)",
  ignore: !canCompile,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "abn-compile-" });
    try {
      const output = `${dir}/abn`;
      const args = compile.slice(1).map((a, i, all) =>
        all[i - 1] === "--output" ? output : a.startsWith("--output=") ? `--output=${output}` : a
      );
      const built = await deno([...args.slice(0, -1), "--no-check", args[args.length - 1]]);
      assertEquals(built.code, 0, built.stderr);
      const run = await new Deno.Command(output, { args: ["--help"], stderr: "piped" }).output();
      assertEquals(run.code, 0);
      assert(new TextDecoder().decode(run.stderr).includes("upload FILE"));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("the Dockerfile compiles with the pinned Deno and runs the binary as non-root on /data", async () => {
  const text = await Deno.readTextFile(new URL("Dockerfile", ROOT));
  const lines = text.replace(/\\\n\s*/g, " ").split("\n").map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"));
  const froms = lines.filter((l) => l.startsWith("FROM "));
  assertEquals(froms.length, 2, "a build stage and a runtime stage");
  assertEquals(froms[0], `FROM denoland/deno:${Deno.version.deno} AS build`);
  assert(lines.some((l) => /^RUN deno task compile\b/.test(l)), "stage 1 runs deno task compile");
  const runtime = lines.slice(lines.indexOf(froms[1]));
  const user = runtime.find((l) => l.startsWith("USER "));
  assert(user && !/^USER (root|0)(:|$)/.test(user.slice(5)), `runtime user: ${user}`);
  const env = runtime.filter((l) => l.startsWith("ENV ")).join(" ");
  assert(/\bABN_DATA_DIR=\/data\b/.test(env), env);
  assert(/\bABN_HOST=0\.0\.0\.0\b/.test(env), env);
  assert(runtime.includes('VOLUME ["/data"]'));
  assert(runtime.includes("EXPOSE 8080"));
  assert(runtime.some((l) => /^HEALTHCHECK .*CMD \[.*"healthcheck"/.test(l)), "HEALTHCHECK");
  const output = flagValue(compile, "--output");
  assert(lines.some((l) => l.includes(`cp ${output} `)), `the image copies ${output}`);
  const ignore = await Deno.readTextFile(new URL(".dockerignore", ROOT));
  for (const needed of ["deno.json", "deno.lock", "main.ts", "src"]) {
    assert(!ignore.split("\n").includes(needed), `.dockerignore leaves out ${needed}`);
  }
});

Deno.test("the systemd unit waits out the shutdown grace and names only known variables", async () => {
  const unit = await Deno.readTextFile(new URL("deploy/abn.service", ROOT));
  const directive = (name: string) =>
    [...unit.matchAll(new RegExp(`^${name}=(.*)$`, "gm"))].map((m) => m[1]);
  assert(Number(/^(\d+)s?$/.exec(directive("TimeoutStopSec")[0] ?? "")?.[1]) > 10);
  assertEquals(directive("ExecStart"), ["/usr/local/bin/abn serve"]);
  assertEquals(directive("EnvironmentFile"), ["/etc/abn/abn.env"]);
  assertEquals(directive("StateDirectory"), ["abn"]);
  for (const name of ["NoNewPrivileges", "ProtectHome", "PrivateTmp"]) {
    assertEquals(directive(name), ["yes"], name);
  }
  assertEquals(directive("ProtectSystem"), ["strict"]);
  assertEquals(directive("Restart"), ["on-failure"]);
  assert(directive("ReadWritePaths").length > 0 && directive("MemoryMax").length > 0);
  assert(directive("LimitNOFILE").length > 0 && directive("RestrictAddressFamilies").length > 0);
  // V8 needs writable+executable memory.
  assertEquals(directive("MemoryDenyWriteExecute"), []);

  const config = await Deno.readTextFile(new URL("src/config.ts", ROOT));
  const example = await Deno.readTextFile(new URL("deploy/abn.env.example", ROOT));
  for (const [name] of example.matchAll(/\bABN_[A-Z0-9_]+/g)) {
    assert(config.includes(`"${name}"`), `abn.env.example names ${name}, unknown to src/config.ts`);
  }
});

Deno.test("the start and dev tasks, the image and the unit fix glibc's mmap threshold", async () => {
  const wanted = "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=8388608";
  for (const task of ["start", "dev"]) {
    const args = words(denoJson.tasks[task]);
    assertEquals(args[0], wanted, `deno task ${task}`);
    assertEquals(args.slice(1, 3), ["deno", "run"], `deno task ${task}`);
  }
  const docker = (await Deno.readTextFile(new URL("Dockerfile", ROOT))).replace(/\\\n\s*/g, " ");
  const runtime = docker.slice(docker.lastIndexOf("\nFROM "));
  const env = runtime.split("\n").filter((l) => l.startsWith("ENV ")).join(" ");
  assert(env.split(/\s+/).includes(wanted), env);
  const unit = await Deno.readTextFile(new URL("deploy/abn.service", ROOT));
  assert(unit.split("\n").includes(`Environment=${wanted}`), "deploy/abn.service");
});

Deno.test("the image's health check command answers 0 for a healthy service and 1 otherwise", async () => {
  const lines: string[] = [];
  const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
  const server = await startTestServer();
  try {
    const port = Number(new URL(server.url).port);
    const config = { host: "0.0.0.0", port, publicUrl: "https://abn.example.invalid" };
    assertEquals(localHealthUrl(config), `http://127.0.0.1:${port}/healthz`);
    assertEquals(await runHealthcheck(["--quiet"], config, io), 0);
    assertEquals(await runHealthcheck(["--url", server.url], config, io), 0);
    assertEquals(lines, [`healthy: ${server.url}/healthz`]);
    assertEquals(await runHealthcheck([], { ...config, port: freePort() }, io), 1);
    assert(lines[1].startsWith("unhealthy: "), lines[1]);
    assertEquals(await runHealthcheck(["--bogus"], config, io), 2);
  } finally {
    await server.close();
  }
});
