/**
 * Where a delivery's memory goes: the service (as `deno task start` runs it, data on tmpfs when
 * there is one) receives the file N times under one experiment, 2 s apart, with
 * `POST /api/v1/datasets/upload/`. Through each cycle, from the upload's first byte until its
 * analysis is `ready`, the service's memory map (`/proc/PID/smaps`) is read every 5 ms, and the
 * map with the most resident memory is kept. The benchmark prints, per cycle, that peak, when it
 * came (after the 201) and what it was made of, grouped by kind of mapping, and the resident set
 * 2 s after, beside the process's own high-water mark over the cycle (`VmHWM`, started over at the
 * cycle's start through `/proc/PID/clear_refs`; it catches what falls between two samples). Each
 * delivery appends one row of the file's first user (a 0 with i decimals), so that each is new
 * content and the figures stay those of the file. Linux only.
 *
 *   deno run -A bench/memory_map.ts [FILE] [DELIVERIES] [two-step | paced]
 *     (default /tmp/bench.csv, generated when missing; 4 deliveries)
 *
 * With `ABN_BENCH_VERBOSE=1`, each cycle also lists its large mappings at the peak (size and
 * resident MB each): the user table's records and slots, the value logs, the runtime's buffers.
 *
 * With `two-step`, each delivery is written straight into the service's storage (as a PUT to the
 * bucket would) and announced by `POST /api/v1/storage-events/`; its cycle is sampled from the
 * event until `ready` (the service then checks and hashes the bytes beside the reading). With
 * `paced`, each upload is sent at 100 MB/s (`ABN_BENCH_PACED_MBPS`), as the insight benchmark's
 * paced turn.
 *
 * What the kinds are: `program` is the pages of the executable (its code, read from the file);
 * `V8 pages` the anonymous mappings of 256 KiB that JavaScript heaps are made of; `glibc heap` the
 * main heap of the C library (`[heap]`); `thread arenas` its heaps of other threads (64 MiB
 * reserved each); `large` the other anonymous mappings of 1 MiB and more (the analysis' larger
 * tables, and the runtime's buffers); `small` the rest of the anonymous ones.
 */
import { ensureCsv } from "./generate_csv.ts";
import { benchKey, peakRssMB, printTable, resetPeak, spawnService } from "./_util.ts";
import { LocalStore } from "../src/storage/local_store.ts";
import { pacedUpload } from "../tests/_paced_upload.ts";
import { UrlSigner } from "../src/crypto/url_signer.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Mapping {
  name: string;
  sizeKB: number;
  rssKB: number;
}

async function readMap(pid: number): Promise<Mapping[]> {
  const text = await Deno.readTextFile(`/proc/${pid}/smaps`);
  const maps: Mapping[] = [];
  for (const line of text.split("\n")) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      const sizeKB = (parseInt(head[2], 16) - parseInt(head[1], 16)) / 1024;
      maps.push({ name: head[3], sizeKB, rssKB: 0 });
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && maps.length > 0) maps[maps.length - 1].rssKB = Number(rss[1]);
  }
  return maps;
}

function kindOf(map: Mapping, executable: string): string {
  if (map.name === executable) return "program";
  if (map.name === "[heap]") return "glibc heap";
  if (map.name !== "") return map.name.startsWith("[") ? "other" : "other files";
  if (map.sizeKB === 256) return "V8 pages";
  if (map.sizeKB >= 60 * 1024 && map.sizeKB <= 64 * 1024) return "thread arenas";
  return map.sizeKB >= 1024 ? "large" : "small";
}

const KINDS = [
  "program",
  "V8 pages",
  "glibc heap",
  "thread arenas",
  "large",
  "small",
  "other files",
  "other",
];

function composition(maps: Mapping[], executable: string): Record<string, number> {
  const mb: Record<string, number> = Object.fromEntries(KINDS.map((k) => [k, 0]));
  for (const map of maps) mb[kindOf(map, executable)] += map.rssKB / 1024;
  return mb;
}

const total = (maps: Mapping[]) => maps.reduce((sum, m) => sum + m.rssKB, 0) / 1024;

/** How the benchmark delivers the file (see the top of the file). */
export type DeliveryMode = "direct" | "two-step" | "paced";

const PACED_BYTES_PER_SECOND = Number(Deno.env.get("ABN_BENCH_PACED_MBPS") ?? 100) * 1e6;

