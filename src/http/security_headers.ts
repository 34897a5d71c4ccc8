/**
 * The headers every answer of the service carries, errors and 404s included:
 * `X-Content-Type-Options: nosniff` (a browser never runs a stored CSV or an error as a script or
 * a page), `Cache-Control: no-store` unless the answer sets its own (the UI's files revalidate
 * with `no-cache`), and, when the service serves TLS itself, `Strict-Transport-Security`.
 * Behind a reverse proxy that terminates TLS, HSTS is the proxy's to send.
 */

/** One year, the usual HSTS lifetime. */
export const HSTS = "max-age=31536000";

/** The headers to add to `headers`; `tls`: the service serves HTTPS itself. */
export function setSecurityHeaders(headers: Headers, tls: boolean): void {
  headers.set("x-content-type-options", "nosniff");
  if (!headers.has("cache-control")) headers.set("cache-control", "no-store");
  if (tls) headers.set("strict-transport-security", HSTS);
}

/** `response` with the security headers (a copy when its headers cannot be changed). */
export function withSecurityHeaders(response: Response, tls: boolean): Response {
  try {
    setSecurityHeaders(response.headers, tls);
    return response;
  } catch {
    const headers = new Headers(response.headers);
    setSecurityHeaders(headers, tls);
    return new Response(response.body, {
      status: response.status,
      statusText: response.statusText,
      headers,
    });
  }
}
