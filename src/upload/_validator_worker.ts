/**
 * Worker side of `OffThreadValidator`: runs one `DatasetValidator` per upload id on batches
 * posted in order, answers the first error or the summary, and hands each batch's buffer back.
 */
/// <reference lib="deno.worker" />
import { DatasetValidator } from "../pipeline/mod.ts";
import { ApiError } from "../http/errors.ts";
import type { ValidatorReply, ValidatorRequest } from "./off_thread_validator.ts";

const validators = new Map<number, DatasetValidator | null>();

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
      return;
    case "chunk": {
      const validator = validators.get(m.id);
      if (validator) {
        try {
          validator.push(new Uint8Array(m.buffer, 0, m.length));
        } catch (error) {
          failure(m.id, error);
        }
      }
      reply({ id: m.id, type: "buffer", buffer: m.buffer }, [m.buffer]);
      return;
    }
    case "finish": {
      const validator = validators.get(m.id);
      validators.delete(m.id);
      if (!validator) return; // its error was already answered
      try {
        reply({ id: m.id, type: "summary", summary: validator.finish() });
      } catch (error) {
        failure(m.id, error);
        validators.delete(m.id);
      }
      return;
    }
    case "abort":
      validators.delete(m.id);
      return;
  }
};
