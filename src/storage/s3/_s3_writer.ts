/**
 * A pending S3 object. Every non-empty object is stored as a multipart upload, so nothing is
 * visible under its key before CompleteMultipartUpload: a store that keeps whatever bytes a cut
 * PutObject delivered (s3rver does) can still never show a truncated dataset.
 *
 * Up to one part is held in memory; `commit()` then sends it as the only part of a multipart
 * upload. Beyond that the bytes flow through a ReadableStream into lib-storage's `Upload`, which
 * uploads the parts while the body streams; its stream is closed only in `commit()`.
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  type CreateMultipartUploadCommandOutput,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { createHash } from "node:crypto";
import { Upload } from "@aws-sdk/lib-storage";
import type { ObjectInfo, ObjectWriter } from "../object_store.ts";
import { StorageError } from "../object_store.ts";
import { storageFailure } from "./_s3_errors.ts";
import type { S3Like } from "./_s3_like.ts";

export interface S3WriterOptions {
  client: S3Like;
  bucket: string;
  key: string;
  /** Bytes per multipart part; at least 5 MiB. */
  partSize: number;
  /** Parts uploaded at once; memory stays near `partSize × (queueSize + 1)`. */
  queueSize: number;
  /** Bytes the feeding stream holds before `write()` waits. */
  bufferBytes: number;
}

/** Every object the service stores is a CSV dataset. */
const CONTENT_TYPE = "text/csv";

/**
 * Adds `Content-MD5` to a body that lib-storage hands over whole (the single PutObject and each
 * part): a store then refuses a body cut short in transit instead of keeping the truncated bytes.
 */
function withIntegrity(input: { Body?: unknown; ContentMD5?: string }): void {
  if (input.ContentMD5 !== undefined || !(input.Body instanceof Uint8Array)) return;
  input.ContentMD5 = createHash("md5").update(input.Body).digest("base64");
}

interface Sender {
  send(...args: unknown[]): Promise<unknown>;
}

type State = "open" | "committing" | "committed" | "aborted" | "failed";

export class S3Writer implements ObjectWriter {
  #options: S3WriterOptions;
  #state: State = "open";
  #bytes = 0;
  #upload: Upload | null = null;
  #controller: ReadableStreamDefaultController<Uint8Array> | null = null;
  /** Settles when lib-storage is done; never rejects (the failure is kept in `#failure`). */
  #finished: Promise<void> = Promise.resolve();
  #failure: unknown = null;
  #room: { resolve(): void; reject(error: unknown): void } | null = null;
  #commit: Promise<ObjectInfo> | null = null;
  /** Requests lib-storage has in flight, and the multipart upload it created, for `abort()`. */
  #inFlight = new Set<Promise<unknown>>();
  #uploadId: string | null = null;
  #uploadAborted = false;
  /** Bytes not yet handed to lib-storage: at most one part, copies the writer owns. */
  #held: Uint8Array[] = [];
  #heldBytes = 0;

  constructor(options: S3WriterOptions) {
    this.#options = options;
  }

