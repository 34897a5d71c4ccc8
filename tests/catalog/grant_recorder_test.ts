import { assertEquals } from "../_assert.ts";
import { GrantRecorder } from "../../src/catalog/grant_recorder.ts";
import type { ControlPlane, Grant } from "../../src/db/control_plane.ts";
import { DatabaseUnavailable } from "../../src/db/control_plane.ts";
import { createLogger } from "../../src/log.ts";

function fakeDb(fail = false) {
  const writes: Grant[][] = [];
  const db = {
    grants: {
      put(grants: readonly Grant[]) {
        if (fail) return Promise.reject(new DatabaseUnavailable("busy"));
        writes.push([...grants]);
        return Promise.resolve();
      },
    },
  } as unknown as ControlPlane;
  return { db, writes };
}

const grant = (key: string, expires: string, keyId: string | null = null): Grant => ({
  key,
  org_id: "o",
  experiment_id: key,
  expires_at: expires,
  key_id: keyId,
});

/** `record`'s arguments for a grant. */
const args = (g: Grant) =>
  [g.key, g.org_id, g.experiment_id, Date.parse(g.expires_at), g.key_id ?? undefined] as const;

Deno.test("GrantRecorder writes the grants of one window together, one per key with its latest expiry", async () => {
  const { db, writes } = fakeDb();
  const recorder = new GrantRecorder({ db, log: createLogger({ sink: () => {} }), delayMs: 20 });
  recorder.record(...args(grant("a", "2026-01-01T00:00:02.000Z", "key_first")));
  recorder.record(...args(grant("b", "2026-01-01T00:00:01.000Z")));
  recorder.record(...args(grant("a", "2026-01-01T00:00:03.000Z", "key_latest")));
  recorder.record(...args(grant("a", "2026-01-01T00:00:01.000Z", "key_older")));
  assertEquals(writes, []);
  await new Promise((r) => setTimeout(r, 60));
  // The key that asked for the latest grant is the one kept.
  assertEquals(writes, [[
    grant("a", "2026-01-01T00:00:03.000Z", "key_latest"),
    grant("b", "2026-01-01T00:00:01.000Z"),
  ]]);
  recorder.record(...args(grant("c", "2026-01-01T00:00:04.000Z")));
  await recorder.flush(); // at once, without the timer
  assertEquals(writes.length, 2);
  await recorder.flush();
  assertEquals(writes.length, 2);
});

Deno.test("GrantRecorder logs a failed write and never throws", async () => {
  const { db } = fakeDb(true);
  const lines: string[] = [];
  const recorder = new GrantRecorder({ db, log: createLogger({ sink: (l) => lines.push(l) }) });
  recorder.record(...args(grant("a", "2026-01-01T00:00:02.000Z")));
  await recorder.flush();
  assertEquals(lines.length, 1);
  assertEquals(JSON.parse(lines[0]).level, "warn");
});
