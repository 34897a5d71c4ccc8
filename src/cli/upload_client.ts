/**
 * `main.ts upload FILE --experiment-id ID …`: delivers a CSV to the service by the direct route
 * or the two-step route, streaming the file from disk with a progress display and retrying what
 * a retry can fix (5xx, 429, network errors). Exit status: 0 stored, 1 refused or failed, 2 usage.
 */
import type { Config } from "../config.ts";
import {
  historyId,
  parseBaseUrl,
  parseUploadArgs,
  UPLOAD_USAGE,
  UsageError,
} from "./_upload_args.ts";
import type { UploadOptions } from "./_upload_dataset.ts";
import { uploadDataset } from "./_upload_dataset.ts";
import { UploadFailed } from "./_answers.ts";

export type { UploadOptions, UploadResult } from "./_upload_dataset.ts";
export { uploadDataset } from "./_upload_dataset.ts";
export { UploadFailed } from "./_answers.ts";
export { UPLOAD_USAGE } from "./_upload_args.ts";

export interface UploadIo {
  out: (line: string) => void;
  err: (line: string) => void;
  /** Progress text, written as is. */
  progress: (text: string) => void;
  /** Whether stderr is a terminal (a redrawn bar) or not (plain lines). */
  terminal: boolean;
  now: () => Date;
}

const encoder = new TextEncoder();

function writeAll(file: { writeSync(p: Uint8Array): number }, text: string): void {
  let bytes = encoder.encode(text);
  while (bytes.length > 0) bytes = bytes.subarray(file.writeSync(bytes));
}

const defaultIo: UploadIo = {
  out: (line) => console.log(line),
  err: (line) => console.error(line),
  progress: (text) => writeAll(Deno.stderr, text),
  terminal: Deno.stderr.isTerminal(),
  now: () => new Date(),
};

function integerEnv(env: Record<string, string | undefined>, name: string): number | undefined {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === "") return undefined;
  if (!/^\d{1,9}$/.test(raw)) {
    throw new UsageError(`Invalid ${name}=${JSON.stringify(raw)}: expected milliseconds`);
  }
  return Number(raw);
}

/**
 * Runs `main.ts upload …`; answers the exit status (0 stored, 1 refused or failed, 2 usage).
 * Reads `ABN_API_KEY` and `ABN_UPLOAD_RETRY_BASE_MS` from `env`; the default URL is the
 * configuration's public URL.
 */
export async function runUpload(
  args: string[],
  config: Pick<Config, "publicUrl">,
  env: Record<string, string | undefined>,
  io: UploadIo = defaultIo,
): Promise<number> {
  let apiKey = "";
  // The key never reaches the output, whatever a message quotes.
  const redact = (text: string) => apiKey ? text.replaceAll(apiKey, "abn_…") : text;
  const out = (line: string) => io.out(redact(line));
  const err = (line: string) => io.err(redact(line));
  let options: UploadOptions;
  let asJson = false;
  try {
    const parsed = parseUploadArgs(args);
    if (parsed.help) {
      out(UPLOAD_USAGE);
      return 0;
    }
    asJson = parsed.json;
    apiKey = parsed.key ?? env.ABN_API_KEY?.trim() ?? "";
    if (apiKey === "") throw new UsageError("No API key: set ABN_API_KEY or pass --key");
    const baseUrl = parseBaseUrl(parsed.url ?? config.publicUrl);
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(parsed.file);
    } catch (error) {
      throw new UsageError(
        `Cannot read ${parsed.file}: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    if (!info.isFile) throw new UsageError(`Cannot read ${parsed.file}: not a file`);
    options = {
      file: parsed.file,
      experimentId: parsed.history ? historyId(parsed.experimentId, io.now()) : parsed.experimentId,
      baseUrl,
      apiKey,
      twoStep: parsed.twoStep,
      retry: { retries: parsed.retries, baseMs: integerEnv(env, "ABN_UPLOAD_RETRY_BASE_MS") },
      progress: { terminal: io.terminal, write: io.progress },
      log: err,
    };
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    err(`${error.message}\n\n${UPLOAD_USAGE}`);
    return 2;
  }

  try {
    const result = await uploadDataset(options);
    if (asJson) {
      out(JSON.stringify(
        result.route === "direct" ? result.answer : {
          experiment_id: result.experimentId,
          route: result.route,
          size_bytes: result.sizeBytes,
          size_mb: result.sizeBytes / 1048576,
          sha256: result.sha256,
          ...result.answer,
        },
      ));
      return 0;
    }
    const rows = typeof result.answer.rows === "number" ? `, ${result.answer.rows} rows` : "";
    out(
      `Stored ${options.file} as experiment ${result.experimentId} (${
        result.route === "direct" ? "direct upload" : "two-step upload"
      })`,
    );
    out(`experiment_id: ${result.experimentId}`);
    out(`size: ${result.sizeBytes} bytes (${(result.sizeBytes / 1048576).toFixed(2)} MB)${rows}`);
    out(`sha256: ${result.sha256}`);
    if (typeof result.answer.message === "string") out(`message: ${result.answer.message}`);
    return 0;
  } catch (error) {
    // UploadFailed carries the server's answer; anything else (a file that vanished, a missing
    // permission) is reported the same way rather than as a stack trace.
    const message = error instanceof Error ? error.message : String(error);
    err(`error: ${message}`);
    if (asJson) {
      // With --json, a refusal is an answer too: the server's status and code, and the message.
      const failed = error instanceof UploadFailed ? error : null;
      out(JSON.stringify({
        error: {
          status: failed?.status ?? null,
          code: failed?.code ?? null,
          message,
          request_id: failed?.requestId ?? null,
        },
      }));
    }
    return 1;
  }
}
