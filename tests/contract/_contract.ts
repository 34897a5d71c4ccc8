/**
 * Checks the service's answers against its OpenAPI document (`src/openapi/`): the operation is
 * found with the route table's own router, then the status must be one the operation declares,
 * the content type one of that status's media types, every required header present and
 * well-formed, and a JSON body valid against its schema (ajv, JSON Schema 2020-12). An answer to
 * a path no route matches must be the 404 or 405 error. `tests/_server.ts` runs every response
 * of every test server through `ResponseContract.check`.
 *
 * @module
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import { Router } from "../../src/http/router.ts";
import { buildDocument, openapiPath, OPERATIONS } from "../../src/openapi/mod.ts";
import { apiRoutes } from "../../src/routes/mod.ts";

type Json = Record<string, unknown>;

interface MediaType {
  schema: Json;
}
interface ResponseSpec {
  headers?: Record<string, { required?: boolean; schema: Json }>;
  content?: Record<string, MediaType>;
}
interface OperationSpec {
  responses: Record<string, ResponseSpec>;
}

const DOCUMENT_ID = "urn:abn:openapi";

/** `schema` with its `#/components/schemas/…` references pointing into the document's schemas. */
function rebase(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(rebase);
  if (typeof schema !== "object" || schema === null) return schema;
  return Object.fromEntries(
    Object.entries(schema).map(([key, value]) => [
      key,
      key === "$ref" && typeof value === "string"
        ? value.replace("#/components/schemas/", `${DOCUMENT_ID}#/$defs/`)
        : rebase(value),
    ]),
  );
}

/** Validates responses against one OpenAPI document. */
export class ResponseContract {
  readonly document: Json;
  readonly #router = new Router<OperationSpec>();
  readonly #ajv = new Ajv2020({ allErrors: true, allowUnionTypes: true, strict: true });
  readonly #validators = new Map<Json, ValidateFunction>();

  constructor(document: Json = buildDocument(apiRoutes.flat(), OPERATIONS)) {
    this.document = document;
    const paths = document.paths as Record<string, Record<string, OperationSpec>>;
    for (const route of apiRoutes.flat()) {
      const operation = paths[openapiPath(route.path)]?.[route.method.toLowerCase()];
      if (operation) this.#router.add(route.method, route.path, operation);
    }
    this.#ajv.addFormat(
      "date-time",
      /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/,
    );
    this.#ajv.addFormat("date", /^\d{4}-\d{2}-\d{2}$/);
    this.#ajv.addFormat("uri", (value: string) => URL.canParse(value));
    this.#ajv.addFormat("binary", true);
    const components = document.components as { schemas: Json };
    this.#ajv.addSchema({ $id: DOCUMENT_ID, $defs: rebase(components.schemas) as Json });
  }

  #validator(schema: Json): ValidateFunction {
    let validate = this.#validators.get(schema);
    if (!validate) {
      validate = this.#ajv.compile(rebase(schema) as Json);
      this.#validators.set(schema, validate);
    }
    return validate;
  }

  /** Ajv's complaints about `value`, or [] when it fits `schema`. */
  schemaErrors(schema: Json, value: unknown): string[] {
    const validate = this.#validator(schema);
    if (validate(value)) return [];
    return (validate.errors ?? []).slice(0, 5).map((e) =>
      `${e.instancePath || "(body)"} ${e.message ?? e.keyword}`
    );
  }

  /**
   * What is wrong with `response` as the answer to `method url` ([] when it keeps to the
   * document), and the response to send on: a JSON body is read whole and put back as the same
   * bytes (a clone would turn it into a chunked stream on the wire); other bodies are left alone.
   */
  async check(
    method: string,
    url: string,
    response: Response,
  ): Promise<{ problems: string[]; response: Response }> {
    const pathname = new URL(url).pathname;
    const label = `${method} ${pathname} → ${response.status}`;
    const match = this.#router.match(method, pathname);
    const problems: string[] = [];
    let spec: ResponseSpec | undefined;
    if (match.kind === "found") {
      spec = match.handler.responses[String(response.status)];
      if (!spec) {
        problems.push(`${label}: a status the document does not declare for this operation`);
        return { problems, response };
      }
    } else {
      const status = match.kind === "not_found" ? 404 : 405;
      if (response.status !== status) {
        problems.push(`${label}: no operation matches; expected ${status}`);
        return { problems, response };
      }
      if (match.kind === "method_not_allowed" && !response.headers.has("allow")) {
        problems.push(`${label}: no Allow header`);
      }
      spec = UNMATCHED;
    }
    problems.push(...this.#checkHeaders(label, spec, response.headers));
    const type = response.headers.get("content-type")?.split(";")[0].trim().toLowerCase() ?? null;
    const content = spec.content;
    if (content === undefined) {
      if (response.body !== null && type !== null && method !== "HEAD") {
        problems.push(`${label}: a ${type} body where the document declares none`);
      }
      return { problems, response };
    }
    if (type === null || !Object.hasOwn(content, type)) {
      problems.push(
        `${label}: Content-Type ${type} is not one of ${Object.keys(content).join(", ")}`,
      );
      return { problems, response };
    }
    if (type !== "application/json" || method === "HEAD" || response.body === null) {
      return { problems, response };
    }
    const bytes = new Uint8Array(await response.arrayBuffer());
    const rebuilt = new Response(bytes, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
    const text = new TextDecoder().decode(bytes);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      problems.push(`${label}: the body is not JSON: ${text.slice(0, 200)}`);
      return { problems, response: rebuilt };
    }
    for (const error of this.schemaErrors(content[type].schema, body)) {
      problems.push(`${label}: ${error}`);
    }
    return { problems, response: rebuilt };
  }

  #checkHeaders(label: string, spec: ResponseSpec, headers: Headers): string[] {
    const problems: string[] = [];
    for (const [name, header] of Object.entries(spec.headers ?? {})) {
      const value = headers.get(name);
      if (value === null) {
        if (header.required) problems.push(`${label}: no ${name} header`);
        continue;
      }
      for (const error of this.schemaErrors(header.schema, value)) {
        problems.push(`${label}: header ${name} ${JSON.stringify(value)}: ${error}`);
      }
    }
    return problems;
  }
}

/** What an answer to a path no operation covers must be: the error JSON with a request id. */
const UNMATCHED: ResponseSpec = {
  headers: { "X-Request-Id": { required: true, schema: { type: "string" } } },
  content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
};

let shared: ResponseContract | undefined;

/** The contract of this checkout's document (built once per test process). */
export function responseContract(): ResponseContract {
  shared ??= new ResponseContract();
  return shared;
}
