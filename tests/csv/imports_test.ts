import assert from "node:assert/strict";

const CSV_DIR = new URL("../../src/csv/", import.meta.url);

/** The specifiers of every `import`/`export … from` (type-only ones too) in `source`. */
function specifiers(source: string): string[] {
  return [...source.matchAll(/\b(?:import|export)\b[^;]*?\bfrom\s*"([^"]+)"/gs)].map((m) => m[1]);
}

Deno.test("the CSV rules import nothing from the rest of the service", async () => {
  const files: string[] = [];
  for await (const entry of Deno.readDir(CSV_DIR)) {
    if (entry.isFile && entry.name.endsWith(".ts")) files.push(entry.name);
  }
  assert.ok(files.length >= 5, `${files.length} files`);
  for (const name of files) {
    const source = await Deno.readTextFile(new URL(name, CSV_DIR));
    for (const specifier of specifiers(source)) {
      assert.match(specifier, /^\.\/[a-z_]+\.ts$/, `${name} imports ${specifier}`);
    }
  }
});

Deno.test("specifiers finds value, type-only and re-exported imports", () => {
  assert.deepEqual(
    specifiers(
      'import { a } from "./a.ts";\nimport type {\n  B,\n} from "../b.ts";\nexport * from "./c.ts";',
    ),
    ["./a.ts", "../b.ts", "./c.ts"],
  );
});
