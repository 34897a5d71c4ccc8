/** Byte values the CSV rules and both readers compare against, and the UTF-8 byte order mark. */

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

/** Bytes of the UTF-8 byte order mark `EF BB BF`. */
export const BOM_LENGTH = 3;

/** True when `buf[at..]` starts with the UTF-8 byte order mark. */
export function startsWithBom(buf: Uint8Array, at = 0): boolean {
  return buf[at] === 0xef && buf[at + 1] === 0xbb && buf[at + 2] === 0xbf;
}
