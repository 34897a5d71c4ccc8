import { Webhook } from "standardwebhooks";
import { assert, assertEquals, assertMatch } from "../_assert.ts";
import {
  attemptDelivery,
  type AttemptOptions,
  MAX_RESPONSE_BYTES,
  retryAfterSeconds,
  USER_AGENT,
  type WebhookMessage,
} from "../../src/webhooks/attempt.ts";
import { newSecret } from "../../src/webhooks/signature.ts";
import { pause, type Receiver, startReceiver } from "./_receiver.ts";

const SECRET = newSecret();
const BODY = JSON.stringify({
  type: "webhook.test",
  timestamp: "2026-12-01T02:00:00.000Z",
  data: { organization_id: "org_1", experiment_id: null },
});

/** Private targets are allowed: the receiver listens on 127.0.0.1. */
const LOCAL: AttemptOptions = { allowPrivate: true, timeoutSeconds: 5 };

function message(url: string, secrets: string[] = [SECRET]): WebhookMessage {
  return { url, id: "evt_01jattempt", body: BODY, secrets };
}

/** Runs `fn` against a receiver answering `routes`, closing it afterwards. */
async function withReceiver(
  routes: Parameters<typeof startReceiver>[1],
  fn: (receiver: Receiver) => Promise<void>,
): Promise<void> {
  const receiver = startReceiver(SECRET, routes);
  try {
    await fn(receiver);
  } finally {
    await receiver.close();
  }
}

Deno.test("attemptDelivery posts the signed JSON body that standardwebhooks verifies", async () => {
  await withReceiver({}, async (receiver) => {
    const before = Math.floor(Date.now() / 1000);
    const outcome = await attemptDelivery(message(receiver.url("/in")), LOCAL);
    assertEquals(outcome, { kind: "delivered", status: 200 });
    assertEquals(receiver.requests.length, 1);
    const [request] = receiver.requests;
    assert(request.verified, request.verifyError);
    assertEquals(request.body, BODY);
    assertEquals(request.headers["content-type"], "application/json");
    assertEquals(request.headers["user-agent"], USER_AGENT);
    assertEquals(request.headers["webhook-id"], "evt_01jattempt");
    const timestamp = Number(request.headers["webhook-timestamp"]);
    assert(timestamp >= before && timestamp <= before + 5, String(timestamp));
    assertMatch(request.headers["webhook-signature"], /^v1,[A-Za-z0-9+/]{43}=$/);
  });
});

Deno.test("attemptDelivery signs with both secrets during a rotation, each verified", async () => {
  const next = newSecret();
  await withReceiver({}, async (receiver) => {
    const outcome = await attemptDelivery(message(receiver.url("/in"), [next, SECRET]), LOCAL);
    assertEquals(outcome.kind, "delivered");
    const [request] = receiver.requests;
    // The receiver holds the old secret: the second signature is its.
    assert(request.verified, request.verifyError);
    assertEquals(request.headers["webhook-signature"].split(" ").length, 2);
    assertEquals(
      new Webhook(next).verify(request.body, request.headers),
      JSON.parse(BODY),
    );
  });
});

Deno.test("attemptDelivery stamps each attempt with its own time and keeps the id", async () => {
  await withReceiver({}, async (receiver) => {
    const first = Date.now();
    await attemptDelivery(message(receiver.url("/in")), { ...LOCAL, now: () => first });
    await attemptDelivery(message(receiver.url("/in")), { ...LOCAL, now: () => first + 5_000 });
    const [a, b] = receiver.requests;
    assertEquals(
      Number(b.headers["webhook-timestamp"]) - Number(a.headers["webhook-timestamp"]),
      5,
    );
    assertEquals(a.headers["webhook-id"], b.headers["webhook-id"]);
    assert(a.headers["webhook-signature"] !== b.headers["webhook-signature"]);
    assert(a.verified && b.verified);
  });
});

