import { assert, assertEquals, assertThrows } from "../_assert.ts";
import { startTestServer } from "../_server.ts";
import type { TestServer } from "../_server.ts";

const VALID = await Deno.readFile(new URL("../testdata/small.csv", import.meta.url));
const INVALID = new TextEncoder().encode("user_id,variant,date,converted\nu1,A,2026-01-01\n");
const LIMIT = 4096;

// ---- A strict reader of the Prometheus text exposition format (version 0.0.4) ----

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

interface Family {
  name: string;
  type: string;
  help: string;
  samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);

function parseValue(text: string, line: number): number {
  if (text === "+Inf") return Infinity;
  if (text === "-Inf") return -Infinity;
  if (text === "NaN") return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) {
    throw new SyntaxError(`Cannot parse line ${line}: bad value ${JSON.stringify(text)}`);
  }
  return Number(text);
}

/** Reads `{a="x",b="y"}` starting at `at`; answers the labels and the index after `}`. */
function parseLabels(text: string, at: number, line: number): [Record<string, string>, number] {
  const labels: Record<string, string> = {};
  let i = at + 1;
  const fail = (why: string) => new SyntaxError(`Cannot parse line ${line}: ${why}`);
  while (text[i] !== "}") {
    const eq = text.indexOf("=", i);
    if (eq === -1) throw fail("label without =");
    const name = text.slice(i, eq);
    if (!LABEL_NAME.test(name)) throw fail(`bad label name ${JSON.stringify(name)}`);
    if (name in labels) throw fail(`label ${name} given twice`);
    if (text[eq + 1] !== '"') throw fail(`label ${name} value is not quoted`);
    let value = "";
    let j = eq + 2;
    for (;; j++) {
      if (j >= text.length) throw fail("unterminated label value");
      const c = text[j];
      if (c === '"') break;
      if (c === "\\") {
        const next = text[++j];
        if (next === "\\") value += "\\";
        else if (next === '"') value += '"';
        else if (next === "n") value += "\n";
        else throw fail(`bad escape \\${next}`);
      } else value += c;
    }
    labels[name] = value;
    i = j + 1;
    if (text[i] === ",") i++;
    else if (text[i] !== "}") throw fail("expected , or } after a label");
  }
  return [labels, i + 1];
}

function familyOf(sample: string, families: Map<string, Family>): Family | undefined {
  for (const suffix of ["", "_bucket", "_sum", "_count"]) {
    if (!sample.endsWith(suffix)) continue;
    const family = families.get(sample.slice(0, sample.length - suffix.length));
    if (!family) continue;
    if (suffix === "" || family.type === "histogram" || family.type === "summary") return family;
  }
  return undefined;
}

