/**
 * The receiver examples of docs/webhooks (TypeScript, and Python when `python3` is installed):
 * each checks the Standard Webhooks published vector, then runs as its own process and is sent
 * real attempts.
 */
import { assert, assertEquals } from "../_assert.ts";
import { attemptDelivery, type AttemptOptions } from "../../src/webhooks/attempt.ts";
import { eventBody, newEventId } from "../../src/webhooks/events.ts";
import { newSecret } from "../../src/webhooks/signature.ts";
import { checkSignature, importSecret } from "../../docs/webhooks/receiver.ts";

const DOCS = new URL("../../docs/webhooks/", import.meta.url);
/** The vector of the Standard Webhooks repository (`libraries/go/webhook_test.go`). */
const VECTOR = {
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
  timestamp: "1614265330",
  body: '{"test": 2432232314}',
  signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};
const LOCAL: AttemptOptions = { allowPrivate: true, timeoutSeconds: 10 };

function hasPython(): boolean {
  try {
    return new Deno.Command("python3", { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}

Deno.test("the TypeScript receiver accepts the published vector and nothing else", async () => {
  const key = await importSecret(VECTOR.secret);
  const headers = (signature: string, timestamp = VECTOR.timestamp) =>
    new Headers({
      "webhook-id": VECTOR.id,
      "webhook-timestamp": timestamp,
      "webhook-signature": signature,
    });
  const body = new TextEncoder().encode(VECTOR.body);
  const at = Number(VECTOR.timestamp);
  assertEquals(await checkSignature(key, headers(VECTOR.signature), body, at), null);
  assertEquals(
    await checkSignature(key, headers(`v1a,abc= ${VECTOR.signature}`), body, at),
    null,
  );
  assertEquals(
    await checkSignature(key, headers(VECTOR.signature), body.subarray(1), at),
    "no valid signature",
  );
  assertEquals(
    await checkSignature(key, headers(VECTOR.signature), body, at + 301),
    "timestamp too old or too new",
  );
  assertEquals(
    await checkSignature(key, new Headers(), body, at),
    "missing webhook-id, -timestamp or -signature",
  );
});

Deno.test({
  name: "the Python receiver accepts the published vector and nothing else",
  ignore: !hasPython(),
  async fn() {
    const script = `
import json, sys
sys.path.insert(0, sys.argv[1])
from receiver import check_signature, secret_key
v = json.loads(sys.argv[2])
key = secret_key(v["secret"])
h = {"webhook-id": v["id"], "webhook-timestamp": v["timestamp"], "webhook-signature": v["signature"]}
at = int(v["timestamp"])
print(json.dumps([
  check_signature(key, h, v["body"].encode(), at),
  check_signature(key, h, v["body"].encode()[1:], at),
  check_signature(key, h, v["body"].encode(), at + 301),
  check_signature(key, {}, b"", at),
]))`;
    const output = await new Deno.Command("python3", {
      args: ["-c", script, DOCS.pathname, JSON.stringify(VECTOR)],
    }).output();
    assert(output.success, new TextDecoder().decode(output.stderr));
    assertEquals(JSON.parse(new TextDecoder().decode(output.stdout)), [
      null,
      "no valid signature",
      "timestamp too old or too new",
      "missing webhook-id, -timestamp or -signature",
    ]);
  },
});

interface Running {
  url: string;
  lines: string[];
  stop(): Promise<void>;
}

/** Starts an example with `secret`; answers once it printed where it listens. */
async function start(command: string, args: string[], secret: string): Promise<Running> {
  const child = new Deno.Command(command, {
    args,
    env: { WEBHOOK_SECRET: secret, HOST: "127.0.0.1", PORT: "0" },
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const lines: string[] = [];
  const reading = (async () => {
    let rest = "";
    for await (const text of child.stdout.pipeThrough(new TextDecoderStream())) {
      rest += text;
      const parts = rest.split("\n");
      rest = parts.pop()!;
      lines.push(...parts);
    }
  })();
  const stop = async () => {
    child.kill("SIGTERM");
    await child.status;
    await reading;
  };
  const started = Date.now();
  while (!lines.some((line) => line.startsWith("Listening on "))) {
    if (Date.now() - started > 20_000) {
      await stop();
      throw new Error(`${command} did not start: ${lines.join("\n")}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  const url = lines.find((line) => line.startsWith("Listening on "))!.slice("Listening on ".length);
  return { url, lines, stop };
}

/** Waits until `lines` holds `count` verified events. */
async function verifiedLines(lines: string[], count: number): Promise<Record<string, unknown>[]> {
  const started = Date.now();
  const verified = () => lines.filter((line) => line.startsWith('{"verified"'));
  while (verified().length < count && Date.now() - started < 5_000) {
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return verified().map((line) => JSON.parse(line));
}

async function exercise(example: Running, secret: string): Promise<void> {
  const url = `${example.url}hooks`;
  const body = eventBody("webhook.test", { organization_id: "org_1", experiment_id: null });
  const id = newEventId();

  assertEquals(await attemptDelivery({ url, id, body, secrets: [secret] }, LOCAL), {
    kind: "delivered",
    status: 204,
  });
  // During a rotation the receiver still holding the old secret accepts the new header.
  const rotatedId = newEventId();
  assertEquals(
    (await attemptDelivery({ url, id: rotatedId, body, secrets: [newSecret(), secret] }, LOCAL))
      .kind,
    "delivered",
  );
  // The same event again is answered but not handled twice.
  assertEquals(
    (await attemptDelivery({ url, id, body, secrets: [secret] }, LOCAL)).kind,
    "delivered",
  );

  const wrong = await attemptDelivery(
    { url, id: newEventId(), body, secrets: [newSecret()] },
    LOCAL,
  );
  assertEquals([wrong.kind, wrong.kind === "failed" && wrong.status], ["failed", 401]);
  const stale = await attemptDelivery({ url, id: newEventId(), body, secrets: [secret] }, {
    ...LOCAL,
    now: () => Date.now() - 10 * 60_000,
  });
  assertEquals([stale.kind, stale.kind === "failed" && stale.status], ["failed", 401]);
  const unsigned = await fetch(url, { method: "POST", body });
  await unsigned.body?.cancel();
  assertEquals(unsigned.status, 400);

  const verified = await verifiedLines(example.lines, 2);
  assertEquals(verified.map((line) => line.verified), [id, rotatedId]);
  assertEquals(verified[0].type, "webhook.test");
  assertEquals(verified[0].data, { organization_id: "org_1", experiment_id: null, links: {} });
}

Deno.test("the TypeScript receiver verifies real attempts", async () => {
  const secret = newSecret();
  const example = await start(
    Deno.execPath(),
    ["run", "--allow-net", "--allow-env", new URL("receiver.ts", DOCS).pathname],
    secret,
  );
  try {
    await exercise(example, secret);
  } finally {
    await example.stop();
  }
});

Deno.test({
  name: "the Python receiver verifies real attempts",
  ignore: !hasPython(),
  async fn() {
    const secret = newSecret();
    const example = await start("python3", [new URL("receiver.py", DOCS).pathname], secret);
    try {
      await exercise(example, secret);
    } finally {
      await example.stop();
    }
  },
});
