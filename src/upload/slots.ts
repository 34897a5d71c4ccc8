/**
 * Caps on request bodies streaming at once (direct uploads and local upload URLs), checked
 * before a body is read. Each body holds its batch buffers and, on S3, its parts in memory, so
 * the global cap bounds the service's memory: one more answers 503 with `Retry-After`. Within
 * it, one organization may stream `maxPerOrg` bodies at once, so that a tenant trickling many
 * slow uploads cannot take every slot from the others: its next one answers 429
 * `too_many_uploads`, with a `Retry-After` estimated from how its bodies are arriving.
 *
 * @module
 */
import { ServiceError } from "../errors.ts";
import { ApiError } from "../http/errors.ts";

/** Options of `UploadSlots`. */
export interface UploadSlotsOptions {
  /** Bodies streaming at once; one more gets 503. 0: no cap. */
  max: number;
  /** Bodies one organization streams at once; one more gets 429. 0 (the default): no cap. */
  maxPerOrg?: number;
}

/** The body a slot is taken for, as the estimate of when the next slot frees reads it. */
export interface SlotBody {
  /** Its declared length; null when it declares none (chunked). */
  declaredBytes: number | null;
  /** The bytes received so far. */
  received: { readonly bytes: number };
}

interface Held {
  body: SlotBody;
  /** When the slot was taken (`performance.now()`). */
  since: number;
}

/** The `Retry-After` of a 429 when no body of the organization tells when it will end. */
const RETRY_UNKNOWN_SECONDS = 5;
/** Bounds of the `Retry-After` of a 429, in seconds. */
const RETRY_MIN_SECONDS = 1;
const RETRY_MAX_SECONDS = 60;

/**
 * The seconds until the first of `held` is likely to end: the remaining bytes of each body with
 * a declared length at its average rate so far, the smallest of those, within 1-60 s.
 */
function secondsUntilOneEnds(held: Iterable<Held>, now = performance.now()): number {
  let soonest = Infinity;
  for (const { body, since } of held) {
    const received = body.received.bytes;
    if (body.declaredBytes === null || received === 0 || now <= since) continue;
    const bytesPerSecond = received / ((now - since) / 1000);
    soonest = Math.min(soonest, Math.max(0, body.declaredBytes - received) / bytesPerSecond);
  }
  if (soonest === Infinity) return RETRY_UNKNOWN_SECONDS;
  return Math.min(RETRY_MAX_SECONDS, Math.max(RETRY_MIN_SECONDS, Math.ceil(soonest)));
}

export class UploadSlots {
  readonly #max: number;
  readonly #maxPerOrg: number;
  #used = 0;
  /** The slots each organization holds now; an organization holding none has no entry. */
  readonly #byOrg = new Map<string, Set<Held>>();

  constructor(options: UploadSlotsOptions) {
    this.#max = options.max;
    this.#maxPerOrg = options.maxPerOrg ?? 0;
  }

  get inUse(): number {
    return this.#used;
  }

  /**
   * Takes a slot for `req`'s body, sent for `orgId`, and answers its release (safe to call
   * twice). 429 when the organization holds its share, else 503 when none is left; the body is
   * then cancelled unread.
   */
  take(req: Request, orgId: string, body: SlotBody): () => void {
    let mine = this.#byOrg.get(orgId);
    if (this.#maxPerOrg > 0 && mine !== undefined && mine.size >= this.#maxPerOrg) {
      req.body?.cancel().catch(() => {});
      const seconds = secondsUntilOneEnds(mine);
      throw new ServiceError(
        "too_many_uploads",
        `This organization already sends ${this.#maxPerOrg} uploads at once, the most this service takes from one organization; retry after ${seconds} s, once one of them has ended`,
        { retryAfterSeconds: seconds },
      );
    }
    if (this.#max > 0 && this.#used >= this.#max) {
      req.body?.cancel().catch(() => {});
      throw new ApiError(
        "service_unavailable",
        `${this.#max} uploads are already in progress; retry after a few seconds`,
        { "retry-after": "5", connection: "close" },
      );
    }
    if (mine === undefined) {
      mine = new Set();
      this.#byOrg.set(orgId, mine);
    }
    const held: Held = { body, since: performance.now() };
    mine.add(held);
    this.#used++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#used--;
      mine.delete(held);
      if (mine.size === 0 && this.#byOrg.get(orgId) === mine) this.#byOrg.delete(orgId);
    };
  }
}
