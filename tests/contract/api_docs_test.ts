/**
 * docs/api.md's endpoint table and the OpenAPI document list the same operations. A row's first
 * cell names them as code spans: `METHOD path` (a path relative to /api/v1, or at the root when
 * the cell says "(root)"; `ID` stands for `{experiment_id}`, a query string is left out), a bare
 * `METHOD` sharing the next span's path, and `{upload_url}`, the storage's own URL, which is not
 * an operation of the service.
 */
import { assertEquals } from "../_assert.ts";
import { apiRoutes } from "../../src/routes/mod.ts";
import { buildDocument, OPERATIONS } from "../../src/openapi/mod.ts";

const API_MD = new URL("../../docs/api.md", import.meta.url);
const METHOD = /^(GET|HEAD|POST|PUT|PATCH|DELETE)$/;

/** The operations of the endpoint table under `## Endpoints`, as `METHOD /path`. */
export function endpointTable(markdown: string): string[] {
  const section = markdown.split(/^## /m).find((part) => part.startsWith("Endpoints\n"));
  if (section === undefined) throw new SyntaxError("Cannot find the Endpoints section");
  // The section's first table: from its first row to the first line that is not a row.
  const lines = section.split("\n");
  const start = lines.findIndex((line) => line.startsWith("| "));
  const end = lines.findIndex((line, i) => i > start && !line.startsWith("| "));
  const rows = lines.slice(start, end === -1 ? undefined : end).slice(2);
  const found: string[] = [];
  for (const row of rows) {
    const cell = row.split(" | ")[0];
    const root = cell.includes("(root)");
    let methods: string[] = [];
    for (const [, span] of cell.matchAll(/`([^`]+)`/g)) {
      if (METHOD.test(span)) {
        methods.push(span);
        continue;
      }
      const m = /^(GET|HEAD|POST|PUT|PATCH|DELETE) (\S+)$/.exec(span);
      if (!m) throw new SyntaxError(`Cannot read the endpoint ${JSON.stringify(span)}`);
      methods.push(m[1]);
      const path = m[2].split("?")[0];
      if (path !== "{upload_url}") {
        const full = (root ? path : `/api/v1${path}`).replaceAll("/ID/", "/{experiment_id}/");
        for (const method of methods) found.push(`${method} ${full}`);
      }
      methods = [];
    }
    if (methods.length > 0) throw new SyntaxError(`A method without a path in ${cell}`);
  }
  return found;
}

Deno.test("endpointTable reads methods, shared paths, root paths and ids", () => {
  const markdown = [
    "## Endpoints",
    "",
    "| method and path | auth |",
    "| --- | --- |",
    "| [`POST /datasets/upload/?experiment_id=ID`](#post) | key |",
    "| [`GET`, `PUT /datasets/ID/settings/`](#settings) | key |",
    "| [`PUT {upload_url}`](#put) | the URL |",
    "| `GET /`, `GET /ui/{file}` (root) | none |",
    "",
    "",
    "### A subsection",
    "| a | b |",
    "| --- | --- |",
    "| `GET /nor/this/` | |",
  ].join("\n");
  assertEquals(endpointTable(markdown), [
    "POST /api/v1/datasets/upload/",
    "GET /api/v1/datasets/{experiment_id}/settings/",
    "PUT /api/v1/datasets/{experiment_id}/settings/",
    "GET /",
    "GET /ui/{file}",
  ]);
});

Deno.test("docs/api.md's endpoint table lists every operation of the OpenAPI document, and no other", async () => {
  const listed = endpointTable(await Deno.readTextFile(API_MD)).sort();
  const document = buildDocument(apiRoutes.flat(), OPERATIONS) as {
    paths: Record<string, Record<string, unknown>>;
  };
  const documented = Object.entries(document.paths)
    .flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`))
    .sort();
  assertEquals(listed, documented);
});
