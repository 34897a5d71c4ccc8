import { assert, assertEquals } from "../_assert.ts";
import { startTestServer } from "../_server.ts";
import { responseContract } from "./_contract.ts";
import { route } from "../../src/routes/deps.ts";

const contract = responseContract();
const API = "http://127.0.0.1/api/v1";

function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: {
      "content-type": "application/json; charset=utf-8",
      "x-request-id": "r1",
      ...headers,
    },
  });
}

const error = (code: string) => ({ error: { code, message: "m", request_id: "r1" } });
const listed = {
  datasets: [{
    experiment_id: "checkout",
    size_bytes: 124,
    size_mb: 124 / 1048576,
    updated_at: "2026-12-01T10:00:00.000Z",
    etag: "abc",
    analysis_status: "ready",
  }],
  next_cursor: null,
};

Deno.test("ResponseContract passes an answer that keeps to the document, and keeps its bytes", async () => {
  const { problems, response } = await contract.check("GET", `${API}/datasets/`, json(listed));
  assertEquals(problems, []);
  assertEquals(await response.json(), listed);
  assertEquals(response.headers.get("x-request-id"), "r1");
  const notFound = await contract.check("GET", `${API}/datasets/x/`, json(error("not_found"), 404));
  assertEquals(notFound.problems, []);
});

Deno.test("ResponseContract flags a status the operation does not declare", async () => {
  const { problems } = await contract.check("GET", `${API}/datasets/`, json(error("x"), 418));
  assertEquals(problems, [
    "GET /api/v1/datasets/ → 418: a status the document does not declare for this operation",
  ]);
});

Deno.test("ResponseContract flags an error code its status does not list there", async () => {
  const { problems } = await contract.check(
    "GET",
    `${API}/datasets/`,
    json(error("invalid_csv"), 400),
  );
  assertEquals(problems.length, 1, problems.join("\n"));
  assert(
    problems[0].includes("/error/code must be equal to one of the allowed values"),
    problems[0],
  );
});

Deno.test("ResponseContract flags a body, a content type and a header that break the document", async () => {
  const broken = { ...listed, datasets: [{ ...listed.datasets[0], size_bytes: "124" }] };
  const body = await contract.check("GET", `${API}/datasets/`, json(broken));
  assertEquals(body.problems, [
    "GET /api/v1/datasets/ → 200: /datasets/0/size_bytes must be integer",
  ]);
  const extra = { ...listed, more: 1 };
  const open = await contract.check("GET", `${API}/datasets/`, json(extra));
  assertEquals(open.problems, [
    "GET /api/v1/datasets/ → 200: (body) must NOT have additional properties",
  ]);
  const text = new Response("ok", {
    headers: { "content-type": "text/plain", "x-request-id": "r" },
  });
  const type = await contract.check("GET", `${API}/datasets/`, text);
  assertEquals(type.problems, [
    "GET /api/v1/datasets/ → 200: Content-Type text/plain is not one of application/json",
  ]);
  const noId = new Response(JSON.stringify(listed), {
    headers: { "content-type": "application/json" },
  });
  const header = await contract.check("GET", `${API}/datasets/`, noId);
  assertEquals(header.problems, ["GET /api/v1/datasets/ → 200: no X-Request-Id header"]);
  const file = new Response("a,b\n", {
    headers: { "content-type": "text/csv", "x-request-id": "r", etag: '"e"' },
  });
  const download = await contract.check("GET", `${API}/datasets/x/file/`, file);
  assertEquals(download.problems, [
    "GET /api/v1/datasets/x/file/ → 200: no Content-Disposition header",
  ]);
});

Deno.test("ResponseContract wants the 404 and 405 errors where no operation matches", async () => {
  const unknown = await contract.check("GET", `${API}/nothing/`, json(error("not_found"), 404));
  assertEquals(unknown.problems, []);
  const wrong = await contract.check("GET", `${API}/nothing/`, json({ ok: true }));
  assertEquals(wrong.problems, ["GET /api/v1/nothing/ → 200: no operation matches; expected 404"]);
  const method = await contract.check(
    "PATCH",
    `${API}/datasets/`,
    json(error("method_not_allowed"), 405),
  );
  assertEquals(method.problems, ["PATCH /api/v1/datasets/ → 405: no Allow header"]);
});

Deno.test("a test server's close fails when one of its answers broke the document", async () => {
  const server = await startTestServer({}, {
    routes: [[
      route("GET", "/api/v1/teapot/", "public", () => new Response("tea", { status: 418 })),
    ]],
  });
  assertEquals(await fetch(`${server.api}/teapot/`).then((r) => r.text()), "tea");
  let thrown: unknown;
  try {
    await server.close();
  } catch (e) {
    thrown = e;
  }
  assert(thrown instanceof Error, "close did not throw");
  assert(
    thrown.message.includes("GET /api/v1/teapot/ → 418: no operation matches; expected 404"),
    thrown.message,
  );
});
