import { assertEquals } from "../_assert.ts";
import { driverTest } from "../_drivers.ts";

const CSV = "user_id,variant,date,converted\nu1,A,2026-12-01,1\nu2,B,2026-12-01,0\n";

driverTest(
  "limit, cursor and format given twice, an empty format, and a bad limit with the CSV answer 400 invalid_json",
  async (server) => {
    const call = (path: string, init: RequestInit = {}) =>
      fetch(`${server.api}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${server.apiKey}` },
      });
    const stored = await call("/datasets/upload/?experiment_id=q", {
      method: "POST",
      body: new TextEncoder().encode(CSV),
    });
    assertEquals(stored.status, 201);
    await stored.body?.cancel();
    for (
      const path of [
        "/datasets/?limit=1&limit=2",
        "/datasets/?cursor=&cursor=x",
        "/datasets/q/history/?limit=5&limit=5",
        "/datasets/q/history/?format=json&format=csv",
        "/datasets/q/history/?format=",
        "/datasets/q/analysis/?format=&format=csv",
        "/datasets/q/analysis/?format=",
        "/datasets/q/history/?format=csv&limit=5000",
        "/datasets/q/history/?format=csv&cursor=nope",
      ]
    ) {
      const res = await call(path);
      const body = await res.json();
      assertEquals([res.status, body.error.code], [400, "invalid_json"], path);
    }
    for (
      const path of [
        "/datasets/?limit=1&cursor=",
        "/datasets/q/analysis/?format=json",
        "/datasets/q/history/?format=csv&limit=5",
      ]
    ) {
      const res = await call(path);
      await res.body?.cancel();
      assertEquals(res.status, 200, path);
    }
  },
);
