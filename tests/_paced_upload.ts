/**
 * A direct upload sent at a chosen rate, as from a client on a slower network than the loopback:
 * `POST /api/v1/datasets/upload/` over a plain connection, the body's length declared (as curl
 * and the upload client do), written in 512 KiB pieces on schedule.
 */
import { assert } from "./_assert.ts";
import { type DriverServer, startDriverServer } from "./_drivers.ts";
const encoder = new TextEncoder();

export interface PacedAnswer {
  status: number;
  json: Record<string, unknown>;
  /** Seconds from the first byte of the body to the end of the answer. */
  seconds: number;
}

/**
 * Sends `body` for `experimentId` to the service at `url` with `apiKey`, at about
 * `bytesPerSecond`; a body refused before its end stops being sent and its answer is read.
 */
export async function pacedUpload(
  url: string,
  apiKey: string,
  experimentId: string,
  body: Uint8Array,
  bytesPerSecond: number,
): Promise<PacedAnswer> {
  const { hostname, port } = new URL(url);
  const conn = await Deno.connect({ hostname, port: Number(port) });
  try {
    await conn.write(encoder.encode(
      `POST /api/v1/datasets/upload/?experiment_id=${
        encodeURIComponent(experimentId)
      } HTTP/1.1\r\n` +
        `host: ${hostname}\r\nauthorization: Bearer ${apiKey}\r\n` +
        `content-type: text/csv\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n`,
    ));
    const started = performance.now();
    const piece = 512 * 1024;
    for (let at = 0; at < body.length; at += piece) {
      const end = Math.min(body.length, at + piece);
      try {
        for (let sent = at; sent < end;) sent += await conn.write(body.subarray(sent, end));
      } catch {
        break; // refused before the end: the answer is waiting
      }
      const due = started + (end / bytesPerSecond) * 1000;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - performance.now())));
    }
    const answer = new TextDecoder().decode(await new Response(conn.readable).arrayBuffer());
    return {
      status: Number(answer.split(" ")[1]),
      json: JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)),
      seconds: (performance.now() - started) / 1000,
    };
  } catch (error) {
    try {
      conn.close();
    } catch { /* closed by its readable */ }
    throw error;
  }
}

/** The analysis of `id` as the API answers it. */
export async function analysisOf(
  server: DriverServer,
  id: string,
): Promise<Record<string, unknown>> {
  const res = await fetch(`${server.api}/datasets/${id}/analysis/`, {
    headers: { authorization: `Bearer ${server.apiKey}` },
  });
  return await res.json();
}

/** The analysis of `id` once it is ready or failed (within a minute). */
export async function settled(server: DriverServer, id: string): Promise<Record<string, unknown>> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const analysis = await analysisOf(server, id);
    if (analysis.status === "ready" || analysis.status === "failed") return analysis;
    assert(Date.now() < deadline, `no analysis of ${id} in time`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The figures of an analysis, without what names its delivery. */
export function figures(analysis: Record<string, unknown>) {
  const { experiment_id: _, analysed_at: _a, dataset, ...rest } = analysis;
  const { rows, size_bytes } = dataset as Record<string, unknown>;
  return { ...rest, rows, size_bytes };
}

/** A local server whose `analysis finished` lines the test reads. */
export async function withRuns(
  fn: (server: DriverServer, runs: () => Record<string, unknown>[]) => Promise<void>,
) {
  const lines: string[] = [];
  const server = await startDriverServer("local", {}, { log: (line) => lines.push(line) });
  try {
    await fn(
      server,
      () => lines.filter((l) => l.includes('"msg":"analysis finished"')).map((l) => JSON.parse(l)),
    );
  } finally {
    await server.close();
  }
}
