/**
 * JSON bodies (initiate, settings, storage events) are read through one capped, timed reader:
 * a chunked body is refused at the first byte past 16 KiB, a stalled one is timed out, and many
 * large bodies at once leave the service's memory flat.
 */
import { assert, assertEquals } from "../_assert.ts";
import { freePort, spawnServer } from "../_server.ts";
import { writeAll } from "../_faults.ts";

const TOKEN = "storage-events-token-0123456789";

const ROUTES = [
  ["POST", "/api/v1/datasets/initiate/"],
  ["PUT", "/api/v1/datasets/exp/settings/"],
  ["POST", "/api/v1/storage-events/"],
] as const;

function auth(path: string, key: string): string {
  return `Bearer ${path.includes("storage-events") ? TOKEN : key}`;
}

async function withServer(fn: (port: number, key: string) => Promise<void>): Promise<void> {
  const dataDir = await Deno.makeTempDir({ prefix: "abn-json-" });
  const port = freePort();
  const server = await spawnServer({
    ABN_DATA_DIR: dataDir,
    ABN_PORT: String(port),
    ABN_BODY_IDLE_TIMEOUT_SECONDS: "2",
    ABN_STORAGE_EVENTS_TOKEN: TOKEN,
  }, ["serve", "--dev"]);
  try {
    const key = (await Deno.readTextFile(`${dataDir}/dev-api-key`)).trim();
    await fn(port, key);
  } finally {
    await server.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
}

/** Collects what the server sends on `conn`; `text()` so far, `closed` once it closed. */
function listen(conn: Deno.Conn): { text(): string; closed(): boolean } {
  let text = "";
  let closed = false;
  (async () => {
    const buf = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const n = await conn.read(buf);
        if (n === null) break;
        text += new TextDecoder().decode(buf.subarray(0, n));
      }
    } catch { /* reset */ }
    closed = true;
  })();
  return { text: () => text, closed: () => closed };
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

function head(method: string, path: string, key: string): string {
  return `${method} ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: ${auth(path, key)}\r\n` +
    `content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n`;
}

function chunk(bytes: number): Uint8Array {
  const body = " ".repeat(bytes);
  return new TextEncoder().encode(`${bytes.toString(16)}\r\n${body}\r\n`);
}

Deno.test("a chunked 1 MiB JSON body is refused with 413 within its first 17 KiB", async () => {
  await withServer(async (port, key) => {
    for (const [method, path] of ROUTES) {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      try {
        const answers = listen(conn);
        await writeAll(conn, new TextEncoder().encode(head(method, path, key) + "1\r\n{\r\n"));
        let sent = 1;
        while (sent < 1024 * 1024 && answers.text() === "" && !answers.closed()) {
          await pause(20);
          await writeAll(conn, chunk(1024)).catch(() => {});
          sent += 1024;
        }
        while (!answers.text().includes("\r\n\r\n") && !answers.closed()) await pause(20);
        const answer = answers.text();
        assert(answer.startsWith("HTTP/1.1 413"), `${path}: ${answer.slice(0, 80)}`);
        assert(answer.includes('"code":"payload_too_large"'), answer);
        assert(sent <= 17 * 1024 + 1, `${path}: answered after ${sent} bytes`);
      } finally {
        conn.close();
      }
    }
  });
});

Deno.test("a stalled JSON body is answered 408 body_timeout within the idle timeout", async () => {
  await withServer(async (port, key) => {
    for (const [method, path] of ROUTES) {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      try {
        const answers = listen(conn);
        await writeAll(conn, new TextEncoder().encode(head(method, path, key) + "1\r\n{\r\n"));
        const started = performance.now();
        while (answers.text() === "" && !answers.closed() && performance.now() - started < 6000) {
          await pause(20);
        }
        const answer = answers.text();
        const took = performance.now() - started;
        assert(answer.startsWith("HTTP/1.1 408"), `${path}: ${answer.slice(0, 80)}`);
        assert(answer.includes('"code":"body_timeout"'), answer);
        assert(took >= 1500 && took < 4500, `${path}: answered after ${took} ms`);
      } finally {
        conn.close();
      }
    }
  });
});

/** Resident memory of the process listening on `port`'s server, from /proc (the child's pid). */
async function rssOf(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  return Number(/^VmRSS:\s+(\d+)\s+kB$/m.exec(status)![1]) * 1024;
}

Deno.test("forty 2 MiB JSON bodies at once leave the service's memory flat", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "abn-json-" });
  const port = freePort();
  const server = await spawnServer({ ABN_DATA_DIR: dataDir, ABN_PORT: String(port) }, [
    "serve",
    "--dev",
  ]);
  try {
    const key = (await Deno.readTextFile(`${dataDir}/dev-api-key`)).trim();
    const pid = server.process.pid;
    const before = await rssOf(pid);
    let peak = before;
    const sampler = setInterval(() => rssOf(pid).then((r) => peak = Math.max(peak, r)), 20);
    const statuses = await Promise.all(Array.from({ length: 40 }, async () => {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      try {
        const answers = listen(conn);
        await writeAll(conn, new TextEncoder().encode(head("POST", ROUTES[0][1], key)));
        const piece = chunk(64 * 1024);
        for (let sent = 0; sent < 2 * 1024 * 1024; sent += 64 * 1024) {
          const ok = await writeAll(conn, piece).then(() => true, () => false);
          if (!ok) break;
        }
        await writeAll(conn, new TextEncoder().encode("0\r\n\r\n")).catch(() => {});
        const deadline = Date.now() + 10_000;
        while (answers.text() === "" && !answers.closed() && Date.now() < deadline) await pause(20);
        return answers.text().slice(0, 12);
      } finally {
        conn.close();
      }
    }));
    clearInterval(sampler);
    const grew = peak - before;
    const mb = (grew / 1048576).toFixed(1);
    for (const status of statuses) assertEquals(status, "HTTP/1.1 413", `RSS grew by ${mb} MB`);
    assert(grew < 24 * 1024 * 1024, `RSS grew by ${mb} MB`);
  } finally {
    await server.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});
