import { assert, assertEquals } from "../_assert.ts";
import { auditEventId, AuditLog } from "../../src/audit/audit_log.ts";
import type { AuditEvent, ControlPlane } from "../../src/db/control_plane.ts";
import { DatabaseUnavailable } from "../../src/db/control_plane.ts";
import { createLogger } from "../../src/log.ts";

function fakeDb() {
  const writes: AuditEvent[][] = [];
  const state = { failing: false };
  const db = {
    audit: {
      record(events: readonly AuditEvent[]) {
        if (state.failing) return Promise.reject(new DatabaseUnavailable("busy"));
        writes.push([...events]);
        return Promise.resolve();
      },
    },
  } as unknown as ControlPlane;
  return { db, writes, state };
}

const quiet = createLogger({ sink: () => {} });

Deno.test("AuditLog writes the events of one window in one write, stamped and in order", async () => {
  const { db, writes } = fakeDb();
  const audit = new AuditLog({ db, log: quiet, delayMs: 20 });
  for (let i = 0; i < 100; i++) {
    audit.record({
      orgId: "org_a",
      action: "dataset.delivered",
      keyId: "key_x",
      experimentId: `e${i}`,
    });
  }
  assertEquals(writes, []);
  await new Promise((r) => setTimeout(r, 60));
  assertEquals(writes.length, 1);
  const batch = writes[0];
  assertEquals(batch.map((e) => e.experiment_id), Array.from({ length: 100 }, (_, i) => `e${i}`));
  assertEquals(batch[0].details, {});
  assert(/^evt_[0-9A-Za-z]{20}$/.test(batch[0].id), batch[0].id);
  // Ids sort as the events were made, and each carries its time.
  assertEquals([...batch.map((e) => e.id)].sort(), batch.map((e) => e.id));
  assert(batch.every((e) => Math.abs(Date.parse(e.at) - Date.now()) < 1000));
  const written = await audit.write({ orgId: "org_a", action: "key.revoked" });
  assertEquals(writes.length, 2);
  assertEquals(writes[1], [written]);
  assertEquals(written.key_id, null);
  await audit.close();
});

Deno.test("AuditLog writes at 500 events without waiting for the timer", async () => {
  const { db, writes } = fakeDb();
  const audit = new AuditLog({ db, log: quiet, delayMs: 60_000 });
  for (let i = 0; i < 500; i++) audit.record({ orgId: "org_a", action: "dataset.delivered" });
  await new Promise((r) => setTimeout(r, 0));
  assertEquals(writes.map((w) => w.length), [500]);
  await audit.close();
});

Deno.test("AuditLog keeps a failed batch and writes it with the next one, never throwing", async () => {
  const { db, writes, state } = fakeDb();
  const lines: string[] = [];
  const audit = new AuditLog({ db, log: createLogger({ sink: (l) => lines.push(l) }), delayMs: 5 });
  state.failing = true;
  const first = await audit.write({ orgId: "org_a", action: "settings.changed" });
  assertEquals(writes, []);
  assertEquals(JSON.parse(lines[0]).level, "warn");
  state.failing = false;
  const second = await audit.write({ orgId: "org_a", action: "dataset.deleted" });
  assertEquals(writes, [[first, second]]);
  await audit.close();
});

Deno.test("auditEventId sorts by time first, then by the order ids were made", () => {
  const a = auditEventId(Date.UTC(2026, 0, 1));
  const b = auditEventId(Date.UTC(2026, 0, 1));
  const c = auditEventId(Date.UTC(2025, 11, 31));
  assert(a < b, `${a} ${b}`);
  assert(c < a, `${c} ${a}`);
});
