/**
 * Plain HTTP through the gateway: an absolute-URL request is checked on its own (also the second
 * request of a keep-alive connection), sent to a checked address with the URL's host as its Host
 * header and without hop-by-hop headers, and its response streamed back. Both bodies go through
 * pipelines, so neither side can make the gateway buffer more than a stream's high-water mark.
 * Every byte on the origin's wire (heads, bodies, chunk framing, trailers) is counted as it passes.
 */
import {
  type ClientRequest,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import type { Socket } from "node:net";
import { Duplex, pipeline, type Transform } from "node:stream";
import { connect as tlsConnect } from "node:tls";
import type { EgressConnection } from "./egress-connection.js";
import type { GatewayCore } from "./gateway-core.js";
import { endToEndHeaders } from "./http/hop-by-hop.js";
import { parseAbsoluteUrl } from "./http/request-target.js";
import { answerBody, headerLinesBytes } from "./http/responses.js";
import { hostSyntax, shown } from "./policy/host-syntax.js";
import { maskedResponse } from "./secrets/masked-response.js";
import { outgoingRequest } from "./secrets/outgoing-request.js";
import { type SecretBook, SecretLeak } from "./secrets/secret-book.js";

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
  await forward(core, req, res, { ...target, tls: false });
}

/** Where a request goes: from its absolute URL, or (TLS ended at the gateway) from its CONNECT. */
export interface ForwardTarget {
  host: string;
  port: number;
  /** Path and query, as sent on the request line. */
  path: string;
  /**
   * Path and query as the client wrote them, when `path` is a parser's reading of them (a plain-HTTP
   * absolute URL): a host with request rules is judged on, and sent, exactly this.
   */
  written?: string;
  hostHeader: string;
  /** Speak TLS to the origin (a terminated CONNECT). */
  tls: boolean;
}

/**
 * Decides one request on what it carries (the run's secrets), admits it, and forwards it to a
 * checked address, the response streamed back (with any secret's value taken back out of it).
 */
export async function forward(
  core: GatewayCore,
  req: IncomingMessage,
  res: ServerResponse,
  target: ForwardTarget,
): Promise<void> {
  const method = req.method ?? "GET";
  const host = shown(target.host);
  let headers = endToEndHeaders(req.rawHeaders, ["host"]);
  let path = core.rules?.governs(target.host, target.port) ? (target.written ?? target.path) : target.path;
  let carried: string[] = [];
  let bodyStreams: Transform[] = [];
  let chunked = req.headers["transfer-encoding"] !== undefined;
  const refuse = (status: 400 | 403, reason: string, secret?: string): void => {
    if (status === 400) core.malformed(host, method, reason);
    else core.refuseContent(host, target.port, method, reason, secret);
    answer(req, res, status, answerBody(host, target.port, reason));
  };
  // Node took the chunked framing off; another transfer coding would reach the origin unannounced.
  if (chunked && !/^\s*chunked\s*$/i.test(req.headers["transfer-encoding"] ?? "")) {
    refuse(400, "a request body with a Transfer-Encoding other than chunked");
    return;
  }
  const ruled = core.rules?.check(target.host, target.port, method, path);
  if (ruled !== undefined && !ruled.ok) {
    refuse(403, ruled.reason);
    return;
  }
  const secrets = core.secrets;
  if (secrets !== undefined) {
    const hasBody = chunked || (req.headers["content-length"] ?? "0") !== "0";
    const outgoing = outgoingRequest(secrets, target.host, target.port, path, headers, hasBody);
    if (!outgoing.ok) {
      refuse(403, outgoing.reason, outgoing.secret);
      return;
    }
    ({ path, rawHeaders: headers, carried, body: bodyStreams } = outgoing);
    chunked ||= outgoing.rechunk;
  }
  // The request body reaches us de-chunked; say how the origin should frame it, since the client's
  // Transfer-Encoding was a hop-by-hop header.
  if (chunked) headers.push("Transfer-Encoding", "chunked");
  // One origin connection per request, never reused: say so, rather than leave Node to pick.
  const head = ["Host", target.hostHeader, ...headers, "Connection", "close"];
  // What the head sent to the origin will cost (Node may add Content-Length: 0): it must fit.
  const headBytes =
    Buffer.byteLength(`${method} ${path} HTTP/1.1\r\n`, "latin1") + headerLinesBytes(head) + 2;
  const admission = core.admit(target.host, target.port, method, headBytes);
  if (!admission.ok) {
    answer(req, res, admission.status, answerBody(host, target.port, admission.reason));
    return;
  }
  const { connection } = admission;
  connection.carried(carried);
  connection.onAbort(() => res.destroy());
  res.once("close", () => {
    if (!res.writableFinished) connection.abort("the client closed before the response was complete");
  });

  const reached = await core.reach(connection);
  if (!reached.ok) {
    if (!connection.ended) {
      answer(req, res, reached.status, answerBody(host, target.port, reached.reason));
      connection.finish();
    }
    return;
  }
  const origin = reached.socket;
  connection.onAbort(() => origin.destroy());
  const wire = () => countedWire(connection, origin);
  const masked = secrets?.ownSecrets(target.host, target.port) ?? [];
  const outgoing = httpRequest({
    createConnection: target.tls ? () => originTls(core, target.host, wire()) : wire,
    method,
    path,
    headers: head,
    setHost: false,
  });
  outgoing.on("response", (incoming) =>
    relayResponse(
      connection,
      incoming,
      res,
      method,
      masked.length > 0 ? { book: secrets, masked } : undefined,
    ),
  );
  // Also after the request body is through (the pipeline below is done by then).
  outgoing.on("error", (error) => failed(connection, req, res, error));
  const done = (error: Error | null | undefined) => {
    if (error instanceof SecretLeak) leaked(connection, req, res, outgoing, error);
    else if (error) failed(connection, req, res, error);
  };
  if (bodyStreams.length === 0) pipeline(req, outgoing, done);
  else pipeline([req, ...bodyStreams, outgoing], done);
}

