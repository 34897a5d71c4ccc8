/**
 * `admin db copy-from-sqlite PATH`: a single-host install's SQLite file moved into PostgreSQL,
 * read back through the PostgreSQL driver exactly as the SQLite driver reads it; running it
 * again changes nothing, and never undoes a revocation made on PostgreSQL since.
 */
import { assert, assertEquals } from "../_assert.ts";
import { loadConfig } from "../../src/config.ts";
import { runAdmin } from "../../src/cli/admin.ts";
import type { ControlPlane } from "../../src/db/control_plane.ts";
import { hashKey } from "../../src/db/api_keys.ts";
import { SqliteControlPlane } from "../../src/db/sqlite/sqlite_control_plane.ts";
import { openPostgres } from "../../src/db/postgres/postgres_control_plane.ts";
import { postgresTest, withDatabase } from "../_postgres.ts";

async function copy(path: string, env: Record<string, string>) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runAdmin(["db", "copy-from-sqlite", path], loadConfig(env), {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
  });
  return { code, out, err };
}

/** Everything a control plane holds about the given organizations, as plain data. */
async function snapshot(db: ControlPlane, experiments: [string, string][]) {
  const orgs = await db.orgs.list();
  const keys = await Promise.all(orgs.map((o) => db.keys.list(o.id)));
  const settings = await Promise.all(experiments.map(([o, e]) => db.settings.get(o, e)));
  const analyses = await Promise.all(experiments.map(([o, e]) => db.analyses.get(o, e)));
  const datasets = await Promise.all(orgs.map((o) => db.datasets.page(o.id, { limit: 100 })));
  const grants = await db.grants.open("2000-01-01T00:00:00.000Z");
  const history = await Promise.all(experiments.map(([o, e]) => db.history.list(o, e, 0, 100)));
  const summaries = await Promise.all(experiments.map(async ([o, e]) => {
    const row = await db.deliverySummaries.get(o, e);
    return row === null ? null : { ...row, summary: [...row.summary] };
  }));
  const audit = await Promise.all(orgs.map((o) => db.audit.page(o.id, { limit: 100 })));
  const secret = await db.secrets.get("url-signing");
  const webhooks = (await Promise.all(orgs.map((o) => db.webhooks.list(o.id)))).flat();
  const deliveries = await Promise.all(
    webhooks.map((w) => db.webhooks.deliveries(w.org_id, w.webhook_id, { limit: 100 })),
  );
  // Plain objects (SQLite's rows have no prototype), secrets and blobs as arrays.
  return JSON.parse(JSON.stringify({
    orgs,
    keys,
    settings,
    analyses,
    datasets,
    grants,
    history,
    summaries,
    audit,
    webhooks,
    deliveries,
    secret: [...secret ?? []],
  }));
}

