/**
 * Runs the load scenario against the real service in a child process (its memory is its own)
 * and reports the figures; the fast suite and the soak suite differ only in the numbers.
 */
import { assert, assertEquals } from "../_assert.ts";
import { runMain, spawnServer } from "../_server.ts";
import { peakRssBytes, tmpFiles, waitFor } from "../_faults.ts";
import { assertSameBytes, validCsv } from "./_helpers.ts";

export const MB = 1024 * 1024;
const enc = new TextEncoder();

export interface LoadOptions {
  /** Uploads to distinct experiments, and to one shared experiment. */
  distinct: number;
  same: number;
  /** Size of each upload in bytes. */
  bytes: number;
  /** Concurrent initiate workers and how long they run. */
  workers: number;
  seconds: number;
  /** Largest peak RSS accepted, in bytes. */
  maxRss: number;
  /** Also wait for every analysis to finish and report the peak RSS after them. */
  waitForAnalyses?: boolean;
  env?: Record<string, string>;
}

export interface LoadReport {
  uploads: number;
  uploadSeconds: number;
  peakRssAfterUploads: number;
  peakRssAfterAnalyses?: number;
  initiate: { requests: number; failures: number; perSecond: number; seconds: number };
}

/** Bodies that share their rows but differ in their first data row. */
function bodies(
  count: number,
  bytes: number,
): { rest: Uint8Array<ArrayBuffer>; heads: Uint8Array<ArrayBuffer>[] } {
  const base = validCsv(bytes, "load");
  const headerEnd = base.indexOf(0x0a) + 1;
  const header = new TextDecoder().decode(base.subarray(0, headerEnd));
  const heads = Array.from(
    { length: count },
    (_, i) => enc.encode(`${header}first${i},A,2026-01-01,1,${i}.5\n`),
  );
  return { rest: base.subarray(headerEnd), heads };
}

function streamOf(head: Uint8Array, rest: Uint8Array): ReadableStream<Uint8Array> {
  let offset = -1;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (offset < 0) {
        controller.enqueue(head);
        offset = 0;
      } else if (offset < rest.length) {
        controller.enqueue(rest.subarray(offset, offset + MB));
        offset += MB;
      } else {
        controller.close();
      }
    },
  });
}