/** Parses an exposition; throws SyntaxError on anything the format does not allow. */
function parseExposition(text: string): Map<string, Family> {
  if (!text.endsWith("\n")) throw new SyntaxError("Cannot parse exposition: no final newline");
  const families = new Map<string, Family>();
  const seriesSeen = new Set<string>();
  const finished = new Set<string>();
  let current: Family | undefined;
  const lines = text.slice(0, -1).split("\n");
  lines.forEach((raw, index) => {
    const line = index + 1;
    const fail = (why: string) => new SyntaxError(`Cannot parse line ${line}: ${why}: ${raw}`);
    if (raw === "" || raw !== raw.trim()) throw fail("empty line or stray whitespace");
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(raw);
    if (meta) {
      const [, kind, name, rest] = meta;
      if (!METRIC_NAME.test(name)) throw fail("bad metric name");
      if (finished.has(name)) throw fail(`family ${name} appears twice`);
      let family = families.get(name);
      if (!family) {
        if (current) finished.add(current.name);
        family = { name, type: "untyped", help: "", samples: [] };
        families.set(name, family);
        current = family;
      }
      if (family !== current) throw fail(`${name} is not the current family`);
      if (family.samples.length > 0) throw fail(`${kind} after the samples of ${name}`);
      if (kind === "TYPE") {
        if (!TYPES.has(rest)) throw fail(`unknown type ${rest}`);
        family.type = rest;
      } else {
        if (family.help) throw fail(`second HELP for ${name}`);
        family.help = rest;
      }
      return;
    }
    if (raw.startsWith("#")) return; // a comment
    const nameEnd = raw.search(/[{ ]/);
    if (nameEnd <= 0) throw fail("no metric name");
    const name = raw.slice(0, nameEnd);
    if (!METRIC_NAME.test(name)) throw fail("bad metric name");
    let labels: Record<string, string> = {};
    let at = nameEnd;
    if (raw[at] === "{") [labels, at] = parseLabels(raw, at, line);
    if (raw[at] !== " ") throw fail("expected a space before the value");
    const parts = raw.slice(at + 1).split(" ");
    if (parts.length > 2) throw fail("extra fields");
    const value = parseValue(parts[0], line);
    if (parts.length === 2 && !/^-?\d+$/.test(parts[1])) throw fail("bad timestamp");
    const family = familyOf(name, families);
    if (!family) throw fail(`sample ${name} has no HELP/TYPE family`);
    if (family !== current) throw fail(`sample ${name} is outside its family's block`);
    if (family.type === "counter" && !(value >= 0)) throw fail("a counter below zero");
    if (name.endsWith("_bucket") && family.type === "histogram" && !("le" in labels)) {
      throw fail("a bucket without le");
    }
    const series = `${name}{${JSON.stringify(Object.entries(labels).sort())}}`;
    if (seriesSeen.has(series)) throw fail("a series given twice");
    seriesSeen.add(series);
    family.samples.push({ name, labels, value });
  });
  for (const family of families.values()) {
    if (family.type === "histogram") checkHistogram(family);
  }
  return families;
}

/** Per label set: ascending `le`, non-decreasing counts, `+Inf` = `_count`, a `_sum`. */
function checkHistogram(family: Family): void {
  const groups = new Map<string, { buckets: [number, number][]; count?: number; sum?: number }>();
  for (const s of family.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    const group = groups.get(key) ?? { buckets: [] };
    groups.set(key, group);
    if (s.name === `${family.name}_bucket`) group.buckets.push([parseValue(le, 0), s.value]);
    else if (s.name === `${family.name}_count`) group.count = s.value;
    else if (s.name === `${family.name}_sum`) group.sum = s.value;
    else throw new SyntaxError(`Cannot read histogram ${family.name}: stray sample ${s.name}`);
  }
  for (const [key, g] of groups) {
    const where = `${family.name}${key}`;
    if (g.buckets.length === 0) throw new SyntaxError(`${where}: no buckets`);
    for (let i = 1; i < g.buckets.length; i++) {
      if (!(g.buckets[i][0] > g.buckets[i - 1][0])) {
        throw new SyntaxError(`${where}: le not ascending`);
      }
      if (g.buckets[i][1] < g.buckets[i - 1][1]) throw new SyntaxError(`${where}: counts decrease`);
    }
    const last = g.buckets[g.buckets.length - 1];
    if (last[0] !== Infinity) throw new SyntaxError(`${where}: no +Inf bucket`);
    if (g.count === undefined || last[1] !== g.count) {
      throw new SyntaxError(`${where}: +Inf bucket ${last[1]} differs from _count ${g.count}`);
    }
    if (g.sum === undefined) throw new SyntaxError(`${where}: no _sum`);
  }
}

/** The value of the one sample of `name` whose labels include `labels`; 0 when none. */
function value(families: Map<string, Family>, name: string, labels: Record<string, string> = {}) {
  const family = familyOf(name, families);
  assert(family, `no metric family for ${name}`);
  const matches = family.samples.filter((s) =>
    s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)
  );
  return matches.reduce((sum, s) => sum + s.value, 0);
}

Deno.test("parseExposition refuses what the text format does not allow", () => {
  const ok = '# HELP a_total A.\n# TYPE a_total counter\na_total{x="1\\""} 2\n';
  assertEquals(parseExposition(ok).get("a_total")?.samples[0].labels.x, '1"');
  const bad = [
    "# TYPE a counter\na 1", // no final newline
    "# TYPE a counter\na{x=1} 1\n", // unquoted label
    "# TYPE a counter\na -1\n", // negative counter
    "a 1\n", // no family
    "# TYPE a counter\na 1\na 2\n", // duplicate series
    "# TYPE a counter\n# TYPE b counter\na 1\n", // sample outside its block
    '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 0\nh_count 1\n',
    '# TYPE h histogram\nh_bucket{le="1"} 1\nh_bucket{le="+Inf"} 2\nh_sum 0\nh_count 3\n',
    '# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 0\nh_count 1\n',
  ];
  for (const text of bad) assertThrows(() => parseExposition(text), SyntaxError);
});

// ---- The service's /metrics after real traffic ----

async function scrape(server: TestServer): Promise<Map<string, Family>> {
  const res = await fetch(`${server.url}/metrics`);
  assertEquals(res.status, 200);
  assert(/^text\/plain; version=0\.0\.4/.test(res.headers.get("content-type") ?? ""));
  return parseExposition(await res.text());
}

async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  ms = 10_000,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

