import { assert, assertApiError, assertEquals } from "../_assert.ts";
import { deliverTwoStep, driverTest, driverTestWithRgw, startDriverServer } from "../_drivers.ts";
import type { DriverServer } from "../_drivers.ts";
import { exchangeOn, rawExchange, writeAll } from "../_faults.ts";
import { analysisOf, figures, pacedUpload, settled, withRuns } from "../_paced_upload.ts";

const encoder = new TextEncoder();
const VALID = await Deno.readFile(new URL("../testdata/small.csv", import.meta.url));

function upload(
  server: DriverServer,
  experimentId: string,
  body: BodyInit | null,
  headers: Record<string, string> = {},
  apiKey = server.apiKey,
): Promise<Response> {
  return fetch(`${server.api}/datasets/upload/?experiment_id=${encodeURIComponent(experimentId)}`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "text/csv", ...headers },
    body,
  });
}

async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

driverTestWithRgw(
  "direct upload stores the file and answers 201 with the upload result",
  async (server) => {
    const res = await upload(server, "exp-1", VALID);
    const text = await res.text();
    assertEquals(res.status, 201, text);
    const body = JSON.parse(text);
    assertEquals(body.success, true);
    assertEquals(body.experiment_id, "exp-1");
    assertEquals(body.size_mb, VALID.length / 1048576);
    assertEquals(typeof body.message, "string");
    assertEquals(body.sha256, await sha256(VALID));
    assertEquals(await server.stored(server.orgId, "exp-1"), VALID);
    // A path without the trailing slash is served the same.
    const again = await fetch(`${server.api}/datasets/upload?experiment_id=exp-2`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.apiKey}` },
      body: VALID,
    });
    assertEquals(again.status, 201);
    await again.body?.cancel();
  },
);

driverTestWithRgw(
  "direct upload replaces the previous file of the same experiment",
  async (server) => {
    assertEquals((await upload(server, "exp", VALID)).status, 201);
    const second = encoder.encode("user_id;variant;date;m\nx;A;2026-02-01;1,5\n");
    const res = await upload(server, "exp", second);
    assertEquals(res.status, 201, await res.text());
    assertEquals(await server.stored(server.orgId, "exp"), second);
  },
);

driverTestWithRgw("direct upload streams a chunked multi-megabyte body", async (server) => {
  const rows: string[] = ["user_id,variant,date,converted,revenue"];
  for (let i = 0; i < 200_000; i++) {
    rows.push(
      `user${i},${i % 2 ? "B" : "A"},2026-01-0${1 + (i % 9)},${i % 3 === 0 ? 1 : 0},${i % 7}.5`,
    );
  }
  const bytes = encoder.encode(rows.join("\n") + "\n");
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += 100_003) chunks.push(bytes.subarray(i, i + 100_003));
  const res = await upload(server, "big", ReadableStream.from(chunks));
  assertEquals(res.status, 201, await res.text());
  assertEquals(await server.stored(server.orgId, "big"), bytes);
});

const REJECTIONS: [string, Uint8Array<ArrayBuffer>, number, string][] = [
  ["a ZIP archive", new Uint8Array([0x50, 0x4b, 0x03, 0x04, 1, 2, 3]), 400, "archive_detected"],
  ["a GZIP archive", new Uint8Array([0x1f, 0x8b, 8, 0, 0, 0]), 400, "archive_detected"],
  ["a RAR archive", encoder.encode("Rar!\x1a\x07\x01\x00rest"), 400, "archive_detected"],
  [
    "a 7z archive",
    new Uint8Array([0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c, 0, 4]),
    400,
    "archive_detected",
  ],
  [
    "invalid UTF-8",
    new Uint8Array([...encoder.encode("user_id,variant,date,m\nu,A,2026-01-01,"), 0xff, 0x0a]),
    400,
    "invalid_utf8",
  ],
  [
    "a NUL byte",
    encoder.encode("user_id,variant,date,m\nu\0,A,2026-01-01,1\n"),
    400,
    "binary_content",
  ],
  [
    "a tab-separated file",
    encoder.encode("user_id\tvariant\tdate\tm\nu\tA\t2026-01-01\t1\n"),
    400,
    "invalid_csv",
  ],
  ["a short row", encoder.encode("user_id,variant,date,m\nu,A,2026-01-01\n"), 400, "invalid_csv"],
  [
    "missing columns",
    encoder.encode("user,variant,date,m\nu,A,2026-01-01,1\n"),
    400,
    "missing_columns",
  ],
  ["a bad date", encoder.encode("user_id,variant,date,m\nu,A,2026-13-45,1\n"), 400, "invalid_date"],
  [
    "no metric column",
    encoder.encode("user_id,variant,date,country\nu,A,2026-01-01,DE\n"),
    400,
    "no_metric_column",
  ],
  ["a header only", encoder.encode("user_id,variant,date,m\n"), 400, "no_data_rows"],
  ["an empty body", new Uint8Array(), 400, "no_data_rows"],
];

for (const [what, bytes, status, code] of REJECTIONS) {
  driverTest(
    `direct upload refuses ${what} with ${status} ${code} and keeps the previous file`,
    async (server) => {
      assertEquals((await upload(server, "keep", VALID)).status, 201);
      const error = await assertApiError(await upload(server, "keep", bytes), status, code);
      assert(error.message.length > 10);
      assertEquals(await server.stored(server.orgId, "keep"), VALID);
      // Nothing is stored for an experiment whose first delivery was refused.
      await assertApiError(await upload(server, "never", bytes), status, code);
      assertEquals(await server.stored(server.orgId, "never"), null);
    },
  );
}

driverTest("direct upload names the first offending line", async (server) => {
  const body = encoder.encode("user_id,variant,date,m\nu1,A,2026-01-01,1\n\nu2,B,2026-02-30,0\n");
  const error = await assertApiError(await upload(server, "lines", body), 400, "invalid_date");
  assert(error.message.includes("line 4"), error.message);
});

driverTest(
  "direct upload answers 413 for a declared length over the limit without reading the body",
  async (server) => {
    assertEquals((await upload(server, "keep", VALID)).status, 201);
    const big = new Uint8Array(2048).fill(0x41);
    const res = await upload(server, "keep", big);
    const error = await assertApiError(res, 413, "payload_too_large");
    // The limit in bytes and in MB, a small one with its significant digits rather than "0".
    assert(error.message.includes("limit of 1024 bytes (0.00098 MB)"), error.message);
    assertEquals(await server.stored(server.orgId, "keep"), VALID);
  },
  { ABN_MAX_UPLOAD_BYTES: "1024" },
);

driverTest("direct upload counts a chunked body and refuses it at the limit", async (server) => {
  assertEquals((await upload(server, "keep", VALID)).status, 201);
  const line = encoder.encode("u1,A,2026-01-01,1,2\n");
  const head = encoder.encode("user_id,variant,date,converted,revenue\n");
  const chunks = [head, ...Array.from({ length: 60 }, () => line)]; // 39 + 60 * 20 = 1239 bytes
  const res = await upload(server, "keep", ReadableStream.from(chunks));
  await assertApiError(res, 413, "payload_too_large");
  assertEquals(await server.stored(server.orgId, "keep"), VALID);
  // Exactly at the limit is accepted.
  const exact = new Uint8Array(1024);
  exact.set(head);
  let offset = head.length;
  while (offset + line.length <= 1024) {
    exact.set(line, offset);
    offset += line.length;
  }
  const padded = exact.subarray(0, offset);
  const fill = new Uint8Array(1024 - offset).fill(0x0a); // blank lines are ignored
  const atLimit = new Uint8Array([...padded, ...fill]);
  assertEquals(atLimit.length, 1024);
  const ok = await upload(server, "exact", ReadableStream.from([atLimit]));
  assertEquals(ok.status, 201, await ok.text());
}, { ABN_MAX_UPLOAD_BYTES: "1024" });

driverTest(
  "direct upload refuses multipart/form-data telling to send raw bytes",
  async (server) => {
    const form = new FormData();
    form.append("file", new Blob([VALID]), "data.csv");
    const res = await fetch(`${server.api}/datasets/upload/?experiment_id=m`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.apiKey}` },
      body: form,
    });
    const error = await assertApiError(res, 400, "multipart_not_supported");
    assert(/raw/i.test(error.message));
  },
);

