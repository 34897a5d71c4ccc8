import { startFaultyServer, upload, VALID, validCsv } from "./_helpers.ts";
Deno.test("scratch blackhole", async () => {
  const s = await startFaultyServer("s3");
  try {
    await (await upload(s, "e", VALID)).body?.cancel();
    s.proxy!.setMode("blackhole");
    const t0 = performance.now();
    for (const [what, p] of [["list", () => fetch(`${s.api}/datasets/`, { headers: { authorization: `Bearer ${s.apiKey}` }, signal: AbortSignal.timeout(200000) })], ["upload", () => fetch(`${s.api}/datasets/upload/?experiment_id=e`, { method: "POST", headers: { authorization: `Bearer ${s.apiKey}` }, body: validCsv(2000), signal: AbortSignal.timeout(200000) })]] as const) {
      const t = performance.now();
      try { const r = await p(); console.log(what, r.status, Math.round(performance.now() - t), (await r.text()).slice(0, 100), s.proxy!.stats); } catch (e) { console.log(what, "gave up", Math.round(performance.now() - t)); }
    }
  } finally { await s.close(); }
});
