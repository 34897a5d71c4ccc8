/** Reading this process's memory map (`/proc/self/smaps`, Linux) in tests. */

/** The address of `buffer`'s first byte. */
export function addressOf(buffer: ArrayBuffer): bigint {
  return BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(buffer)));
}

/** The `VmFlags` of the mapping that holds `address` (e.g. `hg`: marked for huge pages). */
export function vmFlagsAt(address: bigint): string[] {
  let inside = false;
  for (const line of Deno.readTextFileSync("/proc/self/smaps").split("\n")) {
    const range = /^([0-9a-f]+)-([0-9a-f]+) /.exec(line);
    if (range) {
      inside = BigInt(`0x${range[1]}`) <= address && address < BigInt(`0x${range[2]}`);
    } else if (inside && line.startsWith("VmFlags:")) {
      return line.slice("VmFlags:".length).trim().split(/\s+/);
    }
  }
  return [];
}

/** Whether the middle of `buffer` (inside its whole 2 MiB pages) is marked for huge pages. */
export function markedForHugePages(buffer: ArrayBuffer): boolean {
  return vmFlagsAt(addressOf(buffer) + BigInt(buffer.byteLength >> 1)).includes("hg");
}
