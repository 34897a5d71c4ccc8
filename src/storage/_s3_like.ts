import type { S3Client } from "@aws-sdk/client-s3";

/**
 * The slice of `S3Client` the S3 driver depends on, so tests can inject a client that fails.
 *
 * Commands sent: HeadBucket, CreateBucket, HeadObject, GetObject, PutObject, DeleteObject,
 * ListObjectsV2, ListMultipartUploads, AbortMultipartUpload, and (through lib-storage's
 * `Upload`) CreateMultipartUpload, UploadPart, CompleteMultipartUpload. `Upload` also reads
 * `config` (endpoint, checksum mode, request handler).
 */
export interface S3Like {
  send: S3Client["send"];
  readonly config: S3Client["config"];
}
