/**
 * An origin the egress tests reach through the gateway: an HTTP(S) server on host loopback that
 * records every request it saw, so a test can tell "the tool got through" from "the tool gave up".
 */
import { createHash } from "node:crypto";
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";

/** One request as the origin saw it. */
export interface SeenRequest {
  method: string;
  /** The request target: a path (origin-form) when it came through a proxy, as it should. */
  url: string;
  /** The Host header: the name the sandbox used, not the address it was mapped to. */
  host: string;
  /** The User-Agent header, to tell npm from pip from git from curl. */
  userAgent: string;
}

export type OriginHandler = (request: IncomingMessage, response: ServerResponse) => void;

export interface Origin extends AsyncDisposable {
  /** Port on 127.0.0.1. */
  readonly port: number;
  /** Every request so far, in arrival order. */
  readonly requests: readonly SeenRequest[];
  close(): Promise<void>;
}

/** Starts `handler` on `address` (default 127.0.0.1), port 0, over TLS when `tls` is given. */
export async function startOrigin(
  handler: OriginHandler,
  tls?: { key: string | Buffer; cert: string | Buffer },
  address = "127.0.0.1",
): Promise<Origin> {
  const requests: SeenRequest[] = [];
  const listener = (request: IncomingMessage, response: ServerResponse): void => {
    requests.push({
      method: request.method ?? "",
      url: request.url ?? "",
      host: request.headers.host ?? "",
      userAgent: request.headers["user-agent"] ?? "",
    });
    handler(request, response);
  };
  const server = tls ? createHttpsServer(tls, listener) : createHttpServer(listener);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, address, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const close = (): Promise<void> =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return { port, requests, close, [Symbol.asyncDispose]: close };
}

/** Sends `body` with `type`, or 404 when `body` is undefined. */
export function reply(response: ServerResponse, body: string | Buffer | undefined, type: string): void {
  if (body === undefined) {
    response.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
    return;
  }
  response.writeHead(200, { "content-type": type, "content-length": Buffer.byteLength(body) }).end(body);
}

/**
 * Sends `body` as a real registry does: with `cacheControl` and an ETag, and `304` with no body when
 * the request's If-None-Match names that ETag (a client revalidating what it cached).
 */
export function replyCacheable(
  request: IncomingMessage,
  response: ServerResponse,
  body: string | Buffer,
  type: string,
  cacheControl: string,
): void {
  const etag = `"${createHash("sha256").update(body).digest("hex").slice(0, 32)}"`;
  const headers = { "cache-control": cacheControl, etag };
  if (request.headers["if-none-match"] === etag) {
    response.writeHead(304, headers).end();
    return;
  }
  response
    .writeHead(200, { ...headers, "content-type": type, "content-length": Buffer.byteLength(body) })
    .end(body);
}
