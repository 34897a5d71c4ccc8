/**
 * The PostgreSQL control plane and scale-out, on a throwaway cluster (Debian's `postgresql`;
 * started as in the tests):
 *   (a) initiate at 50 connections on PostgreSQL ÷ hello-world `Deno.serve` (wrk);
 *   (b) tiny direct uploads at 16 connections, PostgreSQL ÷ SQLite (wrk, local storage);
 *   (c) 25 MB direct uploads per minute, two instances ÷ one, both on one s3rver bucket and one
 *       database, 4 clients; every upload answered 201 is checked in the bucket afterwards.
 * Series take turns `rounds` times; medians count. The machine is shared: compare ratios.
 *
 *   deno run -A bench/scale_out_bench.ts [SECONDS] [ROUNDS]
 */
import { benchKey, freePort, median, printTable, spawnService, startChild } from "./_util.ts";
import type { Child } from "./_util.ts";
import { combine, wrk } from "./initiate_bench.ts";
import type { WrkResult } from "./initiate_bench.ts";
import { writeCsv } from "./generate_csv.ts";
import { s3Env, startS3rver } from "../tests/_s3rver.ts";
import { startCluster } from "../tests/_postgres.ts";

/** An organization and its key in the database `env` names. */
async function orgKey(env: Record<string, string>): Promise<string> {
  return (await benchKey(env)).apiKey;
}

/** One organization's 16 connections of tiny uploads fit in its share of the upload slots. */
function serve(env: Record<string, string>): Promise<Child> {
  return spawnService({ ABN_MAX_CONCURRENT_UPLOADS_PER_ORG: "16", ...env });
}

const TINY_CSV = "user_id,variant,date,converted\nu1,A,2026-01-01,1\nu2,B,2026-01-01,0\n";

async function script(dir: string, name: string, lines: string[]): Promise<string> {
  const path = `${dir}/${name}.lua`;
  await Deno.writeTextFile(path, lines.join("\n") + "\n");
  return path;
}

