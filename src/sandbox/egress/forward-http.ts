/**
 * Plain HTTP through the gateway: an absolute-URL request is checked on its own (also the second
 * request of a keep-alive connection), sent to a checked address with the URL's host as its Host
 * header and without hop-by-hop headers, and its response streamed back. Both bodies go through
 * pipelines, so neither side can make the gateway buffer more than a stream's high-water mark.
 * Every byte on the origin's wire (heads, bodies, chunk framing, trailers) is counted as it passes.
 */
import { request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { Duplex, pipeline } from "node:stream";
import type { EgressConnection } from "./egress-connection.js";
import type { GatewayCore } from "./gateway-core.js";
import { endToEndHeaders } from "./hop-by-hop.js";
import { shown } from "./host-syntax.js";
import { parseAbsoluteUrl } from "./request-target.js";
import { answerBody, headerLinesBytes } from "./responses.js";

export async function handleRequest(
  core: GatewayCore,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const method = req.method ?? "GET";
  const target = parseAbsoluteUrl(req.url ?? "");
  if (!target.ok) {
    const asked = shown(req.headers.host ?? req.url ?? "");
    core.malformed(asked, method, target.reason);
    answer(req, res, 400, answerBody(asked, 0, target.reason));
    return;
  }
  const host = shown(target.host);
  const headers = endToEndHeaders(req.rawHeaders, ["host"]);
  // The request body reaches us de-chunked; say how the origin should frame it, since the client's
  // Transfer-Encoding was a hop-by-hop header.
  if (req.headers["transfer-encoding"] !== undefined) headers.push("Transfer-Encoding", "chunked");
  // One origin connection per request, never reused: say so, rather than leave Node to pick.
  const head = ["Host", target.hostHeader, ...headers, "Connection", "close"];
  // What the head sent to the origin will cost (Node may add Content-Length: 0): it must fit.
  const headBytes =
    Buffer.byteLength(`${method} ${target.path} HTTP/1.1\r\n`, "latin1") + headerLinesBytes(head) + 2;
  const admission = core.admit(target.host, target.port, method, headBytes);
  if (!admission.ok) {
    answer(req, res, admission.status, answerBody(host, target.port, admission.reason));
    return;
  }
  const { connection, entry } = admission;
  connection.onAbort(() => res.destroy());
  res.once("close", () => {
    if (!res.writableFinished) connection.abort("the client closed before the response was complete");
  });

  const reached = await core.reach(connection, entry);
  if (!reached.ok) {
    if (!connection.ended) {
      answer(req, res, reached.status, answerBody(host, target.port, reached.reason));
      connection.finish();
    }
    return;
  }
  const origin = reached.socket;
  connection.onAbort(() => origin.destroy());
  const outgoing = httpRequest({
    createConnection: () => countedWire(connection, origin),
    method,
    path: target.path,
    headers: head,
    setHost: false,
  });
  outgoing.on("response", (incoming) => relayResponse(connection, incoming, res));
  // Also after the request body is through (the pipeline below is done by then).
  outgoing.on("error", (error) => failed(connection, req, res, error));
  pipeline(req, outgoing, (error) => {
    if (error) failed(connection, req, res, error);
  });
}

function relayResponse(connection: EgressConnection, incoming: IncomingMessage, res: ServerResponse): void {
  const status = incoming.statusCode ?? 502;
  connection.answered(status);
  try {
    res.writeHead(status, incoming.statusMessage, endToEndHeaders(incoming.rawHeaders));
  } catch (error) {
    // Node refuses to send some things its parser accepted (e.g. control characters in the status text).
    connection.abort(`the origin's response could not be relayed: ${errorWords(error as Error)}`);
    return;
  }
  pipeline(incoming, res, (error) => {
    if (error) connection.abort(`the response was cut off: ${errorWords(error)}`);
    else connection.finish();
  });
}

/**
 * The origin socket as the HTTP client sees it: every byte written to it or read from it goes through
 * the connection's counters, so the budget pays for heads and framing, not only bodies, and a write
 * that would overspend it never reaches the origin.
 */
function countedWire(connection: EgressConnection, origin: Socket): Duplex {
  const up = connection.counter("up");
  const down = connection.counter("down");
  const done = (error: Error | null | undefined) => {
    if (error) origin.destroy();
  };
  pipeline(up, origin, done);
  pipeline(origin, down, done);
  return Duplex.from({ writable: up, readable: down });
}

function failed(connection: EgressConnection, req: IncomingMessage, res: ServerResponse, error: Error): void {
  if (connection.ended) return;
  if (res.headersSent) {
    connection.abort(`origin connection failed: ${errorWords(error)}`);
    return;
  }
  const reason = `origin connection failed: ${errorWords(error)}`;
  connection.note(reason);
  connection.answered(502);
  answer(req, res, 502, answerBody(connection.start.host, connection.start.port, reason));
  connection.finish();
}

/** The gateway's own answer to a plain-HTTP request. */
function answer(req: IncomingMessage, res: ServerResponse, status: number, body: string): void {
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  const headers: Record<string, string | number> = {
    "Content-Type": "text/plain; charset=utf-8",
    "Content-Length": Buffer.byteLength(body),
  };
  // A request body not read yet is not read at all: close instead of keeping the connection.
  if (!req.complete) headers["Connection"] = "close";
  res.writeHead(status, headers).end(body);
}

function errorWords(error: Error): string {
  return (error as NodeJS.ErrnoException).code ?? error.message;
}
