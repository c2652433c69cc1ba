/**
 * An origin the egress tests reach through the gateway: an HTTP(S) server on host loopback that
 * records every request it saw, so a test can tell "the tool got through" from "the tool gave up".
 */
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

/** Starts `handler` on 127.0.0.1:0, over TLS when `tls` is given. */
export async function startOrigin(
  handler: OriginHandler,
  tls?: { key: string | Buffer; cert: string | Buffer },
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
    server.listen(0, "127.0.0.1", () => resolve());
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