postgresTest(
  "admin db copy-from-sqlite copies every row, verifies the counts, and is idempotent",
  () =>
    withDatabase(async (database) => {
      const dir = await Deno.makeTempDir({ prefix: "abn-copy-" });
      const path = `${dir}/abn.sqlite`;
      try {
        const sqlite = new SqliteControlPlane(path);
        const acme = await sqlite.orgs.create("acme");
        const gone = await sqlite.orgs.create("gone");
        await sqlite.orgs.setActive(gone.id, false);
        await sqlite.orgs.setQuota(acme.id, 5_000_000);
        const kept = await sqlite.keys.create(acme.id);
        const revoked = await sqlite.keys.create(acme.id, {
          name: "ci pipeline",
          scopes: ["upload", "read"],
          expiresAt: "2030-01-01T00:00:00.000Z",
        });
        await sqlite.keys.create(gone.id);
        await sqlite.keys.revoke(revoked.info.key_id);
        await sqlite.keys.touch(new Map([[kept.info.key_id, "2026-03-05T10:00:00.123Z"]]));
        await sqlite.settings.save(acme.id, "checkout", { control: "B", mde: 0.02 });
        await sqlite.analyses.markPending(
          acme.id,
          "checkout",
          "etag-1",
          1234,
          "2026-03-05T09:00:00.000Z",
        );
        await sqlite.analyses.saveResult(acme.id, "checkout", "etag-1", {
          status: "ready",
          error: null,
          rows: 99,
          result: { variants: [{ name: "A" }] },
          version: 3,
        }, "2026-03-05T09:00:01.000Z");
        const dataset = (experimentId: string, etag: string, size: number) => ({
          org_id: acme.id,
          experiment_id: experimentId,
          key: `org/${acme.id}/experiments/${experimentId}/latest.csv`,
          size_bytes: size,
          etag,
          delivered_at: "2026-03-05T09:00:00.000Z",
          observed_at: "2026-03-05T09:00:00.500Z",
        });
        // An endpoint, and the outbox rows of the three deliveries after it.
        await sqlite.webhooks.create(acme.id, {
          url: "https://hooks.example.com/abn",
          description: "pipeline",
          events: ["dataset.delivered"],
          secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        });
        await sqlite.datasets.put([
          dataset("checkout", "etag-1", 1234),
          dataset("pricing", "etag-9", 10),
          dataset("Zeta", "etag-z", 5),
        ]);
        await sqlite.grants.put([{
          key: `org/${acme.id}/experiments/pricing/latest.csv`,
          org_id: acme.id,
          experiment_id: "pricing",
          expires_at: "2026-03-05T10:00:00.000Z",
          key_id: kept.info.key_id,
        }]);
        await sqlite.audit.record([{
          id: "evt_0000000000000001",
          org_id: acme.id,
          at: "2026-03-05T09:00:00.250Z",
          action: "dataset.delivered",
          key_id: kept.info.key_id,
          experiment_id: "checkout",
          details: { route: "direct", size_bytes: 1234, etag: "etag-1", sha256: "bb" },
        }, {
          id: "evt_0000000000000002",
          org_id: gone.id,
          at: "2026-03-05T09:10:00.000Z",
          action: "key.created",
          key_id: null,
          experiment_id: null,
          details: { target_key_id: "key_x", scopes: ["read"] },
        }]);
        for (const [i, sha] of ["aa", "bb"].entries()) {
          await sqlite.history.record(acme.id, "checkout", {
            sha256: sha,
            etag: `etag-${i}`,
            delivered_at: `2026-03-0${i + 1}T00:00:00.000Z`,
            analysed_at: `2026-03-0${i + 1}T00:00:01.000Z`,
            figures: JSON.stringify({ rows: i }),
          }, 10);
        }
        await sqlite.deliverySummaries.save(acme.id, "checkout", {
          etag: "etag-1",
          sha256: "bb",
          delivered_at: "2026-03-05T09:00:00.000Z",
          summary: Uint8Array.from([0, 1, 2, 255, 128]),
          changes: '{"users_added":3}',
        });
        await sqlite.analyses.markPending(
          acme.id,
          "pricing",
          "etag-9",
          10,
          "2026-03-05T09:30:00.000Z",
        );
        await sqlite.secrets.getOrCreate("url-signing");
        const experiments: [string, string][] = [[acme.id, "checkout"], [acme.id, "pricing"]];
        const before = await snapshot(sqlite, experiments);
        await sqlite.close();

        const env = { ABN_DATABASE_URL: database.url, ABN_DATA_DIR: dir };
        const first = await copy(path, env);
        assertEquals(first.code, 0, first.err.join("\n"));
        assertEquals(first.out, [
          "orgs: 2 in SQLite, 2 of them in PostgreSQL (2 rows there in all)",
          "api_keys: 3 in SQLite, 3 of them in PostgreSQL (3 rows there in all)",
          "settings: 1 in SQLite, 1 of them in PostgreSQL (1 rows there in all)",
          "analyses: 2 in SQLite, 2 of them in PostgreSQL (2 rows there in all)",
          "datasets: 3 in SQLite, 3 of them in PostgreSQL (3 rows there in all)",
          "grants: 1 in SQLite, 1 of them in PostgreSQL (1 rows there in all)",
          "history_snapshots: 2 in SQLite, 2 of them in PostgreSQL (2 rows there in all)",
          "delivery_summaries: 1 in SQLite, 1 of them in PostgreSQL (1 rows there in all)",
          "delivery_summary_parts: 1 in SQLite, 1 of them in PostgreSQL (1 rows there in all)",
          "audit_events: 2 in SQLite, 2 of them in PostgreSQL (2 rows there in all)",
          "webhook_endpoints: 1 in SQLite, 1 of them in PostgreSQL (1 rows there in all)",
          "webhook_deliveries: 3 in SQLite, 3 of them in PostgreSQL (3 rows there in all)",
          "secret url-signing: copied",
          "Copy verified: every SQLite row is in PostgreSQL",
        ]);

        const pg = await openPostgres(database.url);
        try {
          assertEquals(await snapshot(pg, experiments), before);
          assertEquals((await pg.keys.ownerByHash(hashKey(kept.api_key)))?.orgId, acme.id);

          const scoped = (await pg.keys.list(acme.id)).find((k) =>
            k.key_id === revoked.info.key_id
          );
          assertEquals(scoped?.scopes, ["upload", "read"]);
          assertEquals(scoped?.name, "ci pipeline");

          // Changes made on PostgreSQL since survive a second copy; nothing is duplicated.
          await pg.keys.revoke(kept.info.key_id);
          const gonesKey = (await pg.keys.list(gone.id))[0];
          const rotated = await pg.keys.rotate(gonesKey.key_id, { overlapSeconds: 3600 });
          assertEquals(rotated.outcome, "rotated");
          const second = await copy(path, env);
          assertEquals(second.code, 0, second.err.join("\n"));
          assertEquals(second.out.slice(0, 1), first.out.slice(0, 1));
          assertEquals(
            second.out[1],
            "api_keys: 3 in SQLite, 3 of them in PostgreSQL (4 rows there in all)",
          );
          assertEquals(second.out.slice(2, 12), first.out.slice(2, 12));
          assertEquals(second.out[12], "secret url-signing: same");
          // The rotated key's expiry on PostgreSQL is kept (SQLite has none for it).
          assertEquals(
            (await pg.keys.get(gonesKey.key_id))?.expires_at,
            rotated.outcome === "rotated" ? rotated.old.expires_at : "",
          );
          // The catalog's statuses are PostgreSQL's analyses' (the ready result, pending else).
          assertEquals(
            (await pg.datasets.page(acme.id, { limit: 10 })).map((r) => [
              r.experiment_id,
              r.analysis_status,
            ]),
            [["Zeta", "pending"], ["checkout", "ready"], ["pricing", "pending"]],
          );
          assertEquals((await pg.analyses.get(acme.id, "checkout"))?.analysis_version, 3);
          assertEquals((await pg.keys.ownerByHash(hashKey(kept.api_key)))?.revoked, true);
          assertEquals((await pg.orgs.get(gone.id))?.active, false);
        } finally {
          await pg.close();
        }

        const missing = await copy(`${dir}/nothing.sqlite`, env);
        assertEquals(missing.code, 1);
        assertEquals(missing.err, [`No SQLite file at ${dir}/nothing.sqlite`]);
        const noTarget = await copy(path, { ABN_DATA_DIR: dir });
        assertEquals(noTarget.code, 2);
        assert(noTarget.err[0].includes("needs ABN_DATABASE_URL"), noTarget.err[0]);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    }),
);
