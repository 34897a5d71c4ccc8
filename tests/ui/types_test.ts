import assert from "node:assert/strict";

Deno.test("the browser modules type-check as JavaScript against the DOM library", async () => {
  const dir = await Deno.makeTempDir({ prefix: "abn-ui-check-" });
  try {
    const config = `${dir}/deno.json`;
    await Deno.writeTextFile(
      config,
      JSON.stringify({
        compilerOptions: {
          checkJs: true,
          strict: true,
          lib: ["dom", "dom.iterable", "dom.asynciterable", "esnext"],
        },
      }),
    );
    const uiDir = new URL("../../src/ui/", import.meta.url).pathname;
    const modules = [...Deno.readDirSync(uiDir)].filter((e) => e.name.endsWith(".js"))
      .map((e) => `${uiDir}${e.name}`);
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["check", "--quiet", "--config", config, ...modules],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