Deno.test("attemptDelivery answers each status with its outcome", async () => {
  const inOneMinute = new Date(Date.now() + 90_000).toUTCString();
  await withReceiver({
    "/no-content": () => new Response(null, { status: 204 }),
    "/accepted": () => new Response("queued", { status: 202 }),
    "/gone": () => new Response("endpoint removed", { status: 410 }),
    "/limited": () => new Response("slow down", { status: 429, headers: { "retry-after": "120" } }),
    "/limited-long": () =>
      new Response(null, { status: 429, headers: { "retry-after": "999999" } }),
    "/unavailable": () =>
      new Response("maintenance", { status: 503, headers: { "retry-after": inOneMinute } }),
    "/unavailable-bare": () => new Response(null, { status: 503 }),
    "/error": () => new Response("database\n is   down", { status: 500 }),
    "/not-found": () => new Response("no such hook", { status: 404 }),
  }, async (receiver) => {
    const attempt = (path: string) => attemptDelivery(message(receiver.url(path)), LOCAL);
    assertEquals(await attempt("/no-content"), { kind: "delivered", status: 204 });
    assertEquals(await attempt("/accepted"), { kind: "delivered", status: 202 });
    assertEquals(await attempt("/gone"), {
      kind: "gone",
      status: 410,
      error: "The endpoint answered 410 Gone: endpoint removed",
    });
    assertEquals(await attempt("/limited"), {
      kind: "retry",
      status: 429,
      retryAfterSeconds: 120,
      error: "The endpoint answered 429 Too Many Requests: slow down",
    });
    const capped = await attempt("/limited-long");
    assertEquals(capped.kind === "retry" && capped.retryAfterSeconds, 36_000);
    const unavailable = await attempt("/unavailable");
    assert(unavailable.kind === "retry" && unavailable.status === 503);
    assert(
      unavailable.retryAfterSeconds !== undefined && unavailable.retryAfterSeconds >= 85 &&
        unavailable.retryAfterSeconds <= 91,
      String(unavailable.retryAfterSeconds),
    );
    assertEquals(await attempt("/unavailable-bare"), {
      kind: "retry",
      status: 503,
      error: "The endpoint answered 503 Service Unavailable",
    });
    assertEquals(await attempt("/error"), {
      kind: "failed",
      status: 500,
      error: "The endpoint answered 500 Internal Server Error: database is down",
    });
    assertEquals((await attempt("/not-found")).kind, "failed");
    // Every request the receiver heard carried a signature it verified.
    assertEquals(receiver.requests.length, 9);
    assert(receiver.requests.every((r) => r.verified));
  });
});

Deno.test("attemptDelivery never follows a redirect", async () => {
  const target = startReceiver(SECRET);
  try {
    await withReceiver({
      "/moved": () => Response.redirect(target.url("/elsewhere"), 302),
      "/permanent": () => Response.redirect(target.url("/elsewhere"), 308),
    }, async (receiver) => {
      const moved = await attemptDelivery(message(receiver.url("/moved")), LOCAL);
      assertEquals(moved.kind, "failed");
      assertEquals(moved.kind === "failed" && moved.status, 302);
      assertMatch(moved.kind === "failed" ? moved.error : "", /redirect.*not followed/);
      const permanent = await attemptDelivery(message(receiver.url("/permanent")), LOCAL);
      assertEquals(permanent.kind === "failed" && permanent.status, 308);
      assertEquals(receiver.requests.length, 2);
    });
    // The redirect's target never hears a request.
    assertEquals(target.requests.length, 0);
  } finally {
    await target.close();
  }
});

Deno.test("attemptDelivery gives up on an endpoint slower than the timeout", async () => {
  await withReceiver({
    "/slow": async (request) => {
      await pause(5_000, request.signal);
      return new Response("late");
    },
  }, async (receiver) => {
    const started = performance.now();
    const outcome = await attemptDelivery(message(receiver.url("/slow")), {
      ...LOCAL,
      timeoutSeconds: 0.3,
    });
    const elapsed = performance.now() - started;
    assertEquals(outcome, { kind: "failed", error: "Timed out after 0.3 s" });
    assert(elapsed >= 290 && elapsed < 2_000, `${elapsed} ms`);
  });
});

Deno.test("attemptDelivery counts a slow name resolution in the timeout", async () => {
  const resolve = () => new Promise<string[]>(() => {});
  const started = performance.now();
  const outcome = await attemptDelivery(message("http://hooks.example.test/in"), {
    timeoutSeconds: 0.2,
    resolve,
  });
  assertEquals(outcome, { kind: "failed", error: "Timed out after 0.2 s" });
  assert(performance.now() - started < 2_000);
});