/** TLS to a terminated host's origin, verified against the host's trust for the name the CONNECT gave. */
function originTls(core: GatewayCore, host: string, wire: Duplex): Socket {
  const syntax = hostSyntax(host);
  return tlsConnect({
    socket: wire,
    ...(syntax.kind === "name"
      ? { servername: syntax.name }
      : { host: syntax.kind === "ip" ? syntax.ip.address : host }),
    ...(core.upstreamCa === undefined ? {} : { ca: [...core.upstreamCa] }),
    ALPNProtocols: ["http/1.1"],
  });
}

/** A request body that carried a value or placeholder to the wrong host: cut off, recorded as refused, told. */
function leaked(
  connection: EgressConnection,
  req: IncomingMessage,
  res: ServerResponse,
  outgoing: ClientRequest,
  error: SecretLeak,
): void {
  if (connection.ended) return;
  outgoing.destroy();
  connection.refused(error.message);
  connection.carried([error.secret]);
  const { host, port, tag } = connection.start;
  tag?.denied.push({ host, port, reason: error.message });
  connection.answered(403);
  answer(req, res, 403, answerBody(host, port, error.message));
  connection.finish();
}

function relayResponse(
  connection: EgressConnection,
  incoming: IncomingMessage,
  res: ServerResponse,
  method: string,
  mask: { book: SecretBook | undefined; masked: string[] } | undefined,
): void {
  const status = incoming.statusCode ?? 502;
  connection.answered(status);
  let headers = endToEndHeaders(incoming.rawHeaders);
  let statusMessage = incoming.statusMessage;
  const body: Transform[] = [];
  if (mask?.book !== undefined) {
    const unmasked = maskedResponse(mask.book, mask.masked, headers, incoming.rawHeaders, method, status);
    if (!unmasked.ok) {
      connection.abort(unmasked.reason);
      return;
    }
    headers = unmasked.headers;
    body.push(...unmasked.body);
    statusMessage = mask.book.maskText(statusMessage ?? "", mask.masked);
  }
  try {
    res.writeHead(status, statusMessage, headers);
  } catch (error) {
    // Node refuses to send some things its parser accepted (e.g. control characters in the status text).
    connection.abort(`the origin's response could not be relayed: ${errorWords(error as Error)}`);
    return;
  }
  const done = (error: Error | null | undefined) => {
    if (error) connection.abort(`the response was cut off: ${errorWords(error)}`);
    else connection.finish();
  };
  if (body.length === 0) pipeline(incoming, res, done);
  else pipeline([incoming, ...body, res], done);
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
