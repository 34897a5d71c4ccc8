import { assertEquals, assertThrows } from "../_assert.ts";
import { queryParam } from "../../src/http/query.ts";
import { ApiError } from "../../src/http/errors.ts";

Deno.test("queryParam answers a parameter's one value, an empty one, or null when absent", () => {
  const url = new URL("http://x/p?limit=5&cursor=&other=1");
  assertEquals(queryParam(url, "limit"), "5");
  assertEquals(queryParam(url, "cursor"), "");
  assertEquals(queryParam(url, "format"), null);
});

Deno.test("queryParam refuses a parameter given twice with 400 invalid_json", () => {
  const error = assertThrows(
    () => queryParam(new URL("http://x/p?format=csv&format=json"), "format"),
    ApiError,
    "Give format once in the query string",
  );
  assertEquals([error.code, error.status], ["invalid_json", 400]);
});