driverTest("direct upload checks auth, then the experiment_id", async (server) => {
  await assertApiError(await upload(server, "bad id", VALID, {}, "nope"), 401, "unauthorized");
  for (const id of ["bad id", "a/b", "эксперимент", "x".repeat(129), "..", "a%2Fb"]) {
    await assertApiError(await upload(server, id, VALID), 400, "invalid_experiment_id");
  }
  assertEquals((await upload(server, "x".repeat(128), VALID)).status, 201);
  const none = await fetch(`${server.api}/datasets/upload/`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.apiKey}` },
    body: VALID,
  });
  await assertApiError(none, 400, "invalid_experiment_id");
  const twice = await fetch(`${server.api}/datasets/upload/?experiment_id=a&experiment_id=b`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.apiKey}` },
    body: VALID,
  });
  await assertApiError(twice, 400, "invalid_experiment_id");
});

driverTest("direct upload keeps organizations apart", async (server) => {
  const other = await server.newOrg("other");
  assertEquals((await upload(server, "same", VALID)).status, 201);
  const theirs = encoder.encode("user_id,variant,date,m\nz,A,2026-01-01,1\n");
  assertEquals((await upload(server, "same", theirs, {}, other.apiKey)).status, 201);
  assertEquals(await server.stored(server.orgId, "same"), VALID);
  assertEquals(await server.stored(other.orgId, "same"), theirs);
});