/** A body that never ends: `sent` counts the bytes handed to the server, `cancelled` its end. */
function endlessBody() {
  const state = { sent: 0, cancelled: false };
  const chunk = new Uint8Array(16_384).fill(0x61);
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      state.sent += chunk.length;
      controller.enqueue(chunk);
    },
    cancel() {
      state.cancelled = true;
    },
  });
  return { state, stream };
}

Deno.test("attemptDelivery reads at most 64 KiB of an endless body, then lets it go", async () => {
  const bodies: ReturnType<typeof endlessBody>["state"][] = [];
  await withReceiver({
    "/endless": () => {
      const { state, stream } = endlessBody();
      bodies.push(state);
      return new Response(stream, { status: 500 });
    },
    "/endless-ok": () => {
      const { state, stream } = endlessBody();
      bodies.push(state);
      return new Response(stream);
    },
  }, async (receiver) => {
    const started = performance.now();
    const failed = await attemptDelivery(message(receiver.url("/endless")), LOCAL);
    assertEquals(failed.kind, "failed");
    // The error quotes only the start of the body.
    assert(failed.kind === "failed" && failed.error.length <= 500, String(failed));
    assertEquals(await attemptDelivery(message(receiver.url("/endless-ok")), LOCAL), {
      kind: "delivered",
      status: 200,
    });
    // Both ended long before the 5 s timeout: the bodies were cancelled, not read to the end.
    assert(performance.now() - started < 3_000);
    await pause(200);
    for (const body of bodies) {
      assert(body.cancelled, "the body was not cancelled");
      // What the server managed to hand over is bounded by socket buffers, not the body.
      assert(body.sent < 64 * MAX_RESPONSE_BYTES, `${body.sent} bytes`);
    }
  });
});

Deno.test("attemptDelivery takes a 2xx whose body stalls as delivered, within the timeout", async () => {
  await withReceiver({
    "/stall": (request) => {
      const stream = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(new TextEncoder().encode("thanks"));
          await pause(5_000, request.signal);
        },
      });
      return new Response(stream);
    },
  }, async (receiver) => {
    const started = performance.now();
    const outcome = await attemptDelivery(message(receiver.url("/stall")), {
      ...LOCAL,
      timeoutSeconds: 0.3,
    });
    assertEquals(outcome, { kind: "delivered", status: 200 });
    assert(performance.now() - started < 2_000);
  });
});

Deno.test("attemptDelivery reports a closed port as a network error", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const outcome = await attemptDelivery(message(`http://127.0.0.1:${port}/in`), LOCAL);
  assertEquals(outcome.kind, "failed");
  assertMatch(
    outcome.kind === "failed" ? outcome.error : "",
    /^Network error: .*(refused|connect)/i,
  );
});

Deno.test("attemptDelivery refuses 127.0.0.1 unless private targets are allowed", async () => {
  await withReceiver({}, async (receiver) => {
    const refused = await attemptDelivery(message(receiver.url("/in")), { timeoutSeconds: 5 });
    assertEquals(refused.kind, "failed");
    assertMatch(
      refused.kind === "failed" ? refused.error : "",
      /^Refused webhook URL: 127\.0\.0\.1 is a loopback address/,
    );
    assertEquals(receiver.requests.length, 0);
    assertEquals((await attemptDelivery(message(receiver.url("/in")), LOCAL)).kind, "delivered");
  });
});

Deno.test("attemptDelivery refuses a name that resolves to a private address now", async () => {
  await withReceiver({}, async (receiver) => {
    // The name is not in any DNS: the injected resolver answers it, and the attempt connects to
    // the address it checked (the Host header still names the name).
    const url = `http://hooks.example.test:${receiver.port}/in`;
    const toLoopback = () => Promise.resolve(["127.0.0.1"]);
    const refused = await attemptDelivery(message(url), { resolve: toLoopback, timeoutSeconds: 5 });
    assertMatch(
      refused.kind === "failed" ? refused.error : "",
      /hooks\.example\.test resolves to a loopback address/,
    );
    assertEquals(receiver.requests.length, 0);
    const allowed = await attemptDelivery(message(url), {
      resolve: toLoopback,
      allowPrivate: true,
      timeoutSeconds: 5,
    });
    assertEquals(allowed, { kind: "delivered", status: 200 });
    assertEquals(receiver.requests[0].headers.host, `hooks.example.test:${receiver.port}`);
    assert(receiver.requests[0].verified);
  });
});

