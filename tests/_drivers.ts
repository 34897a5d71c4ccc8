/**
 * Runs a test body against the real server on each storage driver: local disk and S3 (s3rver),
 * and, for the suites where a real S3 implementation matters, S3 on Ceph's RADOS Gateway.
 */
import type { ServiceOptions } from "../src/wiring.ts";
import type { TestServer } from "./_server.ts";
import { startTestServer } from "./_server.ts";
import type { S3rverFixture } from "./_s3rver.ts";
import { s3Env, startS3rver } from "./_s3rver.ts";
import { rgwAvailable, startRgw } from "./_rgw.ts";

export const DRIVERS = ["local", "s3"] as const;
/** `s3-rgw`: the S3 driver on Ceph's RADOS Gateway (`tests/_rgw.ts`). */
export type Driver = typeof DRIVERS[number] | "s3-rgw";
/** The drivers, plus the gateway where it is installed: for the S3 end-to-end and fault suites. */
export const DRIVERS_AND_RGW: readonly Driver[] = rgwAvailable() ? [...DRIVERS, "s3-rgw"] : DRIVERS;
/** The gateway alone (none where it is not installed): what s3rver cannot check. */
export const RGW_ONLY: readonly Driver[] = rgwAvailable() ? ["s3-rgw"] : [];

export interface DriverServer extends TestServer {
  driver: Driver;
  s3?: S3rverFixture;
  /** Reads the stored dataset's bytes straight from the storage (not through the API). */
  stored(orgId: string, experimentId: string): Promise<Uint8Array | null>;
}

export async function startDriverServer(
  driver: Driver,
  env: Record<string, string> = {},
  options: ServiceOptions = {},
): Promise<DriverServer> {
  let s3: S3rverFixture | undefined;
  let driverEnv: Record<string, string> = {};
  if (driver !== "local") {
    s3 = driver === "s3" ? await startS3rver() : await startRgw();
    driverEnv = { ...s3Env(s3), ABN_S3_FORCE_PATH_STYLE: "true" };
  }
  const server = await startTestServer({ ...driverEnv, ...env }, options);
  return {
    ...server,
    driver,
    s3,
    async stored(orgId: string, experimentId: string) {
      const object = await server.service.store.get(
        `org/${orgId}/experiments/${experimentId}/latest.csv`,
      );
      if (!object) return null;
      return new Uint8Array(await new Response(object.body).arrayBuffer());
    },
    async close() {
      await server.close();
      await s3?.stop();
    },
  };
}

/** Registers one Deno test per driver: local and s3 (s3rver). */
export function driverTest(
  name: string,
  fn: (server: DriverServer) => Promise<void>,
  env: Record<string, string> = {},
): void {
  driverTests(DRIVERS, name, fn, env);
}

/**
 * `driverTest` plus s3-rgw (where the gateway is installed): for the end-to-end tests where a real
 * S3 implementation matters (signatures, multipart uploads, listings).
 */
export function driverTestWithRgw(
  name: string,
  fn: (server: DriverServer) => Promise<void>,
  env: Record<string, string> = {},
): void {
  driverTests(DRIVERS_AND_RGW, name, fn, env);
}

/** A Deno test on s3-rgw alone (none without the gateway): for what s3rver cannot check. */
export function rgwTest(
  name: string,
  fn: (server: DriverServer) => Promise<void>,
  env: Record<string, string> = {},
): void {
  driverTests(RGW_ONLY, name, fn, env);
}

function driverTests(
  drivers: readonly Driver[],
  name: string,
  fn: (server: DriverServer) => Promise<void>,
  env: Record<string, string>,
): void {
  for (const driver of drivers) {
    Deno.test(`${name} (${driver})`, async () => {
      const server = await startDriverServer(driver, env);
      try {
        await fn(server);
      } finally {
        await server.close();
      }
    });
  }
}

/**
 * A two-step delivery of `body` to experiment `id`: the grant of `POST /datasets/initiate/`, then
 * the PUT to its URL, which must answer 200.
 */
export async function deliverTwoStep(
  server: DriverServer,
  id: string,
  body: Uint8Array<ArrayBuffer>,
): Promise<void> {
  const grant = await (await fetch(`${server.api}/datasets/initiate/`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ experiment_id: id }),
  })).json();
  const put = await fetch(grant.upload_url, {
    method: "PUT",
    headers: { "content-type": "text/csv" },
    body,
  });
  const text = await put.text();
  if (put.status !== 200) throw new Error(`the PUT of ${id} answered ${put.status}: ${text}`);
}
