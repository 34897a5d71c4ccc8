/**
 * Several service instances on one S3 bucket (s3rver) and one PostgreSQL database: in-process
 * (each with its own data directory and log) or as child processes (to be killed).
 */
import { generateCsv } from "../../bench/generate_csv.ts";
import type { TestServer } from "../_server.ts";
import { startTestServer } from "../_server.ts";
import type { S3rverFixture } from "../_s3rver.ts";

/** The environment that points an instance at `s3` and at the database `databaseUrl`. */
export function sharedEnv(
  s3: S3rverFixture,
  databaseUrl: string,
  endpoint = s3.endpoint,
): Record<string, string> {
  return {
    ABN_DATABASE_URL: databaseUrl,
    ABN_STORAGE: "s3",
    ABN_S3_ENDPOINT: endpoint,
    ABN_S3_PUBLIC_ENDPOINT: s3.endpoint,
    ABN_S3_REGION: s3.region,
    ABN_S3_BUCKET: s3.bucket,
    ABN_S3_ACCESS_KEY_ID: s3.accessKeyId,
    ABN_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
    ABN_S3_FORCE_PATH_STYLE: "true",
  };
}

export interface Instance extends TestServer {
  name: string;
  /** The instance's log lines, parsed. */
  lines(): Record<string, unknown>[];
}

/** Starts `names.length` in-process instances sharing `env` (bucket and database). */
export async function startInstances(
  names: string[],
  env: Record<string, string>,
): Promise<Instance[]> {
  const instances: Instance[] = [];
  try {
    for (const name of names) {
      const lines: string[] = [];
      const server = await startTestServer(env, { log: (line) => lines.push(line) });
      instances.push({
        ...server,
        name,
        lines: () => lines.flatMap((l) => l.split("\n")).filter((l) => l).map((l) => JSON.parse(l)),
      });
    }
  } catch (error) {
    for (const i of instances) await i.close();
    throw error;
  }
  return instances;
}

/** `analysis finished` lines of every instance, as `{instance, experiment_id, etag, source}`. */
export function analysisRuns(instances: Instance[]) {
  return instances.flatMap((i) =>
    i.lines().filter((l) => l.msg === "analysis finished").map((l) => ({
      instance: i.name,
      experiment_id: l.experiment_id as string,
      etag: l.etag as string,
      source: l.source as string,
    }))
  );
}

/** A small valid dataset, different for every seed. */
export async function csvBytes(seed: number, rows = 300): Promise<Uint8Array<ArrayBuffer>> {
  const parts: Uint8Array[] = [];
  for await (const c of generateCsv({ rows, seed, variants: ["A", "B"], days: 5 })) parts.push(c);
  return new Uint8Array(await new Blob(parts as Uint8Array<ArrayBuffer>[]).arrayBuffer());
}

/** A direct upload; answers the status and the parsed body. */
export async function upload(
  api: string,
  apiKey: string,
  experimentId: string,
  body: Uint8Array<ArrayBuffer>,
): Promise<{ status: number; body: Record<string, unknown>; retryAfter: string | null }> {
  const res = await fetch(`${api}/datasets/upload/?experiment_id=${experimentId}`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "text/csv" },
    body,
  });
  const text = await res.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text);
  } catch { /* not JSON: kept empty, the status tells */ }
  return { status: res.status, body: parsed, retryAfter: res.headers.get("retry-after") };
}

/** The analysis of `experimentId` as one instance answers it (status, etag). */
export async function analysisOf(
  api: string,
  apiKey: string,
  experimentId: string,
): Promise<{ http: number; status?: string; etag?: string; control?: string }> {
  const res = await fetch(`${api}/datasets/${experimentId}/analysis/`, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
  if (res.status !== 200) {
    await res.body?.cancel();
    return { http: res.status };
  }
  const body = await res.json();
  return { http: 200, status: body.status, etag: body.dataset?.etag, control: body.control };
}

/** Polls until `fn` answers truthy; throws naming `what` after `ms`. */
export async function waitUntil<T>(
  fn: () => Promise<T | null | undefined | false>,
  what: string,
  ms = 30_000,
  every = 100,
): Promise<T> {
  const deadline = Date.now() + ms;
  while (true) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, every));
  }
}