function bigCsv(rows: number, badLine?: number): Uint8Array<ArrayBuffer> {
  const lines = ["user_id,variant,date,converted,revenue"];
  for (let i = 2; i <= rows + 1; i++) {
    lines.push(
      i === badLine
        ? `u${i},A,2026-02-30,1,2.5`
        : `user-${i},${i % 2 ? "B" : "A"},2026-01-${String(1 + (i % 28)).padStart(2, "0")},${
          i % 5 === 0 ? 1 : 0
        },${i % 13}.25`,
    );
  }
  return encoder.encode(lines.join("\n") + "\n");
}

/**
 * A large upload refused early (line 3), at one of its last lines, and by an archive signature:
 * each answers 400 naming the cause, and `good`, stored before, stays as it was.
 */
async function refusalsKeepStored(
  server: DriverServer,
  id: string,
  good: Uint8Array<ArrayBuffer>,
  rows: number,
  lateLine: number,
): Promise<void> {
  for (const badLine of [3, lateLine]) {
    const bad = bigCsv(rows, badLine);
    const error = await assertApiError(await upload(server, id, bad), 400, "invalid_date");
    assert(error.message.includes(`line ${badLine}`), error.message);
    assertEquals(await server.stored(server.orgId, id), good);
  }
  const zip = new Uint8Array(good);
  zip.set([0x50, 0x4b, 0x03, 0x04]);
  await assertApiError(await upload(server, id, zip), 400, "archive_detected");
  assertEquals(await server.stored(server.orgId, id), good);
}

driverTestWithRgw(
  "a large declared-length upload is stored whole, or refused with the line",
  async (server) => {
    const good = bigCsv(400_000); // ~16 MB: above the off-thread threshold
    assert(good.length > 8 * 1024 * 1024);
    const res = await upload(server, "large", good);
    const body = await res.json();
    assertEquals(res.status, 201, JSON.stringify(body));
    assertEquals(body.rows, 400_000);
    assertEquals(body.sha256, await sha256(good));
    assertEquals((await server.stored(server.orgId, "large"))?.length, good.length);
    await refusalsKeepStored(server, "large", good, 400_000, 399_000);
  },
);

