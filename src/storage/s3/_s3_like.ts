import type { S3Client } from "@aws-sdk/client-s3";

/**
 * The slice of `S3Client` the S3 driver depends on, so tests can inject a client that fails.
 *
 * Commands sent: HeadBucket, CreateBucket, HeadObject, GetObject, PutObject (empty bodies only),
 * DeleteObject, ListObjectsV2, ListMultipartUploads, AbortMultipartUpload, CreateMultipartUpload,
 * UploadPart and CompleteMultipartUpload (directly for a body of one part, through lib-storage's
 * `Upload` beyond). `Upload` also reads `config` (endpoint, checksum mode, request handler).
 */
export interface S3Like {
  send: S3Client["send"];
  readonly config: S3Client["config"];
}
