/**
 * Two instances on one PostgreSQL database: a key revoked or rotated through one instance stops
 * working on the other within a second (each instance remembers a key for half a second), a key
 * made on one works on the other, and both read one audit trail.
 */
import { assert, assertEquals, eventually } from "../_assert.ts";
import { startS3rver } from "../_s3rver.ts";
import { postgresTest, withDatabase } from "../_postgres.ts";
import { type Instance, sharedEnv, startInstances } from "./_scale_out.ts";

async function status(instance: Instance, apiKey: string): Promise<number> {
  const res = await fetch(`${instance.api}/keys/`, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
  await res.body?.cancel();
  return res.status;
}

function post(instance: Instance, apiKey: string, path: string, body: unknown) {
  return fetch(`${instance.api}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

postgresTest(
  "a key revoked or rotated on one instance stops on the other within a second",
  () =>
    withDatabase(async (database) => {
      const s3 = await startS3rver();
      try {
        const [a, b] = await startInstances(["A", "B"], sharedEnv(s3, database.url));
        try {
          const made = await post(a, a.apiKey, "/keys/", { scopes: ["read", "admin"] });
          assertEquals(made.status, 201);
          const key = await made.json();
          // Made on A, it works on B at once (no entry of it was remembered there).
          assertEquals(await status(b, key.api_key), 200);
          assertEquals(await status(b, key.api_key), 200); // now B remembers it

          const revoked = await fetch(`${a.api}/keys/${key.key_id}/`, {
            method: "DELETE",
            headers: { authorization: `Bearer ${a.apiKey}` },
          });
          assertEquals(revoked.status, 204);
          assertEquals(await status(a, key.api_key), 401); // at once where it was revoked
          const onB = await eventually(() => status(b, key.api_key), 401, 1000);
          assert(onB <= 1000, `${onB} ms`);

          // Rotation without overlap: the old key stops on B within a second, the new one works.
          const old = await (await post(a, a.apiKey, "/keys/", { scopes: ["read"] })).json();
          assertEquals(await status(b, old.api_key), 200);
          const rotated = await post(a, a.apiKey, `/keys/${old.key_id}/rotate/`, {
            overlap_hours: 0,
          });
          assertEquals(rotated.status, 201);
          const replacement = await rotated.json();
          await eventually(() => status(b, old.api_key), 401, 1000);
          assertEquals(await status(b, replacement.api_key), 200);

          // One audit trail: what A did, B lists (A wrote each event before answering).
          const audit = await (await fetch(`${b.api}/audit/`, {
            headers: { authorization: `Bearer ${b.apiKey}` },
          })).json();
          assertEquals(audit.events, []); // B's own organization (each instance made one)
          const trail = await (await fetch(`${b.api}/audit/`, {
            headers: { authorization: `Bearer ${a.apiKey}` },
          })).json();
          assertEquals(trail.events.map((e: { action: string }) => e.action), [
            "key.rotated",
            "key.created",
            "key.revoked",
            "key.created",
          ]);
        } finally {
          await a.close();
          await b.close();
        }
      } finally {
        await s3.stop();
      }
    }),
);
