/**
 * Sends a file as a request body, streaming it from disk with `Content-Length` set.
 *
 * Why `node:http` and not `fetch`: Deno's fetch sends a stream body chunked and drops a
 * `Content-Length` header, but S3 refuses chunked PUTs (and a presigned URL may sign the length),
 * and the service's 413 answers before reading only when the length is declared. `node:http`
 * keeps the header, applies backpressure (`drain`), and hands over an early answer (a 400 or
 * 413 sent before the whole body) so the client stops sending.
 */
import http from "node:http";
import https from "node:https";

export interface SendFileOptions {
  method: "POST" | "PUT";
  /** Request headers; `content-length` is set from `size`. */
  headers: Record<string, string>;
  /** Sees every chunk as it is sent (hashing). */
  onChunk?: (chunk: Uint8Array) => void;
  /** Bytes handed to the connection so far. */
  onProgress?: (sent: number) => void;
  /** Nothing sent or received for this long aborts the request; default 120 000 ms. */
  idleTimeoutMs?: number;
}

export interface HttpAnswer {
  status: number;
  headers: Headers;
  text: string;
}

/** The connection failed or stalled: worth another attempt. */
export class NetworkError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "NetworkError";
  }
}

/** The file is not the size it had when the upload started. */
export class FileChangedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "FileChangedError";
  }
}

const MAX_ANSWER_BYTES = 1024 * 1024;

function answerHeaders(raw: http.IncomingHttpHeaders): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return headers;
}

/** `error` as the `NetworkError` a caller retries, unless it says the file changed. */
function asNetworkError(error: unknown): Error {
  if (error instanceof FileChangedError || error instanceof NetworkError) return error;
  return new NetworkError(error instanceof Error ? error.message : String(error), { cause: error });
}

/** Keeps the first MiB of the answer's body and hands the whole answer over once it ended. */
function readAnswer(
  res: http.IncomingMessage,
  done: (answer: HttpAnswer) => void,
  fail: (error: unknown) => void,
): void {
  const chunks: Uint8Array[] = [];
  let kept = 0;
  res.on("data", (chunk: Uint8Array) => {
    if (kept >= MAX_ANSWER_BYTES) return;
    chunks.push(chunk);
    kept += chunk.length;
  });
  res.on("end", () =>
    done({
      status: res.statusCode ?? 0,
      headers: answerHeaders(res.headers),
      text: new TextDecoder().decode(concat(chunks)),
    }));
  res.on("error", fail);
}

/** Resolves once `req` takes more bytes again, or closed. */
function drained(req: http.ClientRequest): Promise<void> {
  return new Promise<void>((done) => {
    const stop = () => {
      req.off("drain", stop);
      req.off("close", stop);
      done();
    };
    req.on("drain", stop);
    req.on("close", stop);
  });
}

/**
 * Writes the file's `size` bytes from `reader` to `req` until its end or `stopped()` (an answer
 * came first): true when every byte was written. A file that grew or shrank meanwhile throws.
 */
async function writeBody(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  req: http.ClientRequest,
  size: number,
  options: SendFileOptions,
  stopped: () => boolean,
): Promise<boolean> {
  let sent = 0;
  while (!stopped()) {
    const { done, value } = await reader.read();
    if (done) break;
    if (sent + value.length > size) {
      throw new FileChangedError(`The file grew while it was being sent (expected ${size} bytes)`);
    }
    options.onChunk?.(value);
    sent += value.length;
    if (!req.write(value)) await drained(req);
    options.onProgress?.(sent);
  }
  if (stopped()) return false;
  if (sent !== size) {
    throw new FileChangedError(
      `The file shrank while it was being sent (expected ${size} bytes, read ${sent})`,
    );
  }
  return true;
}

/** Streams `size` bytes of the file at `path` to `url`; answers the server's response. */
export async function sendFile(
  url: URL,
  path: string,
  size: number,
  options: SendFileOptions,
): Promise<HttpAnswer> {
  const file = await Deno.open(path, { read: true });
  const reader = file.readable.getReader();
  const transport = url.protocol === "https:" ? https : http;
  const idleTimeoutMs = options.idleTimeoutMs ?? 120_000;

  return await new Promise<HttpAnswer>((resolve, reject) => {
    let settled = false;
    let answered = false;
    let ended = false;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      reader.cancel().catch(() => {});
      // An answer before the whole body was sent: stop sending.
      if (!ended) req.destroy();
      fn();
    };
    const fail = (error: unknown) => settle(() => reject(asNetworkError(error)));

    const req = transport.request(url, {
      method: options.method,
      // A connection of its own, closed after the answer: nothing lingers in a pool.
      agent: false,
      headers: { ...options.headers, "content-length": String(size) },
    }, (res) => {
      answered = true;
      readAnswer(res, (answer) => settle(() => resolve(answer)), fail);
    });
    req.setTimeout(idleTimeoutMs, () => {
      req.destroy(new NetworkError(`No progress for ${Math.round(idleTimeoutMs / 1000)} s`));
    });
    // An error after the answer arrived (the server closed early) changes nothing.
    req.on("error", (error: Error) => {
      if (!answered) fail(error);
    });
    writeBody(reader, req, size, options, () => answered || settled || req.destroyed).then(
      (whole) => {
        if (!whole) return;
        ended = true;
        req.end();
      },
      (error) => {
        req.destroy();
        fail(error);
      },
    );
  });
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
