import {
  AbortMultipartUploadCommand,
  ListMultipartUploadsCommand,
  type ListMultipartUploadsCommandOutput,
} from "@aws-sdk/client-s3";
import { isNotFound, isNotImplemented, storageFailure } from "./_s3_errors.ts";
import type { S3Like } from "./_s3_like.ts";

/** Incomplete multipart uploads older than this are abandoned. */
export const STALE_UPLOAD_MS = 24 * 60 * 60 * 1000;

/**
 * Aborts the bucket's incomplete multipart uploads started before `now - 24 h` and answers how
 * many it aborted. A store without ListMultipartUploads (s3rver answers 501 NotImplemented) has
 * nothing this can sweep, so that counts as none.
 */
export async function sweepMultipartUploads(
  client: S3Like,
  bucket: string,
  now: Date = new Date(),
): Promise<number> {
  const cutoff = now.getTime() - STALE_UPLOAD_MS;
  let aborted = 0;
  let keyMarker: string | undefined;
  let uploadIdMarker: string | undefined;
  while (true) {
    let page: ListMultipartUploadsCommandOutput;
    try {
      page = await client.send(
        new ListMultipartUploadsCommand({
          Bucket: bucket,
          KeyMarker: keyMarker,
          UploadIdMarker: uploadIdMarker,
        }),
      );
    } catch (error) {
      if (isNotImplemented(error)) return aborted;
      throw storageFailure(`cannot list multipart uploads in ${bucket}`, error);
    }
    for (const upload of page.Uploads ?? []) {
      const started = upload.Initiated?.getTime();
      if (upload.Key === undefined || upload.UploadId === undefined) continue;
      if (started === undefined || started >= cutoff) continue;
      try {
        await client.send(
          new AbortMultipartUploadCommand({
            Bucket: bucket,
            Key: upload.Key,
            UploadId: upload.UploadId,
          }),
        );
        aborted++;
      } catch (error) {
        // Completed or aborted since it was listed: nothing left to sweep.
        if (isNotFound(error)) continue;
        throw storageFailure(`cannot abort multipart upload of ${upload.Key}`, error);
      }
    }
    if (!page.IsTruncated) return aborted;
    keyMarker = page.NextKeyMarker;
    uploadIdMarker = page.NextUploadIdMarker;
    if (keyMarker === undefined && uploadIdMarker === undefined) return aborted;
  }
}
