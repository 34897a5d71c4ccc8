/**
 * A service started on a database whose results an older analysis made runs them again in the
 * background, newest deliveries first, serving the older result until the new one is saved.
 */
import { assert, assertEquals } from "../_assert.ts";
import { startTestServer } from "../_server.ts";
import { SqliteControlPlane } from "../../src/db/sqlite/sqlite_control_plane.ts";
import { LocalStore } from "../../src/storage/local_store.ts";
import { UrlSigner } from "../../src/crypto/url_signer.ts";
import { datasetKey } from "../../src/storage/object_store.ts";
import { ANALYSIS_VERSION } from "../../src/analysis/report.ts";
import { growingCsv } from "./_growing_csv.ts";

Deno.test("results of an older analysis are run again at start-up, newest deliveries first", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "abn-upgrade-" });
  // What an older service left: two stored datasets with results of analysis version 2.
  const db = new SqliteControlPlane(`${dataDir}/abn.sqlite`);
  const org = await db.orgs.create("upgraded");
  const { api_key } = await db.keys.create(org.id);
  const store = new LocalStore({
    dataDir,
    signer: new UrlSigner(new Uint8Array(32)),
    publicUrl: "http://127.0.0.1:1",
  });
  await store.open();
  const old = { analysis_version: 2, control: "A", variants: [], warnings: [], _data: {} };
  for (const [id, days, deliveredAt] of [["older", 5, "2026-03-05"], ["newer", 6, "2026-03-06"]]) {
    const writer = await store.createWriter(datasetKey(org.id, id as string));
    await writer.write(new TextEncoder().encode(growingCsv({ days: days as number })));
    const info = await writer.commit();
    await db.analyses.markPending(
      org.id,
      id as string,
      info.etag,
      info.size,
      `${deliveredAt}T02:00:00.000Z`,
    );
    await db.analyses.saveResult(
      org.id,
      id as string,
      info.etag,
      { status: "ready", error: null, rows: 1, result: old, version: 2 },
      `${deliveredAt}T02:00:01.000Z`,
    );
  }
  await db.close();

  const lines: string[] = [];
  const server = await startTestServer({ ABN_SCAN_INTERVAL_SECONDS: "3600" }, {
    dataDir,
    log: (line) => lines.push(line),
  });
  try {
    const analysed = () =>
      lines.map((line) => JSON.parse(line)).filter((l) =>
        l.msg === "analysis finished" && l.source === "upgrade"
      );
    const deadline = Date.now() + 30_000;
    while (analysed().length < 2 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assertEquals(analysed().map((l) => [l.experiment_id, l.status]), [
      ["newer", "ready"],
      ["older", "ready"],
    ]);
    assert(
      lines.some((line) => line.includes('"msg":"re-running analyses made by an older version"')),
    );
    for (const id of ["newer", "older"]) {
      const res = await fetch(`${server.api}/datasets/${id}/analysis/`, {
        headers: { authorization: `Bearer ${api_key}` },
      });
      const a = await res.json();
      assertEquals(a.status, "ready");
      assertEquals(a.analysis_version, ANALYSIS_VERSION);
      assert(Array.isArray(a.dimensions), "the new fields are there");
      const row = await server.service.db.analyses.get(org.id, id);
      assertEquals(row?.analysis_version, ANALYSIS_VERSION);
      assertEquals((await server.service.db.history.list(org.id, id, 0, 10)).length, 1);
    }
    assertEquals(await server.service.db.analyses.outdated(ANALYSIS_VERSION), []);
  } finally {
    await server.close();
  }
});
