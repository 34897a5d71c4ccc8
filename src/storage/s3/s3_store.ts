/**
 * The S3-compatible storage driver (AWS, MinIO, Ceph RGW, R2, Garage). Writes stream through
 * lib-storage's multipart `Upload` and become visible only at `commit()`; upload URLs are
 * presigned PUTs bound to `Content-Type: text/csv` (and the declared length, when given).
 */
import {
  type BucketLocationConstraint,
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { Readable } from "node:stream";
import type {
  ListOptions,
  ListPage,
  ObjectInfo,
  ObjectStore,
  ObjectWriter,
  PresignOptions,
} from "../object_store.ts";
import { StorageError } from "../object_store.ts";
import { isNotFound, storageFailure } from "./_s3_errors.ts";
import type { S3Like } from "./_s3_like.ts";
import { sweepMultipartUploads } from "./_s3_sweep.ts";
import { S3Writer } from "./_s3_writer.ts";
import { SigV4Presigner, uriEncodePath } from "./_sigv4.ts";

export type { S3Like } from "./_s3_like.ts";

export interface S3StoreOptions {
  /** The S3 API base URL; default: AWS for `region`. */
  endpoint?: string;
  region: string;
  bucket: string;
  /** Static credentials; default: the SDK's provider chain (environment, profile, instance). */
  accessKeyId?: string;
  secretAccessKey?: string;
  /** Path-style URLs (`{endpoint}/{bucket}/{key}`), as MinIO, Garage and s3rver need. */
  forcePathStyle: boolean;
  /** The host clients reach, used for presigned URLs; default: `endpoint`. */
  publicEndpoint?: string;
  /** `open()` creates a missing bucket instead of failing. */
  createBucket: boolean;
  /** Replaces the SDK client for every call but presigning; default: a real `S3Client`. */
  client?: S3Like;
  /** Multipart part size in bytes; default 8 MiB, at least 5 MiB. */
  partSize?: number;
  /** Parts uploaded at once per writer; default 4. */
  queueSize?: number;
  /** Longest one storage request but GetObject may take before it fails; default 60 s. */
  requestDeadlineMs?: number;
}

const MIB = 1024 * 1024;
const CONTENT_TYPE = "text/csv";
/** Query parameters the SDK's presigner adds to every PutObject URL; signed with the rest. */
const PUT_QUERY = { "X-Amz-Content-Sha256": "UNSIGNED-PAYLOAD", "x-id": "PutObject" };
/** The key of the URLs signed once by both the SDK and `SigV4Presigner`, to compare them. */
const PROBE_KEY = "probe.csv";

/** How `presignPut` signs without the SDK: the signer and where the bucket's objects are. */
interface DirectPresign {
  signer: SigV4Presigner;
  /** `{scheme}://{host}`, as the SDK resolved the (public) endpoint for the bucket. */
  origin: string;
  /** The path before `/{key}`: `/{bucket}` path-style, empty virtual-hosted. */
  prefix: string;
}

function createClient(options: S3StoreOptions, endpoint: string | undefined): S3Client {
  const { accessKeyId, secretAccessKey } = options;
  return new S3Client({
    region: options.region,
    endpoint,
    forcePathStyle: options.forcePathStyle,
    credentials: accessKeyId !== undefined && secretAccessKey !== undefined
      ? { accessKeyId, secretAccessKey }
      : undefined,
    // The default (WHEN_SUPPORTED) puts a CRC32 of an empty body into presigned PUT URLs,
    // which Garage, R2, SeaweedFS and MinIO reject.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    // Storage that accepts connections but never answers must not hang uploads or the timer:
    // give up on a connection after 5 s and on a request silent for 20 s (then 500).
    requestHandler: {
      connectionTimeout: 5_000,
      requestTimeout: 20_000,
      throwOnRequestTimeout: true,
    },
    maxAttempts: 3,
  });
}

function stripQuotes(etag: string | undefined): string {
  return (etag ?? "").replaceAll('"', "");
}

/**
 * A listing's time without its milliseconds: Ceph's gateway lists them while HEAD and GET answer
 * an HTTP date (whole seconds), so an object's info is the same whichever call read it.
 */
function wholeSeconds(date: Date | undefined): Date {
  const ms = date?.getTime() ?? 0;
  return new Date(ms - ms % 1000);
}

function toWebStream(body: unknown): ReadableStream<Uint8Array> {
  const sdkBody = body as { transformToWebStream?: () => ReadableStream<Uint8Array> };
  if (typeof sdkBody?.transformToWebStream === "function") return sdkBody.transformToWebStream();
  if (body instanceof ReadableStream) return body;
  if (body instanceof Readable) return Readable.toWeb(body) as ReadableStream<Uint8Array>;
  throw new StorageError("Storage failed: the object body is not a stream");
}

/** Longest a storage request may take (a part of 8 MiB, a listing page) before it fails. */
const REQUEST_DEADLINE_MS = 60_000;

/**
 * The client with a deadline on every request but GetObject (whose body streams for as long as
 * the reader takes): storage that accepts connections and never answers fails the request with
 * a 500 instead of hanging an upload or the timer. (The socket timeouts of the SDK's Node
 * handler are not enforced under Deno's node:http.)
 */
function withDeadline(client: S3Client, ms: number): S3Like {
  const send = (
    command: { constructor: { name: string } },
    options?: { abortSignal?: AbortSignal },
  ) => {
    if (command instanceof GetObjectCommand) {
      return (client.send as (...a: unknown[]) => Promise<unknown>)(command, options);
    }
    const deadline = AbortSignal.timeout(ms);
    const abortSignal = options?.abortSignal
      ? AbortSignal.any([options.abortSignal, deadline])
      : deadline;
    return (client.send as (...a: unknown[]) => Promise<unknown>)(command, {
      ...options,
      abortSignal,
    });
  };
  return { config: client.config, send: send as unknown as S3Like["send"] };
}

export class S3Store implements ObjectStore {
  readonly driver = "s3" as const;
  readonly bucket: string;
  #options: S3StoreOptions;
  #partSize: number;
  #queueSize: number;
  #client: S3Like;
  #presigner: S3Client;
  /** Settles to the direct signer once checked against the SDK, or null: the SDK signs. */
  #direct: Promise<DirectPresign | null> | null = null;
  /** Clients this store made and must destroy on `close()`. */
  #owned: S3Client[] = [];

  constructor(options: S3StoreOptions) {
    const partSize = options.partSize ?? 8 * MIB;
    if (partSize < 5 * MIB) {
      throw new RangeError(`Invalid partSize: S3 needs at least 5 MiB, got ${partSize}`);
    }
    this.#options = options;
    this.#partSize = partSize;
    this.#queueSize = options.queueSize ?? 4;
    this.bucket = options.bucket;
    const own = options.client === undefined ? createClient(options, options.endpoint) : null;
    if (own !== null) this.#owned.push(own);
    this.#client = own === null
      ? options.client!
      : withDeadline(own, options.requestDeadlineMs ?? REQUEST_DEADLINE_MS);
    const publicEndpoint = options.publicEndpoint ?? options.endpoint;
    if (own !== null && publicEndpoint === options.endpoint) {
      this.#presigner = own;
    } else {
      // Signed for the host clients will use (same credentials), so the signature matches it.
      this.#presigner = createClient(options, publicEndpoint);
      this.#owned.push(this.#presigner);
    }
  }

  async open(): Promise<void> {
    const { bucket, region, createBucket } = this.#options;
    try {
      await this.#client.send(new HeadBucketCommand({ Bucket: bucket }));
      return;
    } catch (error) {
      if (error instanceof Error && error.name === "CredentialsProviderError") {
        throw new StorageError(
          `No S3 credentials for bucket "${bucket}": set ABN_S3_ACCESS_KEY_ID and ` +
            `ABN_S3_SECRET_ACCESS_KEY (or the AWS SDK's own credentials, e.g. an instance role)`,
          { cause: error },
        );
      }
      if (!isNotFound(error)) throw storageFailure(`cannot reach bucket ${bucket}`, error);
    }
    if (!createBucket) {
      throw new StorageError(
        `S3 bucket "${bucket}" does not exist: check ABN_S3_BUCKET, or set ABN_S3_CREATE_BUCKET=true to create it at start-up`,
      );
    }
    try {
      await this.#client.send(
        new CreateBucketCommand({
          Bucket: bucket,
          CreateBucketConfiguration: region === "us-east-1"
            ? undefined
            : { LocationConstraint: region as BucketLocationConstraint },
        }),
      );
    } catch (error) {
      const name = (error as { name?: string })?.name;
      if (name === "BucketAlreadyOwnedByYou") return;
      throw storageFailure(`cannot create bucket ${bucket}`, error);
    }
  }

  createWriter(key: string): Promise<ObjectWriter> {
    return Promise.resolve(
      new S3Writer({
        client: this.#client,
        bucket: this.bucket,
        key,
        partSize: this.#partSize,
        queueSize: this.#queueSize,
        bufferBytes: MIB,
      }),
    );
  }

  async head(key: string): Promise<ObjectInfo | null> {
    try {
      const head = await this.#client.send(
        new HeadObjectCommand({ Bucket: this.bucket, Key: key }),
      );
      return {
        key,
        size: head.ContentLength ?? 0,
        etag: stripQuotes(head.ETag),
        lastModified: head.LastModified ?? new Date(0),
      };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw storageFailure(`cannot read ${key}`, error);
    }
  }

  async get(key: string): Promise<{ info: ObjectInfo; body: ReadableStream<Uint8Array> } | null> {
    try {
      const object = await this.#client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: key }),
      );
      return {
        info: {
          key,
          size: object.ContentLength ?? 0,
          etag: stripQuotes(object.ETag),
          lastModified: object.LastModified ?? new Date(0),
        },
        body: toWebStream(object.Body),
      };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw storageFailure(`cannot read ${key}`, error);
    }
  }

  async delete(key: string): Promise<void> {
    try {
      await this.#client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
    } catch (error) {
      if (isNotFound(error)) return;
      throw storageFailure(`cannot delete ${key}`, error);
    }
  }

  async list(prefix: string, options: ListOptions = {}): Promise<ListPage> {
    const limit = Math.max(1, Math.min(options.limit ?? 1000, 1000));
    try {
      const page = await this.#client.send(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: prefix,
          MaxKeys: limit,
          ContinuationToken: options.cursor ?? undefined,
          StartAfter: options.cursor ? undefined : options.startAfter ?? undefined,
        }),
      );
      const objects = (page.Contents ?? []).flatMap((object) =>
        object.Key === undefined ? [] : [{
          key: object.Key,
          size: object.Size ?? 0,
          etag: stripQuotes(object.ETag),
          lastModified: wholeSeconds(object.LastModified),
        }]
      );
      return {
        objects,
        nextCursor: page.IsTruncated ? page.NextContinuationToken ?? null : null,
      };
    } catch (error) {
      throw storageFailure(`cannot list ${prefix}`, error);
    }
  }

  async presignPut(key: string, options: PresignOptions): Promise<string> {
    try {
      const direct = await (this.#direct ??= this.#checkDirect());
      return direct === null
        ? await this.#presignWithSdk(key, options)
        : this.#presignDirect(direct, key, options);
    } catch (error) {
      throw storageFailure(`cannot sign an upload URL for ${key}`, error);
    }
  }

  #presignWithSdk(key: string, options: PresignOptions, signingDate?: Date): Promise<string> {
    const { expiresInSeconds, contentLength } = options;
    const signableHeaders = new Set(["content-type"]);
    if (contentLength !== undefined) signableHeaders.add("content-length");
    const command = new PutObjectCommand({
      Bucket: this.bucket,
      Key: key,
      ContentType: CONTENT_TYPE,
      ContentLength: contentLength,
    });
    return getSignedUrl(this.#presigner, command, {
      expiresIn: expiresInSeconds,
      signableHeaders,
      signingDate,
    });
  }

  #presignDirect(direct: DirectPresign, key: string, options: PresignOptions, now?: Date): string {
    const { expiresInSeconds, contentLength } = options;
    return direct.signer.presign({
      method: "PUT",
      origin: direct.origin,
      path: `${direct.prefix}/${uriEncodePath(key)}`,
      headers: contentLength === undefined
        ? { "content-type": CONTENT_TYPE }
        : { "content-type": CONTENT_TYPE, "content-length": String(contentLength) },
      query: PUT_QUERY,
      expiresInSeconds,
      now,
    });
  }

  /**
   * The SDK's presigner runs its whole middleware stack and async hashes for each URL; a direct
   * signer is over ten times faster. Used only with static credentials (those of the provider
   * chain expire and may carry a temporary security token), taking the endpoint, addressing
   * style and signing region from URLs the SDK signs once, and only if it reproduces those URLs
   * byte for byte.
   */
  #checkDirect(): Promise<DirectPresign | null> {
    const { accessKeyId, secretAccessKey } = this.#options;
    if (accessKeyId === undefined || secretAccessKey === undefined) return Promise.resolve(null);
    const check = async () => {
      const now = new Date();
      const plain = { expiresInSeconds: 60 };
      const sized = { expiresInSeconds: 60, contentLength: 1 };
      const expected = [
        await this.#presignWithSdk(PROBE_KEY, plain, now),
        await this.#presignWithSdk(PROBE_KEY, sized, now),
      ];
      const base = expected[0].slice(0, expected[0].indexOf("?"));
      const pathAt = base.indexOf("/", base.indexOf("//") + 2);
      if (pathAt === -1 || !base.endsWith(`/${PROBE_KEY}`)) return null;
      // `{accessKeyId}/{date}/{region}/{service}/aws4_request`
      const scope = new URL(expected[0]).searchParams.get("X-Amz-Credential")?.split("/") ?? [];
      if (scope.length < 5) return null;
      const [region, service] = scope.slice(-3, -1);
      const direct = {
        signer: new SigV4Presigner({ accessKeyId, secretAccessKey }, { region, service }),
        origin: base.slice(0, pathAt),
        prefix: base.slice(pathAt, -PROBE_KEY.length - 1),
      };
      const actual = [
        this.#presignDirect(direct, PROBE_KEY, plain, now),
        this.#presignDirect(direct, PROBE_KEY, sized, now),
      ];
      return actual[0] === expected[0] && actual[1] === expected[1] ? direct : null;
    };
    return check().catch(() => {
      // The SDK path reports the failure; check again on the next URL.
      this.#direct = null;
      return null;
    });
  }

  sweep(): Promise<number> {
    return sweepMultipartUploads(this.#client, this.bucket);
  }

  /** Releases the SDK clients this store created (their sockets and timers). */
  close(): Promise<void> {
    for (const client of this.#owned.splice(0)) client.destroy();
    return Promise.resolve();
  }
}