export async function benchMemoryMap(path: string, deliveries = 4, mode: DeliveryMode = "direct") {
  const twoStep = mode === "two-step";
  const shm = (await Deno.stat("/dev/shm").then((s) => s.isDirectory, () => false))
    ? "/dev/shm"
    : undefined;
  const dataDir = await Deno.makeTempDir({ prefix: "abn-bench-memory-", dir: shm });
  const eventsToken = crypto.randomUUID();
  const env = { ABN_DATA_DIR: dataDir, ABN_STORAGE_EVENTS_TOKEN: eventsToken };
  const { apiKey, orgId } = await benchKey(env);
  const service = await spawnService(env);
  const url = service.url;
  const store = new LocalStore({
    dataDir,
    signer: new UrlSigner(new Uint8Array(32)),
    publicUrl: url,
  });
  await store.open();
  /** Delivers `body` in two steps (see the top of the file); answers its ETag. */
  const deliverTwoStep = async (body: Uint8Array[]): Promise<string> => {
    const key = `org/${orgId}/experiments/memory/latest.csv`;
    const writer = await store.createWriter(key);
    for (const part of body) await writer.write(part);
    const info = await writer.commit();
    const event = await fetch(`${url}/api/v1/storage-events/`, {
      method: "POST",
      headers: { authorization: `Bearer ${eventsToken}` },
      body: JSON.stringify({ Records: [{ s3: { object: { key } } }] }),
    });
    const answer = await event.json();
    if (answer.accepted !== 1) {
      throw new Error(`the event was not accepted: ${JSON.stringify(answer)}`);
    }
    return info.etag;
  };
  const auth = { authorization: `Bearer ${apiKey}` };
  const rows: Record<string, string | number>[] = [];
  try {
    const executable = await Deno.realPath(`/proc/${service.pid}/exe`);
    const file = await Deno.readFile(path);
    const text = new TextDecoder().decode(file.subarray(0, 4096)).split("\n");
    const [user, variant, date] = text[1].split(",");
    const row = (i: number) =>
      new TextEncoder().encode(`${user},${variant},${date},0,0.${"0".repeat(i + 1)}\n`);
    await sleep(2000);
    rows.push({ "": "before the first", "RSS MB": total(await readMap(service.pid)).toFixed(0) });
    for (let i = 0; i < deliveries; i++) {
      let peak: Mapping[] = [];
      let peakAt = 0;
      let sampling = true;
      const highWater = await resetPeak(service.pid);
      const started = performance.now();
      const sampler = (async () => {
        while (sampling) {
          const maps = await readMap(service.pid).catch(() => null);
          if (maps === null) return; // the service is gone: the delivery's own error tells why
          if (total(maps) > total(peak)) {
            peak = maps;
            peakAt = performance.now();
          }
          await sleep(5);
        }
      })();
      let etag: string;
      if (twoStep) {
        etag = await deliverTwoStep([file, row(i)]);
      } else if (mode === "paced") {
        const body = new Uint8Array(file.length + row(i).length);
        body.set(file);
        body.set(row(i), file.length);
        const answer = await pacedUpload(url, apiKey, "memory", body, PACED_BYTES_PER_SECOND);
        if (answer.status !== 201) throw new Error(`upload answered ${answer.status}`);
        etag = String(answer.json.etag);
      } else {
        const res = await fetch(`${url}/api/v1/datasets/upload/?experiment_id=memory`, {
          method: "POST",
          headers: { ...auth, "content-type": "text/csv", connection: "close" },
          body: new Blob([file, row(i)]),
        });
        ({ etag } = await res.json());
        if (res.status !== 201) throw new Error(`upload answered ${res.status}`);
      }
      const created = performance.now();
      for (;;) {
        const poll = await fetch(`${url}/api/v1/datasets/memory/analysis/`, { headers: auth });
        const analysis = await poll.json();
        if (analysis.dataset?.etag === etag && analysis.status === "ready") break;
        if (analysis.dataset?.etag === etag && analysis.status === "failed") {
          throw new Error(String(analysis.error));
        }
        if (performance.now() - created > 120_000) throw new Error("not ready in time");
        await sleep(50);
      }
      sampling = false;
      await sampler;
      await sleep(2000);
      const parts = composition(peak, executable);
      if (Deno.env.get("ABN_BENCH_VERBOSE")) {
        // The large mappings at the peak, as size:resident MB (adjacent ones merged by the kernel).
        const large = peak.filter((m) => kindOf(m, executable) === "large" && m.rssKB >= 512);
        const listed = large.map((m) =>
          `${(m.sizeKB / 1024).toFixed(0)}:${(m.rssKB / 1024).toFixed(1)}`
        );
        console.error(`delivery ${i + 1}, large mappings at the peak: ${listed.join(" ")}`);
      }
      rows.push({
        "": `delivery ${i + 1}`,
        "RSS MB": total(await readMap(service.pid)).toFixed(0),
        "peak MB": total(peak).toFixed(0),
        "high-water MB": highWater ? ((await peakRssMB(service.pid))?.toFixed(0) ?? "") : "",
        [`peak after the ${twoStep ? "event" : "201"}, s`]: ((peakAt - created) / 1000).toFixed(2),
        [`${twoStep ? "event" : "201"} after the start, s`]: ((created - started) / 1000).toFixed(
          2,
        ),
        ...Object.fromEntries(KINDS.map((k) => [k, parts[k].toFixed(1)])),
      });
    }
  } finally {
    await service.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
  for (const row of rows) for (const key of Object.keys(rows[1] ?? {})) row[key] ??= "";
  return rows;
}

if (import.meta.main) {
  const path = Deno.args[0] ?? "/tmp/bench.csv";
  await ensureCsv(path);
  const mode = Deno.args[2] ?? "direct";
  if (mode !== "direct" && mode !== "two-step" && mode !== "paced") {
    throw new Error(`unknown mode ${mode}: direct, two-step or paced`);
  }
  const rows = await benchMemoryMap(path, Number(Deno.args[1] ?? 4), mode);
  printTable(
    "memory over a delivery's cycle: the peak of each, what it was made of (MB), RSS 2 s after",
    rows,
  );
}
