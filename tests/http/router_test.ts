import { assertEquals } from "../_assert.ts";
import { Router } from "../../src/http/router.ts";

function router(): Router<string> {
  return new Router<string>()
    .add("GET", "/api/v1/datasets/", "list")
    .add("POST", "/api/v1/datasets/upload/", "upload")
    .add("GET", "/api/v1/datasets/:experiment_id/", "show")
    .add("DELETE", "/api/v1/datasets/:experiment_id/", "remove")
    .add("GET", "/api/v1/datasets/:experiment_id/analysis/", "analysis")
    .add("PUT", "/storage/*key", "put");
}

Deno.test("Router finds fixed paths and patterns, with or without the trailing slash", () => {
  const r = router();
  assertEquals(r.match("GET", "/api/v1/datasets/"), { kind: "found", handler: "list", params: {} });
  assertEquals(r.match("GET", "/api/v1/datasets").kind, "found");
  assertEquals(r.match("GET", "/api/v1/datasets/e-1/"), {
    kind: "found",
    handler: "show",
    params: { experiment_id: "e-1" },
  });
  assertEquals(r.match("GET", "/api/v1/datasets/e%2D1/analysis").kind, "found");
  assertEquals(
    (r.match("GET", "/api/v1/datasets/e%2D1/analysis") as { params: unknown }).params,
    { experiment_id: "e-1" },
  );
  assertEquals(r.match("PUT", "/storage/org/o/experiments/e/latest.csv"), {
    kind: "found",
    handler: "put",
    params: { key: "org/o/experiments/e/latest.csv" },
  });
  assertEquals(r.match("HEAD", "/api/v1/datasets/x/"), {
    kind: "found",
    handler: "show",
    params: { experiment_id: "x" },
  });
});

Deno.test("Router lets a fixed path win over a pattern for every method (405, not a parameter)", () => {
  const r = router();
  assertEquals(r.match("POST", "/api/v1/datasets/upload/").kind, "found");
  // GET /upload/ is not `show` with experiment_id "upload": the fixed path answers 405.
  assertEquals(r.match("GET", "/api/v1/datasets/upload/"), {
    kind: "method_not_allowed",
    allow: ["POST"],
  });
  assertEquals(r.match("POST", "/api/v1/datasets/x/"), {
    kind: "method_not_allowed",
    allow: ["DELETE", "GET", "HEAD"],
  });
});

Deno.test("Router answers not_found for other paths and for parameters that fail to decode", () => {
  const r = router();
  for (const path of ["/", "/api/v1", "/api/v1/datasets/a/b/", "/api//v1/datasets/", "/storage"]) {
    assertEquals(r.match("GET", path), { kind: "not_found" }, path);
  }
  assertEquals(r.match("GET", "/api/v1/datasets/%E0%A4%A/"), { kind: "not_found" });
  assertEquals(r.match("PUT", "/storage/a/%E0%A4%A"), { kind: "not_found" });
});