Deno.test("GET /metrics is valid Prometheus text and counts requests, bytes, rejections, analyses and timer work", async () => {
  const server = await startTestServer({
    ABN_MAX_UPLOAD_BYTES: String(LIMIT),
    ABN_SCAN_INTERVAL_SECONDS: "1",
    ABN_CLEANUP_INTERVAL_SECONDS: "1",
    // The oversize object below is written straight into storage: reconciliation finds it.
    ABN_RECONCILE_INTERVAL_SECONDS: "1",
  });
  const auth = { authorization: `Bearer ${server.apiKey}` };
  try {
    const uploaded = await fetch(`${server.api}/datasets/upload/?experiment_id=m-direct`, {
      method: "POST",
      headers: { ...auth, "content-type": "text/csv" },
      body: VALID,
    });
    assertEquals(uploaded.status, 201, await uploaded.text());
    const refused = await fetch(`${server.api}/datasets/upload/?experiment_id=m-bad`, {
      method: "POST",
      headers: { ...auth, "content-type": "text/csv" },
      body: INVALID,
    });
    assertEquals(refused.status, 400, await refused.text());

    const grant = await (await fetch(`${server.api}/datasets/initiate/`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ experiment_id: "m-two" }),
    })).json();
    const put = await fetch(grant.upload_url, {
      method: "PUT",
      headers: { "content-type": "text/csv" },
      body: VALID,
    });
    assertEquals(put.status, 200, await put.text());
    const forged = await fetch(grant.upload_url.replace(/signature=[^&]+/, "signature=AAAA"), {
      method: "PUT",
      headers: { "content-type": "text/csv" },
      body: VALID,
    });
    assertEquals(forged.status, 403, await forged.text());
    const missing = await fetch(`${server.url}/no-such-page`);
    assertEquals(missing.status, 404);
    await missing.body?.cancel();

    // A dataset over the limit, as the two-step route on S3 could leave: the clean-up deletes it.
    const writer = await server.service.store.createWriter(
      `org/${server.orgId}/experiments/m-oversize/latest.csv`,
    );
    await writer.write(new Uint8Array(LIMIT + 1).fill(0x41));
    await writer.commit();

    for (const id of ["m-direct", "m-two"]) {
      await waitFor(`the analysis of ${id}`, async () => {
        const res = await fetch(`${server.api}/datasets/${id}/analysis/`, { headers: auth });
        return res.status === 200 && (await res.json()).status === "ready";
      });
    }
    await waitFor("a clean-up deletion", async () => {
      const m = await scrape(server);
      return value(m, "abn_cleanup_deletions_total") >= 1 &&
        value(m, "abn_timer_runs_total", { job: "scan", outcome: "ok" }) >= 1;
    });

    const m = await scrape(server);
    const requests = (route: string, method: string, status: string) =>
      value(m, "abn_http_requests_total", { route, method, status });
    assertEquals(requests("/api/v1/datasets/upload/", "POST", "201"), 1);
    assertEquals(requests("/api/v1/datasets/upload/", "POST", "400"), 1);
    assertEquals(requests("/api/v1/datasets/initiate/", "POST", "200"), 1);
    assertEquals(requests("/storage/*key", "PUT", "200"), 1);
    assertEquals(requests("/storage/*key", "PUT", "403"), 1);
    assertEquals(requests("unmatched", "GET", "404"), 1);
    assert(requests("/api/v1/datasets/:experiment_id/analysis/", "GET", "200") >= 2);
    assert(requests("/metrics", "GET", "200") >= 1);
    assertEquals(
      value(m, "abn_http_request_duration_seconds_count", { route: "/api/v1/datasets/upload/" }),
      2,
    );

    // Refused bodies count too: the stored one and the refused one (one chunk, read whole).
    assertEquals(
      value(m, "abn_upload_bytes_received_total", { route: "upload" }),
      VALID.length + INVALID.length,
    );
    assertEquals(
      value(m, "abn_upload_bytes_received_total", { route: "presigned_put" }),
      VALID.length,
    );
    assertEquals(value(m, "abn_uploads_stored_total", { route: "upload" }), 1);
    assertEquals(value(m, "abn_uploads_stored_total", { route: "presigned_put" }), 1);
    assertEquals(value(m, "abn_uploads_rejected_total", { reason: "invalid_csv" }), 1);
    assertEquals(value(m, "abn_uploads_rejected_total", { reason: "invalid_signature" }), 1);

    const runs = value(m, "abn_analysis_runs_total");
    assert(value(m, "abn_analysis_runs_total", { outcome: "ready" }) >= 2);
    assertEquals(value(m, "abn_analysis_duration_seconds_count"), runs);

    // The memory gauges read this process (the test server runs in it).
    const now = Deno.memoryUsage();
    const rss = value(m, "abn_process_resident_memory_bytes");
    assert(Math.abs(rss - now.rss) < 64 * 2 ** 20, `resident ${rss} against ${now.rss}`);
    const heap = value(m, "abn_js_heap_used_bytes");
    assert(heap > 2 ** 20 && heap < rss, `heap ${heap} of ${rss}`);
    assert(value(m, "abn_js_external_memory_bytes") > 0);

    assertEquals(value(m, "abn_cleanup_deletions_total"), 1);
    assert(value(m, "abn_timer_runs_total", { job: "cleanup", outcome: "ok" }) >= 1);
    assert(value(m, "abn_timer_runs_total", { job: "scan", outcome: "ok" }) >= 1);
    assertEquals(value(m, "abn_timer_runs_total", { outcome: "failed" }), 0);

    for (const name of [...m.keys()]) assert(name.startsWith("abn_"), name);
    for (const family of m.values()) assert(family.help.length > 0, `${family.name} has no HELP`);
  } finally {
    await server.close();
  }
});
