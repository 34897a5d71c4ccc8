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

Deno.test({
  name:
    "hugeBuffer: a table of 8 MiB gets a reservation marked for huge pages where they may be asked for, else largeBuffer's",
  ignore: !linuxWithLibc,
  async fn() {
    for (const [hugePages, reserved, marked] of [["on", 32, true], ["off", 8, false]] as const) {
      await runFresh(
        `
        import assert from "node:assert/strict";
        import { hugeBuffer } from url("src/buffers.ts");
        import { markedForHugePages } from url("tests/_smaps.ts");
        const buffer = hugeBuffer(8 * 1024 * 1024);
        assert.equal(buffer.byteLength, ${reserved} * 1024 * 1024);
        assert.equal(markedForHugePages(buffer), ${marked});
      `,
        { GLIBC_TUNABLES: "glibc.malloc.mmap_threshold=8388608", ABN_HUGE_PAGES: hugePages },
      );
    }
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

Deno.test("largeBuffer reserves glibc's fixed threshold (else 32 MiB), but not under a huge page where glibc asks for huge pages", async () => {
  const MiB = 1024 * 1024;
  const sizes = [1000, 256 * 1024, MiB + 7, 2 * MiB, 8 * MiB + 1, 40 * MiB];
  // What each size gets: with glibc's moving threshold, with it fixed at 8 MiB, with huge pages.
  const moving = [1000, 32 * MiB, 32 * MiB, 32 * MiB, 32 * MiB, 40 * MiB];
  const fixed = [1000, 8 * MiB, 8 * MiB, 8 * MiB, 8 * MiB + 1, 40 * MiB];
  const fromHeap = [1000, 256 * 1024, MiB + 7, 8 * MiB, 8 * MiB + 1, 40 * MiB];
  const linux = Deno.build.os === "linux";
  const cases: [Record<string, string>, boolean, number[]][] = [
    [{}, false, moving],
    [{ GLIBC_TUNABLES: `glibc.malloc.mmap_threshold=${8 * MiB}` }, false, linux ? fixed : moving],
    [{ MALLOC_MMAP_THRESHOLD_: `${8 * MiB}` }, false, linux ? fixed : moving],
    // Above what glibc takes as a fixed threshold: its moving one, as without.
    [{ GLIBC_TUNABLES: `glibc.malloc.mmap_threshold=${64 * MiB}` }, false, moving],
    [{ GLIBC_TUNABLES: "glibc.malloc.hugetlb=0" }, false, moving],
    [
      { GLIBC_TUNABLES: `glibc.malloc.mmap_threshold=${8 * MiB}:glibc.malloc.hugetlb=1` },
      linux,
      linux ? fromHeap : moving,
    ],
    [
      { GLIBC_TUNABLES: "glibc.malloc.hugetlb=2" },
      linux,
      linux ? [1000, 256 * 1024, MiB + 7, 32 * MiB, 32 * MiB, 40 * MiB] : moving,
    ],
  ];
  for (const [env, on, expected] of cases) {
    await runFresh(
      `
      import assert from "node:assert/strict";
      import { glibcHugePages, largeBuffer } from url("src/buffers.ts");
      assert.equal(glibcHugePages(), ${on}, ${JSON.stringify(env)});
      const sizes = ${JSON.stringify(sizes)}.map((n) => largeBuffer(n).byteLength);
      assert.deepEqual(sizes, ${JSON.stringify(expected)}, ${JSON.stringify(env)});
    `,
      // Both set here, so that the test's own environment does not count.
      { GLIBC_TUNABLES: "", MALLOC_MMAP_THRESHOLD_: "", ...env },
    );
  }
});
