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

/**
 * Runs `source` (a module's statements; `url(path)` gives a module of this checkout by its path
 * from the checkout's root) in a fresh process with every permission, and fails with its output
 * when it exits non-zero. Where a buffer lands, and so the flags of its mapping, depends on what
 * the process allocated and freed before (the C library places and reuses memory by its history):
 * checks of a mapping's flags run where nothing ran before them. `env` is added to this process's
 * environment for it.
 */
export async function runFresh(source: string, env: Record<string, string> = {}): Promise<void> {
  const root = new URL("../", import.meta.url);
  const url = (path: string) => JSON.stringify(new URL(path, root).href);
  const script = await Deno.makeTempFile({ suffix: ".ts" });
  try {
    await Deno.writeTextFile(script, source.replaceAll(/url\("([^"]+)"\)/g, (_, p) => url(p)));
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", script],
      env,
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (out.code !== 0) {
      const decoder = new TextDecoder();
      throw new Error(
        `The fresh process failed (${out.code}):\n${decoder.decode(out.stdout)}` +
          decoder.decode(out.stderr),
      );
    }
  } finally {
    await Deno.remove(script);
  }
}