export async function runLoad(options: LoadOptions): Promise<LoadReport> {
  const dataDir = await Deno.makeTempDir({ prefix: "abn-load-" });
  // The uploads come from one organization: its share of the slots would refuse most of them.
  const env = { ABN_DATA_DIR: dataDir, ABN_MAX_CONCURRENT_UPLOADS_PER_ORG: "0", ...options.env };
  let server = null;
  try {
    const org = JSON.parse(
      (await runMain(["admin", "org", "create", "load", "--json"], env)).stdout,
    );
    const { api_key } = JSON.parse(
      (await runMain(["admin", "key", "create", org.org_id, "--json"], env)).stdout,
    );
    server = await spawnServer(env);
    const pid = server.process.pid;
    const api = `${server.url}/api/v1`;
    const total = options.distinct + options.same;
    const { rest, heads } = bodies(total, options.bytes);

    const started = performance.now();
    const results = await Promise.all(heads.map(async (head, i) => {
      const id = i < options.distinct ? `load-${i}` : "shared";
      const res = await fetch(`${api}/datasets/upload/?experiment_id=${id}`, {
        method: "POST",
        headers: { authorization: `Bearer ${api_key}`, "content-type": "text/csv" },
        // Half declare their length (a Blob: validated on the service's worker thread), half
        // stream without one (chunked: validated inline).
        body: i % 2 === 0 ? new Blob([head, rest]) : streamOf(head, rest),
        signal: AbortSignal.timeout(120_000),
      });
      return { i, id, status: res.status, text: await res.text() };
    }));
    const uploadSeconds = (performance.now() - started) / 1000;
    for (const r of results) assertEquals(r.status, 201, `${r.id}: ${r.text.slice(0, 300)}`);
    const peakRssAfterUploads = (await peakRssBytes(pid)) ?? 0;

    // The shared experiment holds exactly one complete upload, byte for byte.
    const root = `${dataDir}/storage/org/${org.org_id}/experiments`;
    const shared = await Deno.readFile(`${root}/shared/latest.csv`);
    const firstLine = new TextDecoder().decode(shared.subarray(0, 200));
    const m = /\nfirst(\d+),/.exec(firstLine);
    assert(m, "the shared file does not start like any upload");
    const winner = Number(m[1]);
    assert(winner >= options.distinct && winner < total, `upload ${winner} is not a shared one`);
    const expected = new Uint8Array(heads[winner].length + rest.length);
    expected.set(heads[winner]);
    expected.set(rest, heads[winner].length);
    assertSameBytes(shared, expected, "the shared experiment's file");
    for (let i = 0; i < options.distinct; i++) {
      const info = await Deno.stat(`${root}/load-${i}/latest.csv`);
      assertEquals(info.size, heads[i].length + rest.length, `load-${i}`);
    }
    await waitFor(async () => (await tmpFiles(dataDir)).length === 0, "no temporaries", 10_000);

    let peakRssAfterAnalyses: number | undefined;
    if (options.waitForAnalyses) {
      for (
        const id of [
          "shared",
          ...Array.from({ length: options.distinct }, (_, i) => `load-${i}`),
        ]
      ) {
        const status = await waitFor(
          async () => {
            const res = await fetch(`${api}/datasets/${id}/`, {
              headers: { authorization: `Bearer ${api_key}` },
            });
            const body = await res.json();
            return body.analysis_status === "pending" ? null : String(body.analysis_status);
          },
          `the analysis of ${id}`,
          300_000,
          250,
        );
        assertEquals(status, "ready", `the analysis of ${id}`);
      }
      peakRssAfterAnalyses = (await peakRssBytes(pid)) ?? 0;
    }

    // Initiate from many concurrent workers for a bounded time.
    let requests = 0;
    let failures = 0;
    const failuresSeen: string[] = [];
    const deadline = performance.now() + options.seconds * 1000;
    const initiateStarted = performance.now();
    await Promise.all(Array.from({ length: options.workers }, async (_, w) => {
      let n = 0;
      while (performance.now() < deadline) {
        const res = await fetch(`${api}/datasets/initiate/`, {
          method: "POST",
          headers: { authorization: `Bearer ${api_key}`, "content-type": "application/json" },
          body: JSON.stringify({ experiment_id: `w${w}-${n++ % 10}` }),
        });
        const text = await res.text();
        requests++;
        if (res.status !== 200) {
          failures++;
          if (failuresSeen.length < 5) failuresSeen.push(`${res.status} ${text.slice(0, 200)}`);
        }
      }
    }));
    const initiateSeconds = (performance.now() - initiateStarted) / 1000;
    assertEquals(failures, 0, failuresSeen.join("\n"));
    const health = await fetch(`${server.url}/healthz`);
    assertEquals(health.status, 200);
    await health.body?.cancel();

    const report: LoadReport = {
      uploads: total,
      uploadSeconds,
      peakRssAfterUploads,
      peakRssAfterAnalyses,
      initiate: {
        requests,
        failures,
        perSecond: requests / initiateSeconds,
        seconds: initiateSeconds,
      },
    };
    const peak = Math.max(peakRssAfterUploads, peakRssAfterAnalyses ?? 0);
    assert(
      peak > 0 && peak < options.maxRss,
      `peak RSS ${(peak / MB).toFixed(0)} MB is over ${(options.maxRss / MB).toFixed(0)} MB`,
    );
    return report;
  } finally {
    await server?.stop().catch(() => {});
    await Deno.remove(dataDir, { recursive: true });
  }
}

export function loadLine(label: string, r: LoadReport): string {
  const mb = (n: number) => `${(n / MB).toFixed(0)} MB`;
  return `${label}: ${r.uploads} concurrent uploads in ${r.uploadSeconds.toFixed(1)} s; ` +
    `peak RSS ${mb(r.peakRssAfterUploads)} after uploads` +
    (r.peakRssAfterAnalyses !== undefined ? `, ${mb(r.peakRssAfterAnalyses)} after analyses` : "") +
    `; initiate ${r.initiate.requests} requests in ${r.initiate.seconds.toFixed(1)} s ` +
    `(${r.initiate.perSecond.toFixed(0)}/s), ${r.initiate.failures} failures`;
}
