/**
 * One upload, by the direct route (`POST /api/v1/datasets/upload/`) or the two-step route
 * (`POST /api/v1/datasets/initiate/`, then `PUT upload_url`), streaming the file from disk.
 */
import { createHash } from "node:crypto";
import { ProgressReporter } from "./_progress.ts";
import type { RetryPolicy } from "./_retry.ts";
import { retryPolicy, withRetries } from "./_retry.ts";
import type { HttpAnswer } from "./_send_file.ts";
import { FileChangedError, NetworkError, sendFile } from "./_send_file.ts";
import { describe, failure, UploadFailed } from "./_answers.ts";

export interface UploadOptions {
  /** Path of the CSV file. */
  file: string;
  experimentId: string;
  /** The service's base URL, without `/api/v1`. */
  baseUrl: string;
  apiKey: string;
  /** Initiate + PUT instead of the direct upload; default false. */
  twoStep?: boolean;
  /** Retry policy overrides (tests shorten the delays). */
  retry?: Partial<RetryPolicy>;
  /** Progress display; default none. */
  progress?: { terminal: boolean; write: (text: string) => void };
  /** Notices (retries, refreshed URLs); default none. */
  log?: (line: string) => void;
  /** Runs before each PUT of the two-step route, with the number of URLs refreshed so far. */
  beforePut?: (refreshes: number) => Promise<void>;
  /** Most fresh upload URLs fetched after a 403 from the PUT; default 3. */
  maxRefreshes?: number;
}

export interface UploadResult {
  route: "direct" | "two_step";
  experimentId: string;
  sizeBytes: number;
  /** SHA-256 of the bytes sent (hex), checked against the server's on the direct route. */
  sha256: string;
  /** The server's final answer: the 201 body, or the grant and the PUT's ETag. */
  answer: Record<string, unknown>;
}

async function postJson(url: string, apiKey: string, body: unknown): Promise<HttpAnswer> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
    return { status: res.status, headers: res.headers, text: await res.text() };
  } catch (error) {
    throw new NetworkError(error instanceof Error ? error.message : String(error), {
      cause: error,
    });
  }
}

function parseJson(answer: HttpAnswer, what: string): Record<string, unknown> {
  try {
    const value = JSON.parse(answer.text);
    if (typeof value === "object" && value !== null) return value;
  } catch { /* below */ }
  throw new UploadFailed(`${what}: HTTP ${answer.status} with a body that is not a JSON object`, {
    status: answer.status,
  });
}

/** Uploads one file; throws UploadFailed when the service refuses it or cannot be reached. */
export async function uploadDataset(options: UploadOptions): Promise<UploadResult> {
  const policy = retryPolicy(options.retry);
  const log = options.log ?? (() => {});
  const size = (await Deno.stat(options.file)).size;
  const progress = options.progress
    ? new ProgressReporter({ total: size, ...options.progress })
    : undefined;
  let hash = createHash("sha256");

  const send = (url: URL, method: "POST" | "PUT", headers: Record<string, string>) => {
    hash = createHash("sha256");
    progress?.start();
    return sendFile(url, options.file, size, {
      method,
      headers,
      onChunk: (chunk) => hash.update(chunk),
      onProgress: (sent) => progress?.update(sent),
    }).finally(() => progress?.finish());
  };

  try {
    if (!options.twoStep) {
      const url = new URL(`${options.baseUrl}/api/v1/datasets/upload/`);
      url.searchParams.set("experiment_id", options.experimentId);
      const answer = await withRetries("upload", policy, log, () =>
        send(url, "POST", {
          authorization: `Bearer ${options.apiKey}`,
          "content-type": "text/csv",
        }));
      if (answer.status !== 201) throw failure(answer, "upload");
      const body = parseJson(answer, "upload");
      const sha256 = hash.digest("hex");
      if (typeof body.sha256 === "string" && body.sha256 !== sha256) {
        throw new UploadFailed(
          `upload corrupted: the server stored sha256 ${body.sha256}, the file sent has ${sha256}`,
        );
      }
      return {
        route: "direct",
        experimentId: options.experimentId,
        sizeBytes: size,
        sha256,
        answer: body,
      };
    }

    const maxRefreshes = options.maxRefreshes ?? 3;
    for (let refreshes = 0;; refreshes++) {
      const granted = await withRetries(
        "initiate",
        policy,
        log,
        () =>
          postJson(`${options.baseUrl}/api/v1/datasets/initiate/`, options.apiKey, {
            experiment_id: options.experimentId,
            size_bytes: size,
          }),
      );
      if (granted.status !== 200) throw failure(granted, "initiate");
      const grant = parseJson(granted, "initiate");
      if (typeof grant.upload_url !== "string") {
        throw new UploadFailed("initiate answered without an upload_url");
      }
      const extra = typeof grant.headers === "object" && grant.headers !== null
        ? grant.headers as Record<string, string>
        : {};
      await options.beforePut?.(refreshes);
      // No Authorization header: the URL carries the permission.
      const put = await withRetries(
        "PUT",
        policy,
        log,
        () =>
          send(new URL(grant.upload_url as string), "PUT", {
            "content-type": "text/csv",
            ...extra,
          }),
      );
      if (put.status === 403 && refreshes < maxRefreshes) {
        log(`PUT: ${describe(put)}; fetching a fresh upload URL`);
        continue;
      }
      if (put.status < 200 || put.status > 299) throw failure(put, "PUT");
      const { upload_url: _, ...rest } = grant;
      const etag = put.headers.get("etag")?.replace(/^"|"$/g, "");
      return {
        route: "two_step",
        experimentId: options.experimentId,
        sizeBytes: size,
        sha256: hash.digest("hex"),
        answer: { ...rest, status: put.status, ...(etag ? { etag } : {}) },
      };
    }
  } catch (error) {
    if (error instanceof FileChangedError) throw new UploadFailed(error.message);
    throw error;
  }
}
