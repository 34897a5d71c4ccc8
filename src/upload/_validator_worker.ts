/**
 * Worker side of `OffThreadValidator`: runs one `DatasetValidator` and one SHA-256 per upload id
 * on batches posted in order, answers the first error or the summary with the hash, and hands
 * each batch's buffer back.
 */
/// <reference lib="deno.worker" />
import { createHash, type Hash } from "node:crypto";
import { DatasetValidator } from "../pipeline/mod.ts";
import { ApiError } from "../http/errors.ts";
import type { ValidatorReply, ValidatorRequest } from "./off_thread_validator.ts";

const validators = new Map<number, DatasetValidator | null>();
const hashes = new Map<number, Hash>();

function reply(message: ValidatorReply, transfer: Transferable[] = []): void {
  self.postMessage(message, transfer);
}

function failure(id: number, error: unknown): void {
  validators.set(id, null);
  if (error instanceof ApiError) {
    reply({ id, type: "error", code: error.code, message: error.message });
  } else {
    reply({ id, type: "error", code: "internal_error", message: String(error) });
  }
}

self.onmessage = (event: MessageEvent<ValidatorRequest>) => {
  const m = event.data;
  switch (m.type) {
    case "start":
      validators.set(m.id, new DatasetValidator());
      hashes.set(m.id, createHash("sha256"));
      return;
    case "chunk": {
      const validator = validators.get(m.id);
      if (validator) {
        const bytes = new Uint8Array(m.buffer, 0, m.length);
        try {
          validator.push(bytes);
          hashes.get(m.id)?.update(bytes);
        } catch (error) {
          failure(m.id, error);
        }
      }
      reply({ id: m.id, type: "buffer", buffer: m.buffer }, [m.buffer]);
      return;
    }
    case "finish": {
      const validator = validators.get(m.id);
      const hash = hashes.get(m.id);
      validators.delete(m.id);
      hashes.delete(m.id);
      if (!validator || !hash) return; // its error was already answered
      try {
        const summary = validator.finish();
        reply({ id: m.id, type: "summary", summary, sha256: hash.digest("hex") });
      } catch (error) {
        failure(m.id, error);
        validators.delete(m.id);
      }
      return;
    }
    case "abort":
      validators.delete(m.id);
      hashes.delete(m.id);
      return;
  }
};
