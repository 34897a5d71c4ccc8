import { StorageError } from "../object_store.ts";

interface SdkErrorShape {
  name?: string;
  Code?: string;
  $metadata?: { httpStatusCode?: number };
}

function shape(error: unknown): SdkErrorShape {
  return typeof error === "object" && error !== null ? error as SdkErrorShape : {};
}

/** The HTTP status an SDK error carries, if any. */
export function statusOf(error: unknown): number | undefined {
  return shape(error).$metadata?.httpStatusCode;
}

/** Whether an SDK error says the object, bucket or upload does not exist. */
export function isNotFound(error: unknown): boolean {
  const { name, Code } = shape(error);
  const code = Code ?? name;
  return statusOf(error) === 404 || code === "NotFound" || code === "NoSuchKey" ||
    code === "NoSuchBucket" || code === "NoSuchUpload";
}

/** Whether an SDK error says the service does not implement the operation (s3rver does this). */
export function isNotImplemented(error: unknown): boolean {
  const { name, Code } = shape(error);
  return statusOf(error) === 501 || (Code ?? name) === "NotImplemented";
}

/** Wraps an SDK failure in a `StorageError` that keeps it as the cause. */
export function storageFailure(what: string, error: unknown): StorageError {
  if (error instanceof StorageError) return error;
  const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return new StorageError(`Storage failed: ${what}: ${detail}`, { cause: error });
}
