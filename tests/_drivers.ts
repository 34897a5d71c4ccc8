/**
 * Runs a test body against the real server on each storage driver: local disk and S3 (s3rver).
 */
import type { ServiceOptions } from "../src/wiring.ts";
import type { TestServer } from "./_server.ts";
import { startTestServer } from "./_server.ts";
import type { S3rverFixture } from "./_s3rver.ts";
import { startS3rver } from "./_s3rver.ts";

export const DRIVERS = ["local", "s3"] as const;
export type Driver = typeof DRIVERS[number];

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
  if (driver === "s3") {
    s3 = await startS3rver();
    driverEnv = {
      ABN_STORAGE: "s3",
      ABN_S3_ENDPOINT: s3.endpoint,
      ABN_S3_REGION: s3.region,
      ABN_S3_BUCKET: s3.bucket,
      ABN_S3_ACCESS_KEY_ID: s3.accessKeyId,
      ABN_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
      ABN_S3_FORCE_PATH_STYLE: "true",
    };
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

/** Registers one Deno test per driver. */
export function driverTest(
  name: string,
  fn: (server: DriverServer) => Promise<void>,
  env: Record<string, string> = {},
): void {
  for (const driver of DRIVERS) {
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
