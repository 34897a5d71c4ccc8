/**
 * The upload's byte source as a byte stream, for the tests that read a stage the way a stream's
 * reader does (`for await`, `getReader`).
 */
import type { ByteSource } from "../../src/byte_source.ts";
import { type BodyLimitsOptions, limitSource } from "../../src/upload/limits.ts";

/** `source` as a byte stream: each read of the stream's reader reads the source into its view. */
export function byteStream(source: ByteSource): ReadableStream<Uint8Array> {
  return new ReadableStream({
    type: "bytes",
    autoAllocateChunkSize: 16 * 1024,
    async pull(controller: ReadableByteStreamController) {
      const request = controller.byobRequest!;
      try {
        const { bytes, done } = await source.read(request.view as Uint8Array);
        if (done) controller.close();
        request.respondWithNewView(bytes); // at the end, the buffer handed back empty
      } catch (error) {
        controller.error(error);
      }
    },
    cancel: (reason: unknown) => source.cancel(reason),
  });
}

/** `body` held to `options`' limits, as a byte stream. */
export function limitBody(
  body: ReadableStream<Uint8Array>,
  options: BodyLimitsOptions,
): ReadableStream<Uint8Array> {
  return byteStream(limitSource(body, options));
}
