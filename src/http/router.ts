/**
 * A tiny router: patterns are paths with `:name` segments; a trailing slash is optional on both
 * sides. `match` answers the handler and decoded parameters, or the allowed methods for a 405.
 * Fixed paths are found in a map and patterns are compared segment by segment without
 * allocating, so a request costs one split of its path (the routes are matched on every request).
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
  /** Routes without parameters, by their segments joined with `/`. */
  #fixed = new Map<string, Route<H>[]>();

  add(method: string, pattern: string, handler: H): this {
    const route = { method, segments: split(pattern), handler };
    this.#routes.push(route);
    if (!route.segments.some((s) => s.startsWith(":") || s.startsWith("*"))) {
      const key = route.segments.join("/");
      this.#fixed.set(key, [...(this.#fixed.get(key) ?? []), route]);
    }
    return this;
  }

  /** A segment that fails to percent-decode never matches a parameter. */
  match(method: string, path: string): Match<H> {
    const parts = split(path);
    // A fixed path (`/datasets/upload/`) wins over a pattern (`/datasets/:id/`) for every method.
    const fixed = this.#fixed.get(parts.join("/"));
    const candidates = fixed ?? this.#routes;
    let allow: Set<string> | null = null;
    for (const route of candidates) {
      if (fixed === undefined && !literalsMatch(route.segments, parts)) continue;
      const params = fixed === undefined ? matchSegments(route.segments, parts) : {};
      if (!params) continue;
      if (route.method === method || (method === "HEAD" && route.method === "GET")) {
        return { kind: "found", handler: route.handler, params };
      }
      allow ??= new Set<string>();
      allow.add(route.method);
      if (route.method === "GET") allow.add("HEAD");
    }
    if (allow !== null) return { kind: "method_not_allowed", allow: [...allow].sort() };
    return { kind: "not_found" };
  }
}

/** The segment counts fit and every literal segment is equal (no allocation). */
function literalsMatch(pattern: string[], parts: string[]): boolean {
  const last = pattern[pattern.length - 1];
  const wildcard = last !== undefined && last.charCodeAt(0) === 42; // "*"
  if (wildcard ? parts.length < pattern.length : pattern.length !== parts.length) return false;
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i];
    const c = p.charCodeAt(0);
    if (c !== 58 && c !== 42 && p !== parts[i]) return false; // not ":" or "*": literal
  }
  return true;
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
