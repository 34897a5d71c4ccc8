/**
 * The audit trail on both control-plane drivers: events read back as written, newest first per
 * organization (ties by id), paged by position, filtered by action, and pruned by age; one event
 * of an id, however many times or instances record it.
 */
import { assertEquals } from "../_assert.ts";
import type { AuditEvent } from "../../src/db/control_plane.ts";
import { auditEventId, AuditLog } from "../../src/audit/audit_log.ts";
import { auditTwoStep } from "../../src/audit/two_step_audit.ts";
import { createLogger } from "../../src/log.ts";
import { controlPlaneTest } from "./_control_planes.ts";

function event(
  orgId: string,
  at: string,
  action: AuditEvent["action"],
  details: Record<string, unknown> = {},
): AuditEvent {
  return {
    id: auditEventId(Date.parse(at)),
    org_id: orgId,
    at,
    action,
    key_id: action === "key.created" ? null : "key_0123456789abcdef",
    experiment_id: action.startsWith("dataset.") ? "checkout" : null,
    details,
  };
}

controlPlaneTest(
  "audit events are paged newest first per organization, by action, and pruned by age",
  async (db, reopen) => {
    const a = (await db.orgs.create("a")).id;
    const b = (await db.orgs.create("b")).id;
    const t = (s: number) => new Date(Date.UTC(2026, 2, 5, 10, 0, s)).toISOString();
    const events = [
      event(a, t(1), "dataset.delivered", { route: "direct", size_bytes: 10, sha256: "ab" }),
      event(a, t(2), "settings.changed", { before: null, after: { mde: 0.1 } }),
      event(b, t(2), "dataset.delivered", { route: "two_step" }),
      event(a, t(3), "dataset.delivered", { route: "upload_url" }),
      event(a, t(3), "key.created", { scopes: ["read"] }), // same time: later id
      event(a, t(4), "dataset.deleted", { etag: "e" }),
    ];
    await db.audit.record(events.slice(0, 3));
    await db.audit.record(events.slice(3));
    await db.audit.record([]);
    await db.audit.record([events[0]]); // written twice: kept once
    const other = await reopen();
    const newestFirst = [5, 4, 3, 1, 0].map((i) => events[i]);
    assertEquals(await other.audit.page(a, { limit: 10 }), newestFirst);
    assertEquals(await other.audit.page(b, { limit: 10 }), [events[2]]);
    assertEquals(await other.audit.page("org_c", { limit: 10 }), []);

    const pages: AuditEvent[][] = [];
    let before = null;
    do {
      const page: AuditEvent[] = await other.audit.page(a, { limit: 2, before });
      pages.push(page);
      before = page.length === 2 ? { at: page[1].at, id: page[1].id } : null;
    } while (before !== null);
    assertEquals(pages.map((p) => p.length), [2, 2, 1]);
    assertEquals(pages.flat(), newestFirst);

    assertEquals(
      await other.audit.page(a, { limit: 10, action: "dataset.delivered" }),
      [events[3], events[0]],
    );
    assertEquals(
      await other.audit.page(a, {
        limit: 1,
        action: "dataset.delivered",
        before: { at: events[3].at, id: events[3].id },
      }),
      [events[0]],
    );
    assertEquals(await other.audit.page(a, { limit: 10, action: "key.rotated" }), []);

    assertEquals(await db.audit.prune(t(3)), 3); // strictly older: t(1) and t(2) of both orgs
    assertEquals(await other.audit.page(a, { limit: 10 }), [events[5], events[4], events[3]]);
    assertEquals(await other.audit.page(b, { limit: 10 }), []);
    assertEquals(await db.audit.prune(t(3)), 0);
  },
);

controlPlaneTest("pruning deletes a large backlog in batches", async (db) => {
  const a = (await db.orgs.create("a")).id;
  const old = Array.from(
    { length: 12_000 },
    (_, i) =>
      event(a, new Date(Date.UTC(2025, 0, 1, 0, 0, 0, i)).toISOString(), "dataset.delivered"),
  );
  for (let i = 0; i < old.length; i += 2000) await db.audit.record(old.slice(i, i + 2000));
  const recent = event(a, "2026-03-05T10:00:00.000Z", "key.revoked");
  await db.audit.record([recent]);
  assertEquals(await db.audit.prune("2026-01-01T00:00:00.000Z"), 12_000);
  assertEquals(await db.audit.page(a, { limit: 10 }), [recent]);
});

controlPlaneTest(
  "instances noticing one two-step delivery together record one event; another object another",
  async (db, reopen) => {
    const a = (await db.orgs.create("a")).id;
    const instances = [db, await reopen()].map((handle) =>
      new AuditLog({ db: handle, log: createLogger({ sink: () => {} }), delayMs: 1 })
    );
    const info = {
      key: `org/${a}/experiments/checkout/latest.csv`,
      size: 10,
      etag: '"e1"',
      lastModified: new Date(Date.UTC(2026, 2, 5, 10, 0, 0)),
    };
    const noticed = { orgId: a, experimentId: "checkout", info };
    // A few milliseconds apart, as two instances' scans would be: two times, one id.
    for (const audit of instances) {
      auditTwoStep(audit, noticed, null);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await Promise.all(instances.map((audit) => audit.flush()));
    const again = { ...noticed, info: { ...info, etag: '"e2"' } };
    for (const audit of instances) auditTwoStep(audit, again, null);
    for (const audit of instances) await audit.close();
    const trail = await db.audit.page(a, { limit: 10 });
    assertEquals(trail.map((e) => [e.action, e.details.etag, e.details.route]), [
      ["dataset.delivered", '"e2"', "two_step"],
      ["dataset.delivered", '"e1"', "two_step"],
    ]);
  },
);

controlPlaneTest(
  "a two-step delivery noticed twice at once by one instance is one event; a new object another",
  async (db) => {
    const a = (await db.orgs.create("a")).id;
    const audit = new AuditLog({ db, log: createLogger({ sink: () => {} }), delayMs: 5 });
    const info = {
      key: `org/${a}/experiments/x/latest.csv`,
      size: 10,
      etag: '"e1"',
      lastModified: new Date(1),
    };
    const delivery = { orgId: a, experimentId: "x", info };
    auditTwoStep(audit, delivery, null); // the scan of open grants
    auditTwoStep(audit, { ...delivery, info: { ...info } }, null); // a request's look, same object
    auditTwoStep(audit, { ...delivery, info: { ...info, lastModified: new Date(2) } }, null);
    await audit.close();
    const trail = await db.audit.page(a, { limit: 10 });
    assertEquals(trail.map((e) => [e.details.etag, e.details.route]), [
      ['"e1"', "two_step"],
      ['"e1"', "two_step"],
    ]);
    assertEquals(new Set(trail.map((e) => e.id)).size, 2);
  },
);
