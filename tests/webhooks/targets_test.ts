import { assert, assertEquals, assertRejects, assertThrows } from "../_assert.ts";
import { ServiceError } from "../../src/errors.ts";
import { ERROR_STATUS } from "../../src/http/errors.ts";
import { type AddressKind, addressKind } from "../../src/webhooks/address_kind.ts";
import { checkWebhookUrl, resolveAllowed } from "../../src/webhooks/targets.ts";

const KINDS: [string, AddressKind][] = [
  // IPv4
  ["93.184.215.14", "public"],
  ["8.8.8.8", "public"],
  ["1.1.1.1", "public"],
  ["203.0.113.7", "public"],
  ["0.0.0.0", "unspecified"],
  ["0.1.2.3", "this_network"],
  ["10.0.0.1", "private"],
  ["10.255.255.255", "private"],
  ["172.15.255.255", "public"],
  ["172.16.0.1", "private"],
  ["172.31.255.254", "private"],
  ["172.32.0.1", "public"],
  ["192.168.1.1", "private"],
  ["192.169.0.1", "public"],
  ["100.63.255.255", "public"],
  ["100.64.0.1", "shared"],
  ["100.127.255.255", "shared"],
  ["100.128.0.1", "public"],
  ["127.0.0.1", "loopback"],
  ["127.255.0.9", "loopback"],
  ["169.254.169.254", "link_local"],
  ["169.253.1.1", "public"],
  ["192.0.0.170", "reserved"],
  ["198.18.0.1", "reserved"],
  ["224.0.0.1", "multicast"],
  ["239.255.255.250", "multicast"],
  ["240.0.0.1", "reserved"],
  ["255.255.255.255", "broadcast"],
  // IPv6
  ["2606:4700:4700::1111", "public"],
  ["2001:4860:4860::8888", "public"],
  ["::", "unspecified"],
  ["0:0:0:0:0:0:0:0", "unspecified"],
  ["::1", "loopback"],
  ["0:0:0:0:0:0:0:1", "loopback"],
  ["fc00::1", "private"],
  ["fd12:3456:789a::1", "private"],
  ["fe80::1", "link_local"],
  ["fe80::1%eth0", "link_local"],
  ["febf::1", "link_local"],
  ["fec0::1", "private"],
  ["ff02::1", "multicast"],
  ["::ffff:127.0.0.1", "loopback"],
  ["::ffff:7f00:1", "loopback"],
  ["::ffff:10.1.2.3", "private"],
  ["::ffff:169.254.169.254", "link_local"],
  ["::ffff:0.0.0.0", "unspecified"],
  ["::ffff:8.8.8.8", "public"],
  ["::127.0.0.1", "loopback"],
  ["64:ff9b::a9fe:a9fe", "link_local"],
  ["64:ff9b::808:808", "public"],
  ["64:ff9b:1::1", "private"],
  ["2002:c0a8:101::1", "private"],
  ["2002:808:808::1", "public"],
];

Deno.test("addressKind classifies every address of the table", () => {
  for (const [address, kind] of KINDS) assertEquals(addressKind(address), kind, address);
});

Deno.test("addressKind refuses what is not an IP address", () => {
  for (
    const text of [
      "",
      "localhost",
      "1.2.3",
      "1.2.3.4.5",
      "256.0.0.1",
      "01.2.3.4",
      "1::2::3",
      ":::",
      "[::1]",
      "12345::1",
      "1:2:3:4:5:6:7:8:9",
      "::ffff:1.2.3",
    ]
  ) {
    assertThrows(() => addressKind(text), TypeError, "not an IP address");
  }
});

function refusal(fn: () => unknown, includes: string): void {
  const error = assertThrows(fn, ServiceError, includes);
  assertEquals(error.code, "invalid_webhook_url");
  assertEquals(ERROR_STATUS[error.code], 400);
}

Deno.test("checkWebhookUrl accepts http and https URLs with a host", () => {
  assertEquals(
    checkWebhookUrl("https://hooks.example.com/abn?x=1").href,
    "https://hooks.example.com/abn?x=1",
  );
  assertEquals(checkWebhookUrl("http://203.0.113.7:8080/").port, "8080");
  assertEquals(checkWebhookUrl("http://[2001:db8::1]/in").hostname, "[2001:db8::1]");
});

