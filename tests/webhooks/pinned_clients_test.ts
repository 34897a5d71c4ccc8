/**
 * Kept clients: one per checked address and port, reused between attempts (the connection is
 * kept alive), closed once idle.
 */
import { assert, assertEquals } from "../_assert.ts";
import { PinnedClients } from "../../src/webhooks/pinned_clients.ts";
import { attemptDelivery } from "../../src/webhooks/attempt.ts";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

Deno.test("PinnedClients keeps one client per address and port, and closes idle ones", () => {
  const clients = new PinnedClients({ idleMs: 60_000, max: 2 });
  const a = clients.take("127.0.0.1", 80);
  assertEquals(clients.take("127.0.0.1", 80), a);
  assert(clients.take("127.0.0.1", 81) !== a);
  clients.release("127.0.0.1", 80);
  clients.release("127.0.0.1", 80);
  clients.release("127.0.0.1", 81);
  // A third address while two are kept: the longest idle is closed.
  clients.take("127.0.0.2", 80);
  assertEquals(clients.size, 2);
  assert(clients.take("127.0.0.1", 80) !== a, "the first was closed and made anew");
  clients.close();
  assertEquals(clients.size, 0);
});

Deno.test("attempts through PinnedClients reuse one connection to the checked address", async () => {
  const ports: number[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (req, info) => {
      await req.text();
      ports.push(info.remoteAddr.port);
      return new Response(null, { status: 204 });
    },
  );
  const clients = new PinnedClients();
  try {
    for (let i = 0; i < 3; i++) {
      const outcome = await attemptDelivery(
        {
          url: `http://127.0.0.1:${server.addr.port}/`,
          id: `evt_${i}`,
          body: "{}",
          secrets: [SECRET],
        },
        { allowPrivate: true, clients },
      );
      assertEquals(outcome, { kind: "delivered", status: 204 });
    }
    assertEquals(ports.length, 3);
    assertEquals(new Set(ports).size, 1, "one connection, kept alive");
    assertEquals(clients.size, 1);
  } finally {
    clients.close();
    await server.shutdown();
  }
});