  async write(chunk: Uint8Array): Promise<void> {
    if (this.#state !== "open") {
      throw this.#failure !== null
        ? storageFailure(`cannot store ${this.#options.key}`, this.#failure)
        : new StorageError(`Cannot write to ${this.#options.key}: the object was already finished`);
    }
    if (chunk.byteLength === 0) return;
    // The caller may reuse its buffer once write() resolves; the upload keeps ours.
    const copy = chunk.slice();
    this.#bytes += chunk.byteLength;
    let controller = this.#controller;
    if (controller === null) {
      this.#held.push(copy);
      this.#heldBytes += copy.byteLength;
      // lib-storage only sends a single PutObject for a body of one part; hand it more.
      if (this.#heldBytes <= this.#options.partSize) return;
      controller = this.#start();
      for (const held of this.#held) controller.enqueue(held);
      this.#held = [];
      this.#heldBytes = 0;
    } else {
      controller.enqueue(copy);
    }
    if ((controller.desiredSize ?? 0) > 0) return;
    await new Promise<void>((resolve, reject) => {
      this.#room = { resolve, reject };
    });
  }

  commit(): Promise<ObjectInfo> {
    if (this.#state === "failed" && this.#failure !== null) {
      return Promise.reject(storageFailure(`cannot store ${this.#options.key}`, this.#failure));
    }
    if (this.#state !== "open") {
      return Promise.reject(
        new StorageError(`Cannot commit ${this.#options.key}: the object was already finished`),
      );
    }
    this.#state = "committing";
    this.#commit = this.#complete().then(
      (info) => {
        this.#state = "committed";
        return info;
      },
      (error) => {
        this.#state = "failed";
        throw storageFailure(`cannot store ${this.#options.key}`, error);
      },
    );
    return this.#commit;
  }

  async abort(): Promise<void> {
    if (this.#state === "committing") {
      // The caller already chose to commit; let that finish rather than race S3's completion.
      await this.#commit?.catch(() => {});
      return;
    }
    if (this.#state !== "open") return;
    this.#state = "aborted";
    this.#held = [];
    this.#heldBytes = 0;
    const reason = new StorageError(`The write to ${this.#options.key} was aborted`);
    this.#wake(reason);
    if (this.#upload === null) return;
    try {
      this.#controller?.error(reason);
    } catch { /* the stream already ended */ }
    await this.#upload.abort();
    await this.#finished;
    await this.#abortMultipart();
  }

  #start(): ReadableStreamDefaultController<Uint8Array> {
    const { client, bucket, key, partSize, queueSize, bufferBytes } = this.#options;
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
      },
      pull: () => this.#wake(null),
    }, new ByteLengthQueuingStrategy({ highWaterMark: bufferBytes }));
    this.#upload = new Upload({
      // `Upload` only calls `send` and reads `config`, which is all `S3Like` promises.
      client: this.#tracking(client) as S3Client,
      params: { Bucket: bucket, Key: key, Body: body, ContentType: CONTENT_TYPE },
      partSize,
      queueSize,
    });
    this.#finished = this.#upload.done().then(
      () => {},
      (error) => {
        if (this.#state === "aborted") return;
        if (this.#state === "open") this.#state = "failed";
        this.#failure = error;
        this.#wake(error);
        try {
          this.#controller?.error(error);
        } catch { /* the stream already ended */ }
      },
    );
    return this.#controller!;
  }

  async #complete(): Promise<ObjectInfo> {
    const { client, bucket, key } = this.#options;
    if (this.#upload === null && this.#heldBytes > 0) {
      await this.#sendOnePart();
    } else if (this.#upload === null) {
      // Nothing was written: lib-storage has hung on empty streams, and an empty body cannot
      // arrive cut short, so one plain PutObject stores the empty object.
      await client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: new Uint8Array(0),
          ContentLength: 0,
          ContentType: CONTENT_TYPE,
        }),
      );
    } else {
      this.#controller!.close();
      await this.#finished;
      if (this.#failure !== null) throw this.#failure;
    }
    const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    return {
      key,
      size: head.ContentLength ?? this.#bytes,
      etag: (head.ETag ?? "").replaceAll('"', ""),
      lastModified: head.LastModified ?? new Date(),
    };
  }

  /** Stores the held bytes as the one part of a multipart upload, aborting it on failure. */
  async #sendOnePart(): Promise<void> {
    const { client, bucket, key } = this.#options;
    const body = new Uint8Array(this.#heldBytes);
    let at = 0;
    for (const held of this.#held) {
      body.set(held, at);
      at += held.byteLength;
    }
    this.#held = [];
    this.#heldBytes = 0;
    const created = await client.send(
      new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ContentType: CONTENT_TYPE }),
    ) as CreateMultipartUploadCommandOutput;
    const uploadId = created.UploadId;
    if (!uploadId) throw new StorageError(`S3 returned no upload id for ${key}`);
    try {
      const input = {
        Bucket: bucket,
        Key: key,
        UploadId: uploadId,
        PartNumber: 1,
        Body: body,
        ContentLength: body.byteLength,
      };
      withIntegrity(input);
      const part = await client.send(new UploadPartCommand(input));
      await client.send(
        new CompleteMultipartUploadCommand({
          Bucket: bucket,
          Key: key,
          UploadId: uploadId,
          MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] },
        }),
      );
    } catch (error) {
      await client.send(
        new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }),
      ).catch(() => {
        // As in #abortMultipart: sweep() removes parts left behind after 24 hours.
      });
      throw error;
    }
  }

  /** Lets a waiting `write()` go on (`error` null) or fail. */
  #wake(error: unknown): void {
    const room = this.#room;
    this.#room = null;
    if (room === null) return;
    if (error === null) room.resolve();
    else room.reject(storageFailure(`cannot store ${this.#options.key}`, error));
  }

  /** A view of the client that remembers lib-storage's requests and its multipart upload id. */
  #tracking(client: S3Like): S3Like {
    const send = (command: unknown, ...rest: unknown[]) => {
      if (command instanceof PutObjectCommand || command instanceof UploadPartCommand) {
        withIntegrity(command.input as { Body?: unknown; ContentMD5?: string });
      }
      const sent = (client as unknown as Sender).send(command, ...rest);
      if (command instanceof CreateMultipartUploadCommand) {
        sent.then((output) => {
          this.#uploadId = (output as CreateMultipartUploadCommandOutput).UploadId ?? null;
        }, () => {});
      } else if (command instanceof AbortMultipartUploadCommand) {
        sent.then(() => this.#uploadAborted = true, () => {});
      }
      const tracked = sent.finally(() => this.#inFlight.delete(tracked));
      tracked.catch(() => {});
      this.#inFlight.add(tracked);
      return sent;
    };
    return { config: client.config, send: send as S3Like["send"] };
  }

  /**
   * `Upload.abort()` rejects `done()` at once while parts may still be in flight, and it aborts
   * the multipart upload in the background; wait for those requests and make sure it happened.
   */
  async #abortMultipart(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
    if (this.#uploadId === null || this.#uploadAborted) return;
    const { client, bucket, key } = this.#options;
    try {
      await client.send(
        new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: this.#uploadId }),
      );
      this.#uploadAborted = true;
    } catch {
      // Already gone (404), a store that cannot abort (s3rver: 501), or a network failure:
      // none of it is visible, and sweep() removes parts left behind after 24 hours.
    }
  }
}
