/**
 * The Python client's direct upload of a ~150 MB file against `curl --data-binary` to the same
 * service in the same run, in turns (curl, Python, curl, …; the disk synced and the previous
 * delivery's analysis finished before each): throughput over each process's whole life (spawn
 * to exit), and the Python process's peak resident set (its own VmHWM). Targets: ≥ 0.8 × curl,
 * < 100 MB.
 *
 *   ABN_BENCH_ONLY=python-client deno task bench      (ABN_BENCH_RUNS=N turns each, default 5)
 *   deno run -A bench/python_client_bench.ts [RUNS]
 *
 * The Python is `ABN_PYTHON`, else `.venv-ci/bin/python` (`.ci/run` makes it); without one the
 * table says what to install.
 */
import { writeCsv } from "./generate_csv.ts";
import { benchKey, median, printTable, spawnService } from "./_util.ts";

/** Rows for ~152 MB (about 41 bytes a row). */
const ROWS = 3_700_000;

const UPLOAD_SCRIPT = `
import json, re, sys, time
from abn_client import Client
started = time.perf_counter()
answer = Client(sys.argv[1], sys.argv[2], retries=0).upload(sys.argv[3], sys.argv[4])
seconds = time.perf_counter() - started
peak = re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read())
print(json.dumps({"seconds": seconds, "peak_mb": int(peak.group(1)) / 1024,
                  "size": answer["size_bytes"]}))
`;

function python(): string | null {
  const path = Deno.env.get("ABN_PYTHON") ||
    new URL("../.venv-ci/bin/python", import.meta.url).pathname;
  try {
    return Deno.statSync(path).isFile ? path : null;
  } catch {
    return null;
  }
}

async function run(program: string, args: string[]): Promise<{ wall: number; stdout: string }> {
  const started = performance.now();
  const out = await new Deno.Command(program, { args, stdout: "piped", stderr: "piped" }).output();
  const wall = (performance.now() - started) / 1000;
  const d = new TextDecoder();
  if (!out.success) throw new Error(`${program} failed: ${d.decode(out.stderr)}`);
  return { wall, stdout: d.decode(out.stdout) };
}

async function settle(base: string, apiKey: string, id: string): Promise<void> {
  // The analysis each delivery starts runs after the 201: let it end before the next turn.
  for (let i = 0; i < 600; i++) {
    const res = await fetch(`${base}/api/v1/datasets/${id}/analysis/`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    const body = await res.json();
    if (body.status !== "pending") break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await new Deno.Command("sync").output().catch(() => {});
  await new Promise((r) => setTimeout(r, 1000));
}

export interface PythonClientFigures {
  fileMB: number;
  curlMBs: number[];
  pythonMBs: number[];
  /** The Python upload's own time (from the call to the answer), MB/s. */
  pythonCallMBs: number[];
  /** curl's `time_total` (the transfer, after it read the file into memory), MB/s. */
  curlTransferMBs: number[];
  peakMB: number[];
}

export async function benchPythonClient(runs = 5): Promise<PythonClientFigures | string> {
  const py = python();
  if (py === null) {
    return "no Python client: run .ci/run or create .venv-ci with pip install ./clients/python";
  }
  const work = await Deno.makeTempDir({ prefix: "abn-bench-python-" });
  try {
    const file = `${work}/bench.csv`;
    await writeCsv(file, { rows: ROWS });
    const size = (await Deno.stat(file)).size;
    const mb = size / 1e6;
    const env = { ABN_DATA_DIR: `${work}/svc` };
    const { apiKey } = await benchKey(env);
    const service = await spawnService(env);
    const figures: PythonClientFigures = {
      fileMB: mb,
      curlMBs: [],
      pythonMBs: [],
      pythonCallMBs: [],
      curlTransferMBs: [],
      peakMB: [],
    };
    try {
      const url = `${service.url}/api/v1/datasets/upload/?experiment_id=bench`;
      for (let i = 0; i < runs; i++) {
        await settle(service.url, apiKey, "bench");
        const c = await run("curl", [
          ...["-sS", "-o", "/dev/null", "-w", "%{http_code} %{time_total}", "-X", "POST"],
          ...["--data-binary", `@${file}`, "-H", "Content-Type: text/csv"],
          ...["-H", `Authorization: Bearer ${apiKey}`, url],
        ]);
        const [code, total] = c.stdout.trim().split(" ");
        if (code !== "201") throw new Error(`curl's upload answered ${code}`);
        figures.curlMBs.push(mb / c.wall);
        figures.curlTransferMBs.push(mb / Number(total));
        await settle(service.url, apiKey, "bench");
        const p = await run(py, ["-c", UPLOAD_SCRIPT, service.url, apiKey, file, "bench"]);
        const answer = JSON.parse(p.stdout);
        if (answer.size !== size) throw new Error(`the Python upload stored ${answer.size} bytes`);
        figures.pythonMBs.push(mb / p.wall);
        figures.pythonCallMBs.push(mb / answer.seconds);
        figures.peakMB.push(answer.peak_mb);
      }
    } finally {
      await service.stop();
    }
    return figures;
  } finally {
    await Deno.remove(work, { recursive: true });
  }
}

function spread(values: number[], digits = 0): string {
  return `${median(values).toFixed(digits)} [${Math.min(...values).toFixed(digits)}–${
    Math.max(...values).toFixed(digits)
  }]`;
}

/** The benchmark's rows for `deno task bench`'s table. */
export async function pythonClientRows(
  runs = Number(Deno.env.get("ABN_BENCH_RUNS") ?? 5),
): Promise<Record<string, string>[]> {
  const f = await benchPythonClient(runs);
  if (typeof f === "string") {
    return [{ benchmark: "Python client upload", ours: f, baseline: "—", ratio: "—", target: "—" }];
  }
  const ratios = f.pythonMBs.map((v, i) => v / f.curlMBs[i]);
  return [
    {
      benchmark: `Python client, direct upload of ${f.fileMB.toFixed(0)} MB (whole process)`,
      ours: `${spread(f.pythonMBs)} MB/s (the call alone ${spread(f.pythonCallMBs)})`,
      baseline: `curl --data-binary ${spread(f.curlMBs)} MB/s (transfer ${
        spread(f.curlTransferMBs)
      })`,
      ratio: spread(ratios, 2),
      target: "≥ 0.80",
    },
    {
      benchmark: "peak RSS of the Python process during that upload",
      ours: `${spread(f.peakMB)} MB`,
      baseline: "—",
      ratio: "—",
      target: "< 100 MB",
    },
  ];
}

if (import.meta.main) {
  const runs = Deno.args[0] ? Number(Deno.args[0]) : undefined;
  printTable("Python client upload ÷ curl --data-binary", await pythonClientRows(runs));
}
