/**
 * What kind of address an IP address is, for the webhook target rules: only `public` addresses
 * may be posted to unless private targets are allowed. Pure: no resolution, no I/O.
 *
 * @module
 */

/** The kinds of address a webhook may not be sent to by default, and `public`. */
export type AddressKind =
  | "public"
  | "loopback"
  | "private"
  | "link_local"
  | "multicast"
  | "unspecified"
  | "shared"
  | "this_network"
  | "broadcast"
  | "reserved";

/** How each kind reads in a message: "resolves to a private address". */
export const ADDRESS_KIND_WORDS: Readonly<Record<AddressKind, string>> = {
  public: "a public address",
  loopback: "a loopback address",
  private: "a private address",
  link_local: "a link-local address",
  multicast: "a multicast address",
  unspecified: "the unspecified address",
  shared: "a carrier-grade NAT address (100.64.0.0/10)",
  this_network: 'a "this network" address (0.0.0.0/8)',
  broadcast: "the broadcast address",
  reserved: "a reserved address",
};

/** The four bytes of a dotted-decimal IPv4 address (no leading zeros), or null. */
export function parseIpv4(text: string): number[] | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  const bytes: number[] = [];
  for (const part of parts) {
    if (!/^(?:0|[1-9]\d{0,2})$/.test(part) || Number(part) > 255) return null;
    bytes.push(Number(part));
  }
  return bytes;
}

/**
 * The eight 16-bit groups of an IPv6 address (`::` shorthand, a dotted IPv4 tail and a `%zone`
 * accepted; brackets not), or null.
 */
export function parseIpv6(text: string): number[] | null {
  const address = text.replace(/%[^%]*$/, "");
  if (!/^[0-9a-fA-F:.]+$/.test(address)) return null;
  const halves = address.split("::");
  if (halves.length > 2) return null;
  const groups = (half: string): number[] | null => {
    if (half === "") return [];
    const out: number[] = [];
    const parts = half.split(":");
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i];
      if (i === parts.length - 1 && part.includes(".")) {
        const v4 = parseIpv4(part);
        if (!v4) return null;
        out.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
      } else if (/^[0-9a-fA-F]{1,4}$/.test(part)) {
        out.push(parseInt(part, 16));
      } else {
        return null;
      }
    }
    return out;
  };
  const head = groups(halves[0]);
  const tail = halves.length === 2 ? groups(halves[1]) : [];
  if (!head || !tail) return null;
  if (halves.length === 1) return head.length === 8 ? head : null;
  const missing = 8 - head.length - tail.length;
  if (missing < 1) return null;
  return [...head, ...new Array(missing).fill(0), ...tail];
}

function ipv4Kind([a, b, c, d]: number[]): AddressKind {
  if (a === 0) return b === 0 && c === 0 && d === 0 ? "unspecified" : "this_network";
  if (a === 127) return "loopback";
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return "private";
  if (a === 100 && b >= 64 && b <= 127) return "shared";
  if (a === 169 && b === 254) return "link_local";
  // IETF protocol assignments (192.0.0.0/24) and benchmarking (198.18.0.0/15).
  if ((a === 192 && b === 0 && c === 0) || (a === 198 && (b === 18 || b === 19))) {
    return "reserved";
  }
  if (a >= 224 && a <= 239) return "multicast";
  if (a === 255 && b === 255 && c === 255 && d === 255) return "broadcast";
  if (a >= 240) return "reserved";
  return "public";
}

function embeddedIpv4(groups: number[], at: number): number[] {
  return [groups[at] >> 8, groups[at] & 255, groups[at + 1] >> 8, groups[at + 1] & 255];
}

function ipv6Kind(g: number[]): AddressKind {
  const zeroUpTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeroUpTo(8)) return "unspecified";
  if (zeroUpTo(7) && g[7] === 1) return "loopback";
  // IPv4-mapped (::ffff:0:0/96) and the deprecated IPv4-compatible form (::/96): the IPv4 rules.
  if (zeroUpTo(5) && g[5] === 0xffff) return ipv4Kind(embeddedIpv4(g, 6));
  if (zeroUpTo(6)) return ipv4Kind(embeddedIpv4(g, 6));
  // NAT64 (64:ff9b::/96) reaches the embedded IPv4 address; the local-use prefix is private.
  if (g[0] === 0x64 && g[1] === 0xff9b) {
    if (g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0) return ipv4Kind(embeddedIpv4(g, 6));
    if (g[2] === 1) return "private";
  }
  // 6to4 (2002::/16) relays to the IPv4 address in its next 32 bits.
  if (g[0] === 0x2002) return ipv4Kind(embeddedIpv4(g, 1));
  if ((g[0] & 0xfe00) === 0xfc00) return "private";
  if ((g[0] & 0xffc0) === 0xfe80) return "link_local";
  // Site-local (fec0::/10), deprecated but still routed inside some networks.
  if ((g[0] & 0xffc0) === 0xfec0) return "private";
  if ((g[0] & 0xff00) === 0xff00) return "multicast";
  return "public";
}

/**
 * The kind of `address`, an IPv4 (dotted decimal) or IPv6 address without brackets. Throws a
 * `TypeError` for anything else.
 */
export function addressKind(address: string): AddressKind {
  const v4 = parseIpv4(address);
  if (v4) return ipv4Kind(v4);
  const v6 = parseIpv6(address);
  if (v6) return ipv6Kind(v6);
  throw new TypeError(`Cannot classify ${JSON.stringify(address)}: not an IP address`);
}

/** Whether `text` is an IPv4 or IPv6 address (without brackets). */
export function isIpAddress(text: string): boolean {
  return parseIpv4(text) !== null || parseIpv6(text) !== null;
}