Deno.test("large local uploads, alone and three at once, are stored whole or refused; their lines time the steps", async () => {
  const lines: string[] = [];
  const server = await startDriverServer("local", {}, { log: (line) => lines.push(line) });
  try {
    const good = bigCsv(1_100_000); // ~37 MB
    const res = await upload(server, "huge", good);
    const body = await res.json();
    assertEquals(res.status, 201, JSON.stringify(body));
    assertEquals(body.rows, 1_100_000);
    assertEquals(body.size_bytes, good.length);
    assertEquals(body.sha256, await sha256(good));
    assertEquals(await server.stored(server.orgId, "huge"), good);
    // Refused early, refused at the last lines, refused by its signature: nothing changes.
    await refusalsKeepStored(server, "huge", good, 1_100_000, 1_099_990);
    // Three at once, each with a distinct first user.
    const bodies = [0, 1, 2].map((i) => {
      const copy = new Uint8Array(good);
      copy.set(encoder.encode(`user-${i}`), good.indexOf(0x0a) + 1);
      return copy;
    });
    const answers = await Promise.all(bodies.map((b, i) => upload(server, `huge${i}`, b)));
    for (const [i, answer] of answers.entries()) {
      const json = await answer.json();
      assertEquals(answer.status, 201, JSON.stringify(json));
      assertEquals(json.sha256, await sha256(bodies[i]));
      assertEquals(await server.stored(server.orgId, `huge${i}`), bodies[i]);
    }
    assertEquals([...Deno.readDirSync(`${server.dataDir}/tmp`)], []);
    const small = await upload(server, "small", VALID);
    assertEquals(small.status, 201, await small.text());
    // Each stored upload's line counts its bytes and times its steps, within its whole.
    const logged = lines.map((l) => JSON.parse(l)).filter((l) =>
      l.path === "/api/v1/datasets/upload/"
    );
    const stored = logged.filter((l) => l.status === 201);
    assertEquals(stored.map((l) => l.bytes_in), [
      good.length,
      good.length,
      good.length,
      good.length,
      VALID.length,
    ]);
    for (const line of stored) {
      const steps = [line.receive_ms, line.commit_ms, line.record_ms];
      assert(steps.every((ms) => typeof ms === "number" && ms >= 0), JSON.stringify(line));
      const sum = steps.reduce((a, b) => a + b, 0);
      assert(sum <= line.duration_ms + 0.5, JSON.stringify(line));
      if (line.bytes_in > 1e6) assert(line.receive_ms > 0, JSON.stringify(line));
    }
    // A refused upload's line has no step times.
    const refused = logged.filter((l) => l.status === 400);
    assertEquals(refused.length, 3);
    for (const line of refused) assertEquals(line.commit_ms, undefined, JSON.stringify(line));
  } finally {
    await server.close();
  }
});

