/**
 * Reads at most a given number of bytes of a response body and cancels the rest, so an endpoint
 * that answers with a large or endless body costs the sender no more than the limit.
 *
 * @module
 */

/** What {@linkcode readAtMost} read. */
export interface BoundedRead {
  /** The first bytes of the body, at most the limit. */
  bytes: Uint8Array;
  /** The body had more (it was cancelled), or it failed or was aborted before its end. */
  cut: boolean;
}

/**
 * Reads `body` up to `limit` bytes, then cancels it. A body that fails or is aborted while read
 * answers what arrived before (`cut`); a null body is empty.
 */
export async function readAtMost(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
): Promise<BoundedRead> {
  if (body === null) return { bytes: new Uint8Array(0), cut: false };
  const reader = body.getReader();
  const kept = new Uint8Array(limit);
  let length = 0;
  let cut = false;
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      const room = limit - length;
      kept.set(value.subarray(0, room), length);
      length += Math.min(room, value.length);
      if (value.length > room) {
        cut = true;
        break;
      }
    }
  } catch {
    cut = true;
  }
  if (cut) await reader.cancel().catch(() => {});
  reader.releaseLock();
  return { bytes: kept.subarray(0, length), cut };
}
