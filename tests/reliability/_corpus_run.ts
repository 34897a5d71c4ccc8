/**
 * Sends a corpus through the real server and checks every answer (used by the fast suite and
 * by the soak suite with larger corpora).
 */
import { assertEquals } from "../_assert.ts";
import type { DriverServer } from "../_drivers.ts";
import { tmpFiles, waitFor } from "../_faults.ts";
import type { CorpusCase } from "./_corpus.ts";
import { BODY_CODES, pieces, validBase } from "./_corpus.ts";
import { authed, errorCode, readJson, upload, verdict } from "./_helpers.ts";

export const CORPUS_SEED = 20_260_101;

export interface CorpusReport {
  cases: number;
  outcomes: Record<string, number>;
  byCategory: Record<string, Record<string, number>>;
  analysed: Record<string, number>;
  failures: string[];
  seconds: number;
}

/** Sends every case to `server` in order and checks each answer; answers the tally. */
export async function runCorpus(server: DriverServer, cases: CorpusCase[]): Promise<CorpusReport> {
  const started = performance.now();
  const target = "corpus";
  const failures: string[] = [];
  const outcomes: Record<string, number> = {};
  const byCategory: Record<string, Record<string, number>> = {};
  const edge: string[] = [];
  let previous: Uint8Array = validBase();
  const first = await upload(server, target, previous.slice());
  assertEquals(first.status, 201, await first.text());

  for (const [index, c] of cases.entries()) {
    const chunks = pieces(c);
    const inProcess = verdict(chunks);
    if (c.splits && c.splits.length > 0) {
      const whole = verdict([c.bytes]);
      if (whole !== inProcess) {
        failures.push(
          `${c.name}: chunking changed the verdict: whole ${whole}, split ${inProcess}`,
        );
      }
    }
    const body = c.splits ? ReadableStream.from(chunks) : c.bytes;
    let res: Response;
    try {
      res = await upload(server, target, body);
    } catch (error) {
      // No answer (a hang or a dropped connection): the server is in no state to go on.
      failures.push(`${c.name}: no answer: ${String(error)}`);
      break;
    }
    const { text, json } = await readJson(res);
    const code = res.status === 201 ? "201" : errorCode(json) ?? `status ${res.status}`;
    outcomes[code] = (outcomes[code] ?? 0) + 1;
    (byCategory[c.category] ??= {})[code] = (byCategory[c.category][code] ?? 0) + 1;
    const fail = (why: string) =>
      failures.push(`${c.name}: ${why} (${res.status} ${text.slice(0, 200)})`);

    if (res.status >= 500) {
      fail("a 5xx");
    } else if (res.status === 201) {
      if (c.expect !== "accept" && c.expect !== "any") fail(`accepted, expected ${c.expect}`);
      if (inProcess !== "accept") fail(`accepted, but the validator says ${inProcess}`);
      const stored = await server.stored(server.orgId, target);
      if (!equalBytes(stored, c.bytes)) fail("201 but the stored file is not the body");
      previous = c.bytes;
      if (c.analyse) {
        const id = `edge-${index}`;
        const again = await upload(server, id, c.bytes);
        await again.body?.cancel();
        if (again.status === 201) edge.push(id);
        else fail(`edge upload answered ${again.status}`);
      }
    } else {
      if (res.status < 400 || !(res.headers.get("content-type") ?? "").includes("json")) {
        fail("not a JSON error");
      }
      if (!BODY_CODES.includes(code as typeof BODY_CODES[number])) fail(`unknown code ${code}`);
      if (c.expect === "accept") fail("refused, expected 201");
      if (Array.isArray(c.expect) && !c.expect.includes(code)) fail(`expected ${c.expect}`);
      if (code !== inProcess) fail(`the validator in-process says ${inProcess}`);
      const message = (json as { error?: { message?: string } }).error?.message ?? "";
      if (message.length < 10) fail("no human message");
      const stored = await server.stored(server.orgId, target);
      if (!equalBytes(stored, previous)) fail("the stored file changed after a refusal");
    }
  }

  // Numbers at the edge of the double range: the analysis of an accepted file is ready.
  const analysed: Record<string, number> = {};
  for (const id of edge) {
    const status = await waitFor(
      async () => {
        const res = await authed(server, server.apiKey, `/datasets/${id}/analysis/`);
        const { text, json } = await readJson(res);
        if (res.status !== 200) {
          failures.push(`analysis of ${id}: ${res.status} ${text.slice(0, 200)}`);
          return "http error";
        }
        const s = (json as { status: string }).status;
        return s === "pending" ? null : s;
      },
      `the analysis of ${id}`,
      20_000,
    );
    analysed[status] = (analysed[status] ?? 0) + 1;
    // A file the upload accepted must be analysable, numbers at the edge of the range included.
    if (status !== "ready") {
      const res = await authed(server, server.apiKey, `/datasets/${id}/analysis/`);
      const { json } = await readJson(res);
      failures.push(`analysis of ${id}: ${status}: ${(json as { error?: string }).error}`);
    }
  }
  if (server.driver === "local") {
    await waitFor(
      async () => (await tmpFiles(server.dataDir)).length === 0,
      "no temporary files",
      5_000,
    );
  }
  return {
    cases: cases.length,
    outcomes,
    byCategory,
    analysed,
    failures,
    seconds: (performance.now() - started) / 1000,
  };
}

function equalBytes(a: Uint8Array | null, b: Uint8Array): boolean {
  if (a === null || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function reportLine(label: string, report: CorpusReport): string {
  return `${label}: ${report.cases} uploads in ${report.seconds.toFixed(1)} s; outcomes ${
    JSON.stringify(report.outcomes)
  }; edge analyses ${JSON.stringify(report.analysed)}; ${report.failures.length} failures`;
}