driverTest(
  "the answer to a large upload asks the client to close the connection; a small one keeps it",
  async (server) => {
    const port = Number(new URL(server.url).port);
    const post = (length: number) =>
      `POST /api/v1/datasets/upload/?experiment_id=conn HTTP/1.1\r\nHost: x\r\n` +
      `Authorization: Bearer ${server.apiKey}\r\nContent-Length: ${length}\r\n\r\n`;
    const send = (head: string, body: Uint8Array) => async (conn: Deno.TcpConn) => {
      await writeAll(conn, encoder.encode(head));
      await writeAll(conn, body);
    };
    const small = await Deno.connect({ hostname: "127.0.0.1", port });
    try {
      const answer = await exchangeOn(small, send(post(VALID.length), VALID));
      assert(answer.head.startsWith("HTTP/1.1 201"), answer.head);
      assert(!/\r\nconnection: *close/i.test(answer.head), answer.head);
      // The same connection serves the next request.
      const health = await exchangeOn(small, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
      assert(health.head.startsWith("HTTP/1.1 200"), health.head);
    } finally {
      small.close();
    }
    const lines = ["user_id,variant,date,m"];
    for (let i = 0; lines.length < 60_000; i++) lines.push(`u${i},${"AB"[i % 2]},2026-01-01,${i}`);
    const large = encoder.encode(lines.join("\n") + "\n");
    assert(large.length > 1024 * 1024);
    const answer = await rawExchange(port, send(post(large.length), large));
    assert(answer.head.startsWith("HTTP/1.1 201"), answer.head);
    assert(/\r\nconnection: *close/i.test(answer.head), answer.head);
    assertEquals(JSON.parse(answer.body).rows, 59_999);
  },
);

// ---------------------------------------------------------------------------------------------
// Uploads slower than the loopback (a client on a real network): each is analysed once, after it
// is stored, to the figures of the same bytes delivered in two steps.

/**
 * ~37 MB: 1,100,000 rows of 400,000 users, each seen on several days, a few in both variants;
 * `badLine` holds an impossible date.
 */
function usersCsv(badLine?: number): Uint8Array<ArrayBuffer> {
  const lines = ["user_id,variant,date,converted,revenue"];
  for (let i = 2; i <= 1_100_001; i++) {
    const user = (i * 7919) % 400_000;
    const variant = user % 1000 === 7 ? (i % 2 ? "B" : "A") : user % 2 ? "B" : "A";
    const day = String(1 + (i % 28)).padStart(2, "0");
    lines.push(
      i === badLine
        ? `u${user},A,2026-02-30,1,2.5`
        : `user-${user},${variant},2026-02-${day},${i % 11 === 0 ? 1 : 0},${i % 13}.25`,
    );
  }
  return encoder.encode(lines.join("\n") + "\n");
}

Deno.test("a large upload sent slowly is analysed once, to the figures of the same bytes sent in two steps", async () => {
  await withRuns(async (server, runs) => {
    const body = usersCsv();
    // About 25 MB/s: 1.5 s on the way.
    const { status, json } = await pacedUpload(server.url, server.apiKey, "slow", body, 25e6);
    assertEquals(status, 201, JSON.stringify(json));
    const slow = await settled(server, "slow");
    assertEquals(slow.status, "ready", JSON.stringify(slow.error));
    assertEquals((slow.dataset as { etag: string }).etag, json.etag);
    const own = runs().filter((line) => line.experiment_id === "slow");
    assertEquals(own.map((line) => line.etag), [json.etag]);
    await deliverTwoStep(server, "stored", body);
    const stored = await settled(server, "stored");
    assertEquals(stored.status, "ready", JSON.stringify(stored.error));
    assertEquals(figures(slow), figures(stored));
  });
});

Deno.test("a slow upload refused at its last lines leaves the stored dataset and its analysis", async () => {
  await withRuns(async (server, runs) => {
    const small = encoder.encode(
      "user_id,variant,date,converted\nu1,A,2026-02-01,1\nu2,B,2026-02-01,0\n",
    );
    const first = await upload(server, "kept", small);
    const stored = await first.json();
    assertEquals(first.status, 201);
    const before = await settled(server, "kept");
    const bad = usersCsv(1_099_990);
    const { status, json } = await pacedUpload(server.url, server.apiKey, "kept", bad, 25e6);
    assertEquals(status, 400, JSON.stringify(json));
    assertEquals((json.error as { code: string }).code, "invalid_date");
    await new Promise((resolve) => setTimeout(resolve, 300));
    const after = await analysisOf(server, "kept");
    assertEquals((after.dataset as { etag: string }).etag, stored.etag);
    assertEquals(after, before);
    assertEquals(runs().filter((l) => l.experiment_id === "kept").length, 1);
    assertEquals([...Deno.readDirSync(`${server.dataDir}/tmp`)], []);
  });
});

Deno.test("settings saved while a large upload streams apply to its analysis", async () => {
  await withRuns(async (server, runs) => {
    const sent = pacedUpload(server.url, server.apiKey, "resettled", usersCsv(), 25e6);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const put = await fetch(`${server.api}/datasets/resettled/settings/`, {
      method: "PUT",
      headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ key_metric: "revenue", winsorize: { revenue: 0.9 } }),
    });
    assertEquals(put.status, 200, await put.text());
    const { status, json } = await sent;
    assertEquals(status, 201, JSON.stringify(json));
    const analysis = await settled(server, "resettled");
    assertEquals(analysis.status, "ready", JSON.stringify(analysis.error));
    assertEquals(analysis.key_metric, "revenue");
    assertEquals(runs().filter((line) => line.etag === json.etag).length, 1);
  });
});
