/**
 * A throwaway S3 service for tests: s3rver 3.7.1 on 127.0.0.1, in this process, with a fresh
 * directory and a fresh bucket. It runs fine under Deno's `node:http` (multipart, streaming
 * bodies and presigned PUTs included), so no Node child process is needed.
 *
 * s3rver checks presigned expiry but not SigV4 signatures, and answers 501 NotImplemented to
 * ListMultipartUploads and AbortMultipartUpload: test those paths with an injected client.
 */
import S3rver from "s3rver";

export interface S3rverFixture {
  /** `http://127.0.0.1:{port}`; use path-style addressing. */
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Where s3rver keeps the bucket's files. */
  directory: string;
  /** Closes the server (and any connection left open) and removes the directory. */
  stop(): Promise<void>;
}

interface S3rverServer {
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
  httpServer?: { closeAllConnections?: () => void };
}

/** Starts s3rver on a free port with a new, empty bucket. */
export async function startS3rver(): Promise<S3rverFixture> {
  const directory = await Deno.makeTempDir({ prefix: "abn-s3rver-" });
  const bucket = `abn-test-${crypto.randomUUID().slice(0, 8)}`;
  const server = new S3rver({
    address: "127.0.0.1",
    port: 0,
    silent: true,
    directory,
    vhostBuckets: false,
    configureBuckets: [{ name: bucket, configs: [] }],
  }) as unknown as S3rverServer;
  let port: number;
  try {
    ({ port } = await server.run());
  } catch (error) {
    await Deno.remove(directory, { recursive: true }).catch(() => {});
    throw error;
  }
  let stopped = false;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    region: "us-east-1",
    // s3rver's built-in account.
    accessKeyId: "S3RVER",
    secretAccessKey: "S3RVER",
    directory,
    async stop() {
      if (stopped) return;
      stopped = true;
      // A keep-alive socket a test left open would make close() wait for it.
      server.httpServer?.closeAllConnections?.();
      await server.close();
      await Deno.remove(directory, { recursive: true });
    },
  };
}