function canListenOnIpv6Loopback(): boolean {
  try {
    Deno.listen({ hostname: "::1", port: 0 }).close();
    return true;
  } catch {
    return false;
  }
}

Deno.test({
  name: "attemptDelivery connects to an IPv6 address it checked",
  ignore: !canListenOnIpv6Loopback(),
  async fn() {
    const heard: string[] = [];
    const server = Deno.serve({ hostname: "::1", port: 0, onListen() {} }, async (request) => {
      heard.push(`${request.headers.get("host")} ${await request.text()}`);
      return new Response(null, { status: 204 });
    });
    try {
      const url = `http://hooks6.example.test:${server.addr.port}/in`;
      const resolve = () => Promise.resolve(["::1"]);
      assertEquals(await attemptDelivery(message(url), { ...LOCAL, resolve }), {
        kind: "delivered",
        status: 204,
      });
      assertEquals(heard, [`hooks6.example.test:${server.addr.port} ${BODY}`]);
      const literal = await attemptDelivery(message(`http://[::1]:${server.addr.port}/in`), LOCAL);
      assertEquals(literal.kind, "delivered");
    } finally {
      await server.shutdown();
    }
  },
});

Deno.test("attemptDelivery checks the name again at each attempt", async () => {
  // Public when the endpoint was saved (and at the first attempt), private at the second.
  const answers = [["203.0.113.9"], ["10.0.0.7"]];
  const resolve = () => Promise.resolve(answers.shift() ?? []);
  const url = "http://rebinding.example.test/in";
  const first = await attemptDelivery(message(url), { resolve, timeoutSeconds: 0.3 });
  assert(first.kind === "failed" && !first.error.startsWith("Refused"), JSON.stringify(first));
  const second = await attemptDelivery(message(url), { resolve, timeoutSeconds: 0.3 });
  assertMatch(
    second.kind === "failed" ? second.error : "",
    /^Refused webhook URL: rebinding\.example\.test resolves to a private address/,
  );
});

Deno.test("attemptDelivery fails on a URL or secret it cannot use, without sending", async () => {
  await withReceiver({}, async (receiver) => {
    const ftp = await attemptDelivery(message("ftp://hooks.example.com/"), LOCAL);
    assertMatch(ftp.kind === "failed" ? ftp.error : "", /not http or https/);
    const badSecret = await attemptDelivery(message(receiver.url("/in"), ["whsec_short"]), LOCAL);
    assertMatch(
      badSecret.kind === "failed" ? badSecret.error : "",
      /^Cannot use the webhook secret/,
    );
    assertEquals(receiver.requests.length, 0);
  });
});

Deno.test("attemptDelivery stops when its signal aborts", async () => {
  await withReceiver({
    "/slow": async (request) => {
      await pause(5_000, request.signal);
      return new Response("late");
    },
  }, async (receiver) => {
    const controller = new AbortController();
    const pending = attemptDelivery(message(receiver.url("/slow")), {
      ...LOCAL,
      signal: controller.signal,
    });
    await pause(100);
    controller.abort();
    assertEquals(await pending, { kind: "failed", error: "Cancelled: the service is stopping" });
  });
});

Deno.test("retryAfterSeconds reads seconds and HTTP dates, capped", () => {
  const now = Date.parse("2026-12-01T02:00:00Z");
  assertEquals(retryAfterSeconds("120", now), 120);
  assertEquals(retryAfterSeconds(" 0 ", now), 0);
  assertEquals(retryAfterSeconds("99999999", now), 36_000);
  assertEquals(retryAfterSeconds("600", now, 300), 300);
  assertEquals(retryAfterSeconds("Tue, 01 Dec 2026 02:01:30 GMT", now), 90);
  assertEquals(retryAfterSeconds("Tuesday, 01-Dec-26 02:01:30 GMT", now), 90);
  assertEquals(retryAfterSeconds("Mon, 30 Nov 2026 02:00:00 GMT", now), 0);
  assertEquals(retryAfterSeconds(null, now), undefined);
  assertEquals(retryAfterSeconds("1.5", now), undefined);
  assertEquals(retryAfterSeconds("-5", now), undefined);
  assertEquals(retryAfterSeconds("soon", now), undefined);
});