Deno.test("checkWebhookUrl refuses other schemes, credentials, no host and long URLs", () => {
  refusal(() => checkWebhookUrl("ftp://hooks.example.com/"), "ftp is not http or https");
  refusal(() => checkWebhookUrl("file:///etc/passwd"), "file is not http or https");
  refusal(() => checkWebhookUrl("javascript:alert(1)"), "not http or https");
  refusal(() => checkWebhookUrl("hooks.example.com/in"), "not a URL");
  refusal(() => checkWebhookUrl(""), "http://");
  refusal(() => checkWebhookUrl(42), "http://");
  refusal(() => checkWebhookUrl("https://" + "a".repeat(2040) + ".com/"), "more than 2048");
  const withPassword = assertThrows(
    () => checkWebhookUrl("https://user:hunter2@hooks.example.com/"),
    ServiceError,
    "credentials",
  );
  assert(!withPassword.message.includes("hunter2"));
  refusal(() => checkWebhookUrl("https://user@hooks.example.com/"), "credentials");
});

function resolverOf(table: Record<string, string[]>) {
  const asked: string[] = [];
  const resolve = (name: string) => {
    asked.push(name);
    return Object.hasOwn(table, name)
      ? Promise.resolve(table[name])
      : Promise.reject(new Error(`no record for ${name}`));
  };
  return { resolve, asked };
}

Deno.test("resolveAllowed refuses loopback and private literals unless private targets are allowed", async () => {
  for (
    const raw of [
      "http://127.0.0.1:9/",
      "http://[::1]/",
      "http://10.1.2.3/",
      "http://0x7f.1/",
      "http://2130706433/",
      "http://[::ffff:127.0.0.1]/",
      "http://169.254.169.254/latest/meta-data/",
      "http://0.0.0.0/",
      "http://[fe80::1]/",
    ]
  ) {
    const url = checkWebhookUrl(raw);
    const error = await assertRejects(
      () => resolveAllowed(url),
      ServiceError,
      "Refused webhook URL",
    );
    assertEquals(error.code, "invalid_webhook_url", raw);
    const allowed = await resolveAllowed(url, { allowPrivate: true });
    assertEquals(allowed.length, 1, raw);
  }
  assertEquals(await resolveAllowed(checkWebhookUrl("http://203.0.113.7/")), ["203.0.113.7"]);
});

Deno.test("resolveAllowed refuses a name when any of its addresses is not public", async () => {
  const { resolve, asked } = resolverOf({
    "public.example": ["203.0.113.7", "2001:db8::7"],
    "mixed.example": ["203.0.113.7", "10.0.0.5"],
    "rebound.example": ["::ffff:192.168.0.10"],
    "empty.example": [],
  });
  assertEquals(await resolveAllowed(new URL("https://public.example/in"), { resolve }), [
    "203.0.113.7",
    "2001:db8::7",
  ]);
  const mixed = await assertRejects(
    () => resolveAllowed(new URL("https://mixed.example/in"), { resolve }),
    ServiceError,
    "mixed.example resolves to a private address",
  );
  // The message says what kind of address, not which one.
  assert(!mixed.message.includes("10.0.0.5"), mixed.message);
  await assertRejects(
    () => resolveAllowed(new URL("https://rebound.example/"), { resolve }),
    ServiceError,
    "private address",
  );
  assertEquals(
    await resolveAllowed(new URL("https://mixed.example/"), { resolve, allowPrivate: true }),
    ["203.0.113.7", "10.0.0.5"],
  );
  await assertRejects(
    () => resolveAllowed(new URL("https://empty.example/"), { resolve }),
    ServiceError,
    "has no address",
  );
  await assertRejects(
    () => resolveAllowed(new URL("https://unknown.example/"), { resolve }),
    ServiceError,
    "unknown.example does not resolve",
  );
  await assertRejects(
    () => resolveAllowed(new URL("http://localhost:8080/"), { resolve }),
    ServiceError,
    "loopback name",
  );
  await assertRejects(
    () => resolveAllowed(new URL("http://api.localhost/"), { resolve }),
    ServiceError,
    "loopback name",
  );
  assert(!asked.includes("localhost") && !asked.includes("api.localhost"));
});

Deno.test("resolveAllowed refuses a name whose answer is not an address", async () => {
  const resolve = () => Promise.resolve(["not-an-ip"]);
  await assertRejects(
    () => resolveAllowed(new URL("https://odd.example/"), { resolve }),
    ServiceError,
    "not an address",
  );
});

Deno.test("resolveAllowed stops when its signal aborts", async () => {
  const controller = new AbortController();
  const resolve = (_name: string, signal?: AbortSignal) =>
    new Promise<string[]>((_, reject) =>
      signal?.addEventListener("abort", () => reject(signal.reason))
    );
  const pending = resolveAllowed(new URL("https://slow.example/"), {
    resolve,
    signal: controller.signal,
  });
  controller.abort(new DOMException("stop", "TimeoutError"));
  await assertRejects(() => pending, DOMException, "stop");
});