/** `clients` loops of 25 MB uploads for `seconds` against `urls` in turn; checks what is stored. */
async function bigUploads(
  urls: string[],
  apiKey: string,
  file: string,
  seconds: number,
  tag: string,
  clients = 4,
): Promise<{ perMinute: number; failed: number; lost: number }> {
  const size = (await Deno.stat(file)).size;
  const deadline = Date.now() + seconds * 1000;
  let done = 0;
  let failed = 0;
  const last = new Map<string, string>(); // experiment → etag of its last 201
  const started = performance.now();
  await Promise.all(Array.from({ length: clients }, async (_, c) => {
    for (let n = 0; Date.now() < deadline; n++) {
      const base = urls[(c + n) % urls.length];
      const id = `big-${tag}-${c}`;
      const out = await new Deno.Command("curl", {
        args: [
          "-sS",
          "-X",
          "POST",
          "-H",
          `Authorization: Bearer ${apiKey}`,
          "-H",
          "Content-Type: text/csv",
          "--data-binary",
          `@${file}`,
          `${base}/api/v1/datasets/upload/?experiment_id=${id}`,
        ],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const text = new TextDecoder().decode(out.stdout);
      try {
        const body = JSON.parse(text);
        if (body.success && body.size_bytes === size) {
          done++;
          last.set(id, body.etag);
          continue;
        }
      } catch { /* not JSON */ }
      failed++;
    }
  }));
  const minutes = (performance.now() - started) / 60_000;
  let lost = 0;
  for (const [id, etag] of last) {
    const res = await fetch(`${urls[0]}/api/v1/datasets/${id}/`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    const body = res.ok ? await res.json() : (await res.body?.cancel(), null);
    if (body?.etag !== etag || body?.size_bytes !== size) lost++;
  }
  return { perMinute: done / minutes, failed, lost };
}

export async function benchScaleOut(seconds = 10, rounds = 3, bigSeconds = 30) {
  const work = await Deno.makeTempDir({ prefix: "abn-bench-scale-" });
  const cluster = await startCluster();
  const children: Child[] = [];
  const s3 = await startS3rver();
  try {
    const helloPort = freePort();
    const hello = await startChild(
      ["run", "-A", new URL("./_hello_server.ts", import.meta.url).pathname, String(helloPort)],
      {},
      "ready",
      helloPort,
    );
    children.push(hello);

    // (a) and (b): a SQLite service and a PostgreSQL one, both on local storage.
    const pgDb = await cluster.database();
    const sqliteEnv = { ABN_DATA_DIR: `${work}/sqlite` };
    const pgEnv = { ABN_DATA_DIR: `${work}/pg`, ABN_DATABASE_URL: pgDb.url };
    const keys = { sqlite: await orgKey(sqliteEnv), pg: await orgKey(pgEnv) };
    const sqliteSvc = await serve(sqliteEnv);
    const pgSvc = await serve(pgEnv);
    children.push(sqliteSvc, pgSvc);
    const initiate = (key: string) =>
      script(work, `initiate-${key.slice(4, 10)}`, [
        'wrk.method = "POST"',
        `wrk.body = '{"experiment_id": "bench-exp"}'`,
        'wrk.headers["Content-Type"] = "application/json"',
        `wrk.headers["Authorization"] = "Bearer ${key}"`,
      ]);
    const initiatePg = await initiate(keys.pg);
    const initiateSqlite = await initiate(keys.sqlite);
    const tiny = (key: string) =>
      script(work, `tiny-${key.slice(4, 10)}`, [
        'wrk.method = "POST"',
        `wrk.body = [[${TINY_CSV}]]`,
        'wrk.headers["Content-Type"] = "text/csv"',
        `wrk.headers["Authorization"] = "Bearer ${key}"`,
      ]);
    const tinySqlite = await tiny(keys.sqlite);
    const tinyPg = await tiny(keys.pg);
    const runs = {
      hello: [] as WrkResult[],
      initiatePg: [] as WrkResult[],
      initiateSqlite: [] as WrkResult[],
      tinySqlite: [] as WrkResult[],
      tinyPg: [] as WrkResult[],
    };
    const uploadUrl = (c: Child) => `${c.url}/api/v1/datasets/upload/?experiment_id=tiny`;
    for (let round = 0; round < rounds; round++) {
      runs.hello.push(await wrk(hello.pid, `${hello.url}/`, seconds));
      runs.initiatePg.push(
        await wrk(pgSvc.pid, `${pgSvc.url}/api/v1/datasets/initiate/`, seconds, initiatePg),
      );
      runs.initiateSqlite.push(
        await wrk(
          sqliteSvc.pid,
          `${sqliteSvc.url}/api/v1/datasets/initiate/`,
          seconds,
          initiateSqlite,
        ),
      );
      runs.tinySqlite.push(await wrk(sqliteSvc.pid, uploadUrl(sqliteSvc), seconds, tinySqlite, 16));
      runs.tinyPg.push(await wrk(pgSvc.pid, uploadUrl(pgSvc), seconds, tinyPg, 16));
    }
    for (const c of [sqliteSvc, pgSvc]) await c.stop();

    // (c): one instance, then two, on one bucket and one database.
    const bigDb = await cluster.database();
    const bigEnv = (n: number) => ({
      ...s3Env(s3),
      ABN_DATABASE_URL: bigDb.url,
      ABN_DATA_DIR: `${work}/big-${n}`,
    });
    const bigKey = await orgKey(bigEnv(0));
    const file = `${work}/25mb.csv`;
    await writeCsv(file, { rows: 600_000, seed: 5 });
    const instances = [await serve(bigEnv(1)), await serve(bigEnv(2))];
    children.push(...instances);
    const big = { one: [] as number[], two: [] as number[], failed: 0, lost: 0 };
    for (let round = 0; round < Math.max(2, rounds - 1); round++) {
      for (
        const [name, urls] of [["one", [instances[0].url]], [
          "two",
          instances.map((i) => i.url),
        ]] as const
      ) {
        const r = await bigUploads([...urls], bigKey, file, bigSeconds, `${name}-${round}`);
        big[name].push(r.perMinute);
        big.failed += r.failed;
        big.lost += r.lost;
      }
    }
    return {
      hello: combine(runs.hello),
      initiatePg: combine(runs.initiatePg),
      initiateSqlite: combine(runs.initiateSqlite),
      tinySqlite: combine(runs.tinySqlite),
      tinyPg: combine(runs.tinyPg),
      big: {
        one: median(big.one),
        two: median(big.two),
        // Each round's two ÷ one: the rounds alternate one instance and two.
        ratios: big.two.map((two, i) => two / big.one[i]),
        failed: big.failed,
        lost: big.lost,
      },
      fileMB: (await Deno.stat(file)).size / 1e6,
    };
  } finally {
    for (const c of children) await c.stop().catch(() => {});
    await s3.stop();
    await cluster.destroy();
    await Deno.remove(work, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) {
  const r = await benchScaleOut(Number(Deno.args[0] ?? 10), Number(Deno.args[1] ?? 3));
  const fmt = (x: WrkResult) => `${x.rps.toFixed(0)} req/s, p99 ${x.p99ms.toFixed(1)} ms`;
  printTable("PostgreSQL control plane and scale-out (medians; the machine is shared)", [
    {
      benchmark: "initiate on PostgreSQL, 50 connections",
      ours: fmt(r.initiatePg),
      baseline: `hello-world ${fmt(r.hello)}`,
      ratio: (r.initiatePg.rps / r.hello.rps).toFixed(2),
      target: "≥ 0.15, p99 < 20 ms",
    },
    {
      benchmark: "initiate on SQLite, 50 connections (same run)",
      ours: fmt(r.initiateSqlite),
      baseline: `hello-world ${fmt(r.hello)}`,
      ratio: (r.initiateSqlite.rps / r.hello.rps).toFixed(2),
      target: "(reference)",
    },
    {
      benchmark: "tiny direct uploads, 16 connections",
      ours: `PostgreSQL ${fmt(r.tinyPg)}`,
      baseline: `SQLite ${fmt(r.tinySqlite)}`,
      ratio: (r.tinyPg.rps / r.tinySqlite.rps).toFixed(2),
      target: "≥ 0.50",
    },
    {
      benchmark: `${r.fileMB.toFixed(0)} MB uploads per minute, 4 clients, s3rver`,
      ours: `two instances ${r.big.two.toFixed(1)}/min`,
      baseline: `one instance ${r.big.one.toFixed(1)}/min`,
      ratio: `${median(r.big.ratios).toFixed(2)} [${Math.min(...r.big.ratios).toFixed(2)}–${
        Math.max(...r.big.ratios).toFixed(2)
      }] over ${r.big.ratios.length} rounds`,
      target: `≥ 0.90, none lost (failed ${r.big.failed}, lost ${r.big.lost})`,
    },
  ]);
}
