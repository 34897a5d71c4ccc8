import { assertEquals } from "./_assert.ts";
import { adviseHugePages, canAdviseHugePages, HUGE_PAGE_MIN_BYTES } from "../src/buffers.ts";
import { runFresh } from "./_smaps.ts";

/** Linux, with the C library where the service looks for it (and this process may load it). */
const linuxWithLibc = canAdviseHugePages();

Deno.test({
  name: "adviseHugePages: a large buffer's mapping is marked for huge pages, its bytes unchanged",
  ignore: !linuxWithLibc,
  async fn() {
    await runFresh(`
      import assert from "node:assert/strict";
      import { adviseHugePages, HUGE_PAGE_MIN_BYTES } from url("src/buffers.ts");
      import { markedForHugePages } from url("tests/_smaps.ts");
      const buffer = new ArrayBuffer(HUGE_PAGE_MIN_BYTES);
      const bytes = new Uint8Array(buffer);
      for (let i = 0; i < bytes.length; i += 4093) bytes[i] = i % 251;
      assert.ok(!markedForHugePages(buffer), "not marked before");
      assert.equal(adviseHugePages(buffer), true);
      assert.ok(markedForHugePages(buffer), "marked after");
      for (let i = 0; i < bytes.length; i += 4093) assert.equal(bytes[i], i % 251);
    `);
  },
});

Deno.test("adviseHugePages: buffers under HUGE_PAGE_MIN_BYTES are left alone", () => {
  assertEquals(adviseHugePages(new ArrayBuffer(HUGE_PAGE_MIN_BYTES - 1)), false);
  assertEquals(adviseHugePages(new ArrayBuffer(0)), false);
});

Deno.test({
  name:
    "adviseHugePages: without the permission to load the C library, or turned off, it answers false",
  ignore: !linuxWithLibc,
  async fn() {
    const script = await Deno.makeTempFile({ suffix: ".ts" });
    try {
      const module = new URL("../src/buffers.ts", import.meta.url).href;
      await Deno.writeTextFile(
        script,
        `import { adviseHugePages } from ${JSON.stringify(module)};\n` +
          `console.log(adviseHugePages(new ArrayBuffer(32 * 1024 * 1024)));\n`,
      );
      const runs: [string[], Record<string, string>][] = [
        [["--allow-read"], {}],
        [["--allow-read", "--allow-ffi=/nowhere/libc.so.6"], {}],
        [["-A"], { ABN_HUGE_PAGES: "off" }], // allowed, but turned off
      ];
      for (const [flags, env] of runs) {
        const out = await new Deno.Command(Deno.execPath(), {
          args: ["run", "--no-prompt", ...flags, script],
          env,
          stdout: "piped",
          stderr: "piped",
        }).output();
        const stderr = new TextDecoder().decode(out.stderr);
        assertEquals(out.code, 0, stderr);
        assertEquals(new TextDecoder().decode(out.stdout).trim(), "false", flags.join(" "));
      }
      // The same script, allowed: true (so the runs above say something).
      const allowed = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", script],
        env: { ABN_HUGE_PAGES: "on" },
      }).output();
      assertEquals(new TextDecoder().decode(allowed.stdout).trim(), "true");
    } finally {
      await Deno.remove(script);
    }
  },
});

Deno.test("largeBuffer reserves MAPPED_BYTES, but not under a huge page where glibc asks for huge pages", async () => {
  const MiB = 1024 * 1024;
  const sizes = [1000, 256 * 1024, MiB + 7, 2 * MiB, 40 * MiB];
  const reserved = [1000, 32 * MiB, 32 * MiB, 32 * MiB, 40 * MiB];
  const fromHeap = [1000, 256 * 1024, MiB + 7, 32 * MiB, 40 * MiB];
  const linux = Deno.build.os === "linux";
  const cases: [string, boolean][] = [
    ["", false],
    [`glibc.malloc.mmap_threshold=${8 * MiB}`, false],
    ["glibc.malloc.hugetlb=0", false],
    [`glibc.malloc.mmap_threshold=${8 * MiB}:glibc.malloc.hugetlb=1`, linux],
    ["glibc.malloc.hugetlb=2", linux],
  ];
  for (const [tunables, on] of cases) {
    await runFresh(
      `
      import assert from "node:assert/strict";
      import { glibcHugePages, largeBuffer } from url("src/buffers.ts");
      assert.equal(glibcHugePages(), ${on}, ${JSON.stringify(tunables)});
      const sizes = ${JSON.stringify(sizes)}.map((n) => largeBuffer(n).byteLength);
      assert.deepEqual(sizes, ${JSON.stringify(on ? fromHeap : reserved)}, ${
        JSON.stringify(tunables)
      });
    `,
      { GLIBC_TUNABLES: tunables },
    );
  }
});
