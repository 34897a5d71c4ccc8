/**
 * The one structured logger: every line is one JSON object with `time`, `level` and `msg` first,
 * then the caller's fields. Lines go to stdout in batches (one write per few milliseconds instead
 * of one per request), which keeps logging off the request path's cost under load.
 */

export type LogLevel = "info" | "warn" | "error";
export type LogFields = Record<string, unknown>;
/** Where finished lines go (tests collect them; the service writes stdout). */
export type LogSink = (line: string) => void;

export interface Logger {
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** Writes out what is buffered now. */
  flush(): void;
}

/** Options of {@linkcode createLogger}. */
export interface LoggerOptions {
  /** Receives each line; default: batched writes to stdout. */
  sink?: LogSink;
}

const encoder = new TextEncoder();

/**
 * Writes `text` and a newline to stdout in one go: several times cheaper than `console.log`
 * for a large batch. A closed or broken stdout loses the lines, never the request.
 */
export function writeStdout(text: string): void {
  const bytes = encoder.encode(`${text}\n`);
  try {
    for (let at = 0; at < bytes.length;) at += Deno.stdout.writeSync(bytes.subarray(at));
  } catch { /* stdout is gone: nothing to report it to */ }
}

/** Collects lines and writes them together within 25 ms (or at 512 lines). */
export function createBatchedSink(
  write: (text: string) => void = writeStdout,
): LogSink & { flush(): void } {
  let lines: string[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    if (lines.length === 0) return;
    const text = lines.join("\n");
    lines = [];
    write(text);
  };
  const sink = (line: string) => {
    lines.push(line);
    if (lines.length >= 512) flush();
    else if (timer === undefined) {
      timer = setTimeout(flush, 25);
      Deno.unrefTimer(timer as unknown as number);
    }
  };
  return Object.assign(sink, { flush });
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const batched = options.sink ? null : createBatchedSink();
  const sink: LogSink = options.sink ?? batched!;
  const line = (level: LogLevel, msg: string, fields?: LogFields) => {
    sink(JSON.stringify({ time: isoNow(), level, msg, ...fields }));
  };
  return {
    info: (msg, fields) => line("info", msg, fields),
    warn: (msg, fields) => line("warn", msg, fields),
    error: (msg, fields) => line("error", msg, fields),
    flush: () => batched?.flush(),
  };
}

/** The message and stack of a thrown value, for an `error` field. */
export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}\n${error.stack}` : String(error);
}

/** The last ISO timestamp made: lines within one millisecond share it. */
let isoMs = NaN;
let isoText = "";

function isoNow(): string {
  const ms = Date.now();
  if (ms !== isoMs) {
    isoText = new Date(ms).toISOString();
    isoMs = ms;
  }
  return isoText;
}
