/** Byte values the pipeline stages compare against. */

export const NUL = 0x00;
export const TAB = 0x09;
export const LF = 0x0a;
export const CR = 0x0d;
export const SPACE = 0x20;
export const QUOTE = 0x22;
export const PLUS = 0x2b;
export const COMMA = 0x2c;
export const MINUS = 0x2d;
export const DOT = 0x2e;
export const ZERO = 0x30;
export const ONE = 0x31;
export const NINE = 0x39;
export const SEMICOLON = 0x3b;
export const PIPE = 0x7c;

/** Decodes bytes already checked to be UTF-8 (the header, error excerpts). */
export const utf8Decoder = new TextDecoder();

/**
 * A short excerpt of a cell for error messages. Cell contents reach the checks with a quoted
 * field's escaped quotes still doubled (or, where a chunk end split the pair, single), so `""`
 * is shown as `"`.
 */
export function excerpt(bytes: Uint8Array, max = 40): string {
  const text = utf8Decoder.decode(bytes).replaceAll('""', '"');
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
