/**
 * The S3 implementations the S3 suites run against: s3rver always (fast, and it keeps a cut
 * PutObject, which the driver must never rely on), and Ceph's RADOS Gateway where it is installed
 * (it checks SigV4 signatures, Content-MD5 and Content-Length, aborts and lists multipart uploads
 * and pages listings of any length). Where the two differ, the tests say which peer checks what.
 */
import type { S3rverFixture } from "./_s3rver.ts";
import { startS3rver } from "./_s3rver.ts";
import { rgwAvailable, startRgw } from "./_rgw.ts";

export type S3Peer = "s3rver" | "rgw";
export type S3Fixture = S3rverFixture;

/** s3rver, and the gateway when its packages are installed. */
export const S3_PEERS: readonly S3Peer[] = rgwAvailable() ? ["s3rver", "rgw"] : ["s3rver"];

/** A fresh bucket on `peer`: its own s3rver process, or a new bucket on the shared gateway. */
export function startS3Peer(peer: S3Peer): Promise<S3Fixture> {
  return peer === "rgw" ? startRgw() : startS3rver();
}
