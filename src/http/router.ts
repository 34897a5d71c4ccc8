/**
 * A tiny router: patterns are paths with `:name` segments; a trailing slash is optional on both
 * sides. `match` answers the handler and decoded parameters, or the allowed methods for a 405.
 */

export type Params = Record<string, string>;

interface Route<H> {
  method: string;
  segments: string[];
  handler: H;
}

export type Match<H> =
  | { kind: "found"; handler: H; params: Params }
  | { kind: "method_not_allowed"; allow: string[] }
  | { kind: "not_found" };

function split(path: string): string[] {
  return path.split("/").filter((part, i, all) =>
    !(part === "" && (i === 0 || i === all.length - 1))
  );
}

export class Router<H> {
  #routes: Route<H>[] = [];
  #fixed: Route<H>[] = [];

  add(method: string, pattern: string, handler: H): this {
    const route = { method, segments: split(pattern), handler };
    this.#routes.push(route);
    if (!route.segments.some((s) => s.startsWith(":") || s.startsWith("*"))) {
      this.#fixed.push(route);
    }
    return this;
  }

  /** A segment that fails to percent-decode never matches a parameter. */
  match(method: string, path: string): Match<H> {
    const parts = split(path);
    const allow = new Set<string>();
    // A fixed path (`/datasets/upload/`) wins over a pattern (`/datasets/:id/`) for every method.
    const fixed = this.#fixed.filter((r) => matchSegments(r.segments, parts) !== null);
    for (const route of fixed.length > 0 ? fixed : this.#routes) {
      const params = matchSegments(route.segments, parts);
      if (!params) continue;
      if (route.method === method || (method === "HEAD" && route.method === "GET")) {
        return { kind: "found", handler: route.handler, params };
      }
      allow.add(route.method);
      if (route.method === "GET") allow.add("HEAD");
    }
    if (allow.size > 0) return { kind: "method_not_allowed", allow: [...allow].sort() };
    return { kind: "not_found" };
  }
}

function matchSegments(pattern: string[], parts: string[]): Params | null {
  const last = pattern[pattern.length - 1];
  const rest = last?.startsWith("*") ? last.slice(1) : null;
  if (rest === null ? pattern.length !== parts.length : parts.length < pattern.length) return null;
  const params: Params = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i];
    if (rest !== null && i === pattern.length - 1) {
      try {
        params[rest] = parts.slice(i).map(decodeURIComponent).join("/");
      } catch {
        return null;
      }
      return params;
    }
    if (p.startsWith(":")) {
      try {
        params[p.slice(1)] = decodeURIComponent(parts[i]);
      } catch {
        return null;
      }
    } else if (p !== parts[i]) {
      return null;
    }
  }
  return params;
}
