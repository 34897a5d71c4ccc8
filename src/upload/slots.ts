/**
 * A cap on request bodies streaming at once (direct uploads and local upload URLs). Each holds
 * its batch buffers and, on S3, its parts in memory, so the cap bounds the service's memory: one
 * more answers 503 with `Retry-After` before its body is read.
 */
import { ApiError } from "../http/errors.ts";

export class UploadSlots {
  readonly #max: number;
  #used = 0;

  /** `max` 0: no cap. */
  constructor(max: number) {
    this.#max = max;
  }

  get inUse(): number {
    return this.#used;
  }

  /** Takes a slot for `req`'s body and answers its release (safe to call twice); 503 if none. */
  take(req: Request): () => void {
    if (this.#max > 0 && this.#used >= this.#max) {
      req.body?.cancel().catch(() => {});
      throw new ApiError(
        "service_unavailable",
        `${this.#max} uploads are already in progress; retry after a few seconds`,
        { "retry-after": "5", connection: "close" },
      );
    }
    this.#used++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#used--;
    };
  }
}
