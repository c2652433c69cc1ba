/**
 * What a private registry adds to a stub: TLS, and a 401 for any request whose Authorization header
 * the registry does not accept. Every Authorization header seen is kept, so a test can check which
 * credential reached the origin.
 */
import type { OriginHandler } from "./origin-server.js";

export interface PrivateOrigin {
  /** Serve over TLS with this certificate (the URL becomes https://). */
  tls?: { key: string; cert: string } | undefined;
  /** Accept a request only when this says its Authorization header ("" when none) is right. */
  accepts?: ((authorization: string) => boolean) | undefined;
  /** Where to keep every Authorization header seen, in order. */
  seen?: string[] | undefined;
  /** The loopback address to listen on (default 127.0.0.1; the CLI's tests use another, see egress-cli.test.ts). */
  address?: string | undefined;
}

export function gated(handler: OriginHandler, options: PrivateOrigin): OriginHandler {
  const { accepts, seen } = options;
  if (accepts === undefined && seen === undefined) return handler;
  return (request, response) => {
    const authorization = request.headers.authorization ?? "";
    seen?.push(authorization);
    if (accepts !== undefined && !accepts(authorization)) {
      request.resume();
      response.writeHead(401, { "www-authenticate": 'Basic realm="private"', "content-length": 0 }).end();
      return;
    }
    handler(request, response);
  };
}
