/**
 * The command line of `main.ts upload`: flags in `--name value` or `--name=value` form, one file.
 */

export const UPLOAD_USAGE =
  `usage: main.ts upload FILE --experiment-id ID [--two-step] [--history] [--url URL] [--key KEY] [--json]

  FILE                  the CSV to deliver (streamed, never read whole)
  --experiment-id ID    the experiment (A-Z a-z 0-9 . _ -, at most 128 characters)
  --two-step            initiate an upload URL, then PUT the file to it (default: direct upload)
  --history             append _YYYYMMDD (today, UTC) to the id, keeping one dataset per day
  --url URL             the service's base URL, without /api/v1 (default: ABN_PUBLIC_URL)
  --key KEY             the API key (default: ABN_API_KEY; prefer the variable: flags show in ps)
  --json                print the server's final answer as JSON (a refusal as {"error": …})
  --retries N           retries after a 5xx, 429 or network error (default 4)

exit status: 0 stored, 1 refused or failed, 2 usage error`;

export interface UploadArgs {
  file: string;
  experimentId: string;
  twoStep: boolean;
  history: boolean;
  url?: string;
  key?: string;
  json: boolean;
  retries?: number;
  help: boolean;
}

/** A command line that cannot be run; answered with exit status 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

const VALUE_FLAGS = new Set(["--experiment-id", "--url", "--key", "--retries"]);
const SWITCHES = new Set(["--two-step", "--history", "--json", "--help", "-h"]);

/** Parses the arguments after `upload`; throws UsageError. */
export function parseUploadArgs(args: string[]): UploadArgs {
  const values = new Map<string, string>();
  const switches = new Set<string>();
  const files: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--") {
      files.push(...args.slice(i + 1));
      break;
    }
    if (!arg.startsWith("-") || arg === "-") {
      files.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = eq === -1 ? arg : arg.slice(0, eq);
    if (SWITCHES.has(name) && eq === -1) {
      switches.add(name);
      continue;
    }
    if (!VALUE_FLAGS.has(name)) throw new UsageError(`Unknown option: ${name}`);
    const value = eq === -1 ? args[++i] : arg.slice(eq + 1);
    if (value === undefined || value === "") throw new UsageError(`Missing value for ${name}`);
    if (values.has(name)) throw new UsageError(`Give ${name} once`);
    values.set(name, value);
  }
  const help = switches.has("--help") || switches.has("-h");
  if (help) {
    return { file: "", experimentId: "", twoStep: false, history: false, json: false, help };
  }
  if (files.length !== 1) {
    throw new UsageError(
      files.length === 0 ? "Missing FILE" : `Give one FILE, not ${files.length}`,
    );
  }
  const experimentId = values.get("--experiment-id");
  if (experimentId === undefined) throw new UsageError("Missing --experiment-id");
  const retriesText = values.get("--retries");
  if (retriesText !== undefined && !/^\d{1,2}$/.test(retriesText)) {
    throw new UsageError(`Invalid --retries ${retriesText}: expected a whole number from 0 to 99`);
  }
  return {
    file: files[0],
    experimentId,
    twoStep: switches.has("--two-step"),
    history: switches.has("--history"),
    url: values.get("--url"),
    key: values.get("--key"),
    json: switches.has("--json"),
    retries: retriesText === undefined ? undefined : Number(retriesText),
    help: false,
  };
}

/** `id_YYYYMMDD` for the UTC day of `now` (one dataset per day, as docs/operations.md describes for nightly deliveries). */
export function historyId(experimentId: string, now: Date): string {
  const day = now.toISOString().slice(0, 10).replaceAll("-", "");
  return `${experimentId}_${day}`;
}

/** Checks a base URL (http or https, without /api/v1); answers it without a trailing slash. */
export function parseBaseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`Invalid --url ${raw}: expected an http(s) URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UsageError(`Invalid --url ${raw}: expected an http(s) URL`);
  }
  if (url.search || url.hash) {
    throw new UsageError(`Invalid --url ${raw}: give the base URL without a query`);
  }
  const base = url.href.replace(/\/+$/, "");
  if (/\/api\/v1$/.test(base)) {
    throw new UsageError(`Invalid --url ${raw}: give the service's base URL without /api/v1`);
  }
  return base;
}
