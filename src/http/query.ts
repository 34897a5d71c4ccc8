import { ApiError } from "./errors.ts";

/**
 * The value of query parameter `name`, or null when it is absent. A parameter given more than
 * once is refused (400 `invalid_json`): which of the values was meant cannot be told.
 */
export function queryParam(url: URL, name: string): string | null {
  const values = url.searchParams.getAll(name);
  if (values.length > 1) {
    throw new ApiError("invalid_json", `Give ${name} once in the query string`);
  }
  return values[0] ?? null;
}
